"""A listener that waits out a shortage of file descriptors or memory instead of failing.

When the process runs out of file descriptors (``EMFILE``: its ``ulimit -n``; ``ENFILE``: the
system's) or of kernel memory (``ENOMEM``, ``ENOBUFS``), ``accept`` fails while the connection
stays in the listener's backlog. trio's ``serve_listeners`` backs off and tries again, but logs
a traceback of ten lines for every try, ten a second, for as long as the shortage lasts: a
stderr flooded with tracebacks that say neither what ran short nor what to do. Here the
shortage is said in one line when it starts (what ran short, the limit, what waits), at most
once every `REMIND_EVERY` seconds while it lasts, and once when it is over; the connection is
tried again every `RETRY_EVERY` seconds and never lost (the kernel holds it meanwhile).
"""

from __future__ import annotations

import errno
import os
import resource
import time
from collections.abc import Callable
from typing import Optional

import trio

__all__ = ["REMIND_EVERY", "RETRY_EVERY", "SHORTAGES", "PatientListener", "shortage"]

SHORTAGES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
"""What an ``accept`` may fail with while the connection waits for it in the backlog."""
RETRY_EVERY = 0.1
"""Seconds between tries while a shortage lasts (trio's own back-off)."""
REMIND_EVERY = 10.0
"""Seconds between the lines that say a shortage still lasts."""


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
    ) -> None:
        self.listener = listener
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


def shortage(exc: OSError) -> str:
    """What ran short (``exc`` failed with one of `SHORTAGES`), and what would help, in words
    that begin in lower case ("too many open files (EMFILE: …)")."""
    name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
    reason = os.strerror(exc.errno or 0)
    reason = reason[0].lower() + reason[1:]
    if exc.errno == errno.EMFILE:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        return (
            f"{reason} ({name}: this process's limit is {soft}; raise it with `ulimit -n`, "
            "or end connections)"
        )
    if exc.errno == errno.ENFILE:
        return f"{reason} ({name}: the system's limit, fs.file-max)"
    return f"{reason} ({name}: the kernel is short of memory)"
