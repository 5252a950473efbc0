"""A listener that waits out a shortage of file descriptors or memory instead of failing.

When the process runs out of file descriptors (``EMFILE``: its ``ulimit -n``; ``ENFILE``: the
system's) or of kernel memory (``ENOMEM``, ``ENOBUFS``), ``accept`` fails while the connection
stays in the listener's backlog. trio's ``serve_listeners`` backs off and tries again, but logs
a traceback of ten lines for every try, ten a second, for as long as the shortage lasts: a
stderr flooded with tracebacks that say neither what ran short nor what to do. Here the
shortage is said in one line when it starts (what ran short, the limit, what waits), at most
once every `REMIND_EVERY` seconds while it lasts, and once when it is over; the connection is
tried again every `RETRY_EVERY` seconds and never lost (the kernel holds it meanwhile). Given
the process's `Room`, it takes none while a connection taken waits for a descriptor to reach
its upstream (shortage.py): that one gets the descriptor freed next.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Optional

import trio

from .shortage import REMIND_EVERY, RETRY_EVERY, SHORTAGES, Room, shortage

__all__ = ["PatientListener"]


class PatientListener(trio.abc.Listener[trio.SocketStream]):
    """``listener`` whose ``accept`` waits out a shortage (`SHORTAGES`), saying so through
    ``say`` (one line each time, without a newline) under the name ``where``.

    A shortage comes and goes with every connection that ends and every one that is taken, so
    its lines are about an episode: it starts at a failure after `REMIND_EVERY` seconds
    without one, is said again at most every `REMIND_EVERY` seconds while failures go on
    (with what failed and what was taken meanwhile), and is said over at the first
    connection taken `REMIND_EVERY` seconds after the last failure."""

    def __init__(
        self,
        listener: trio.abc.Listener[trio.SocketStream],
        where: str,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        room: Optional[Room] = None,
    ) -> None:
        self.listener = listener
        self.room = room
        """Shared with the process's connects: no connection is taken while one taken waits
        for a descriptor (shortage.py)."""
        self.where = where
        self._say = say
        self._clock = clock
        self._began: Optional[float] = None
        """When the episode under way began (None: no shortage lately)."""
        self._last_failed = 0.0
        self._said_at = 0.0
        self._failed = 0
        """Tries failed since the last line said."""
        self._taken = 0
        """Connections taken since the last line said."""

    async def accept(self) -> trio.SocketStream:
        while True:
            if self.room is not None:
                await self.room.wait_for_room()
            try:
                stream = await self.listener.accept()
            except OSError as exc:
                if exc.errno not in SHORTAGES:
                    raise
                self._short(exc)
                await trio.sleep(RETRY_EVERY)
                continue
            if self._began is not None:
                self._took()
            return stream

    async def aclose(self) -> None:
        await self.listener.aclose()

    def _short(self, exc: OSError) -> None:
        now = self._clock()
        if self._began is None or now - self._last_failed >= REMIND_EVERY:
            self._began = self._said_at = now
            self._failed = self._taken = 0
            self._say(
                f"{self.where}: cannot take a connection that waits for it: {shortage(exc)}; "
                f"it waits in the listener's backlog, tried again every {RETRY_EVERY:g} s"
            )
        else:
            self._failed += 1
            if now - self._said_at >= REMIND_EVERY:
                self._say(
                    f"{self.where}: still short after {now - self._began:.0f} s: "
                    f"{_count(self._failed, 'try', 'tries')} failed and "
                    f"{_count(self._taken, 'connection', 'connections')} taken in the last "
                    f"{now - self._said_at:.0f} s: {shortage(exc)}"
                )
                self._said_at = now
                self._failed = self._taken = 0
        self._last_failed = now

    def _took(self) -> None:
        assert self._began is not None
        self._taken += 1
        if self._clock() - self._last_failed >= REMIND_EVERY:
            lasted = self._last_failed - self._began
            self._say(
                f"{self.where}: taking connections as usual again (the shortage lasted "
                f"{lasted:.1f} s, over {REMIND_EVERY:g} s ago)"
            )
            self._began = None


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"
