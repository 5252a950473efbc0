"""The connections an `ObserverLink` holds while the recording trails (observer_link.py's
docstring tells when): those waiting for it to catch up (`Holds.wait`), woken whenever the
shares may have changed, and those whose hold reached the limit and shed instead.

With a ``hold_limit`` (``--observer-hold``; none by default, `HOLD_LIMIT`), a connection's hold
lasts at most that long: if the recording has not caught up by then, that connection *sheds*:
it goes on and its chunks are counted, not handed on, until the observing process has
acknowledged everything handed on before (`Holds.caught_up`); then a ``LOST`` record says how
many bytes crossed meanwhile (the recording's ``unobserved`` line) and handing on resumes. So
the recording trails by at most the limit and a span it does not hold is named, never a hole.

Apart from observer_link.py, which hands records on and asks the ledger (link_ledger.py)
whether a connection is held, because waiting is its own job: who waits, when they look
again, and who gave up waiting.
"""

from __future__ import annotations

import math
from typing import Callable

import trio

from .link_ledger import BEHIND_AFTER, MARK_EVERY
from .unrecorded_values import WaitingValues

__all__ = ["HOLD_LIMIT", "Holds"]

HOLD_LIMIT = math.inf
"""By default the relay waits for the recording as long as it keeps acknowledging: a flood is
forwarded at the pace it is observed, and recorded whole, and holds only its own connection
(docs/architecture.md says what that costs, and why no limit is the default).
``--observer-hold`` sets a limit past which the connection held sheds instead."""


class Holds:
    """The connections waiting on one link, and those shedding."""

    def __init__(self) -> None:
        self.shedding: dict[int, int] = {}
        """Connections that shed, each with the offset the observing process must acknowledge
        before it hands on again."""
        self.unlearned = WaitingValues()
        """Of the connections that shed, the values learned meanwhile
        (`ObserverLink.unrecorded`)."""
        self._changed = trio.Event()
        """Set when the shares may have changed while connections wait (`wait`)."""
        self.waiting = 0
        self._woken_at = -math.inf

    def wake(self) -> None:
        """Let the waiting connections look again whether they are held."""
        self._changed.set()
        self._changed = trio.Event()

    def handed_on(self, t: float) -> None:
        """Bytes were handed on at ``t`` while the link holds: a connection held for its share
        may have less of it now (at most once a mark: each wake-up has every waiting
        connection look again)."""
        if self.waiting and t - self._woken_at >= MARK_EVERY:
            self._woken_at = t
            self.wake()

    async def wait(
        self,
        conn: int,
        hold_limit: float,
        holds: Callable[[int], bool],
        recount: Callable[[], None],
        handed: Callable[[], int],
    ) -> None:
        """While ``holds(conn)``: wait until it no longer does, or for at most ``hold_limit``
        seconds; then, still held, ``conn`` sheds until what was ``handed()`` on by then is
        acknowledged. ``recount``: the ledger looks again at who stood still."""
        if self.waiting:
            self.wake()  # the shares as they stand now this one waits: let the others look
        self.waiting += 1
        try:
            with trio.move_on_after(hold_limit):
                while holds(conn):
                    with trio.move_on_after(BEHIND_AFTER):
                        await self._changed.wait()
                    recount()  # another may have stood still for `BEHIND_AFTER` since
                return
        finally:
            self.waiting -= 1
        if holds(conn):
            self.shedding[conn] = handed()

    def caught_up(self, offset: int) -> list[tuple[int, tuple[str, ...]]]:
        """The connections that shed and hand on again now that the observing process
        acknowledged everything up to ``offset``, each with the values learned meanwhile;
        they shed no more."""
        done = [conn for conn, until in self.shedding.items() if until <= offset]
        for conn in done:
            del self.shedding[conn]
        return [(conn, self.unlearned.take(conn)) for conn in done]

    def clear(self) -> None:
        """No connection sheds any more (observation stopped)."""
        self.shedding.clear()
        self.unlearned.clear()
