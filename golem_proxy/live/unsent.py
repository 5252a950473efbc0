"""What a faulted or intercepted connection's pumps read and never sent on, recorded when the
connection ends (fault_relay.py): a frame still waiting out a ``delay`` or for its writer's
turn, the frames read in the same go behind the one going then (a delayed or held one), the
bytes of a frame not complete yet, and what the request pump read on behind a frame it held
(read_on.py), each chunk at the time it was read. The client or the server did send them, so
they are recorded marked undelivered (their receiver never got them); the end of stream the
relay records for a direction cut short then reports the incomplete frame as truncated, as on a
plain route. Behind a ``truncate`` they are counted instead (`drop_behind`):
as stream bytes after the cut a reader would take them for the truncated frame's rest.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Callable, Optional

import trio

from golem_core.framing import EndOfStream
from golem_core.framing import Event as FramingEvent

from ..events import Direction
from .connection import Connection
from .read_on import ReadOn

__all__ = ["LOST_WAIT", "Unsent", "or_now"]

LOST_WAIT = 1.0
"""How long bytes lost at a connection's end wait for their direction's writer to let go
(seconds); past it they are recorded as a gap."""


def or_now(sent_at: Optional[float], now: Callable[[], float]) -> float:
    """When the client sent a request (``sent_at``), or now when that is not known."""
    return now() if sent_at is None else sent_at


class _ReadAhead:
    """The frames of one read still to come out of a pump's decoder, and when they came."""

    def __init__(self, pending: Iterator[FramingEvent], t: Optional[float]) -> None:
        self.pending = pending
        self.t = t

    def raw(self) -> bytes:
        """The bytes of the frames still to come (drains ``pending``)."""
        return b"".join(event.raw for event in self.pending if not isinstance(event, EndOfStream))


class Unsent:
    """One connection's bytes read and never sent on, by direction."""

    def __init__(
        self, conn: Connection, locks: Mapping[Direction, trio.Lock], now: Callable[[], float]
    ) -> None:
        self.conn = conn
        self.locks = locks
        """The directions' writers' locks: what is recorded here goes after what is written."""
        self.now = now
        self._ahead: dict[Direction, _ReadAhead] = {}
        self._partial: dict[Direction, Callable[[], bytes]] = {}
        self._read_on: dict[Direction, ReadOn] = {}

    def pumping(
        self, direction: Direction, partial: Callable[[], bytes], read_on: Optional[ReadOn] = None
    ) -> None:
        """``direction``'s pump decodes what it reads; ``partial`` gives the bytes of a frame
        it holds not complete yet (its decoder's `held`), ``read_on`` what it read on behind
        a frame it held and has not gone through yet."""
        self._partial[direction] = partial
        if read_on is not None:
            self._read_on[direction] = read_on

    def reading(
        self, direction: Direction, pending: Iterator[FramingEvent], t: Optional[float]
    ) -> None:
        """``direction``'s pump goes through ``pending``, the frames of one read (``t``: when
        the client sent them, for requests)."""
        self._ahead[direction] = _ReadAhead(pending, t)

    def read_through(self, direction: Direction) -> None:
        """The pump went through everything it read (or it was recorded)."""
        self._ahead.pop(direction, None)

    async def in_order(
        self, direction: Direction, observe: Callable[[], None], as_gap: Callable[[], None]
    ) -> bool:
        """Call ``observe`` (which hands bytes of ``direction`` to inspection) holding the
        direction's writer's lock, so that nothing lands inside a frame being written.
        Cancelled while waiting for it (the connection ends), still call it: the lock is then
        waited for at most `LOST_WAIT` seconds, shielded, and past that ``as_gap`` records
        the bytes as a gap (one that says they were not sent on either). The cancellation is
        not lost: trio raises it again at the caller's next checkpoint (the caller's own
        steps, a close's reason, come first). Returns whether ``observe`` was called (not
        ``as_gap``)."""
        lock = self.locks[direction]
        try:
            await lock.acquire()
        except trio.Cancelled:
            with trio.CancelScope(shield=True, deadline=trio.current_time() + LOST_WAIT) as scope:
                async with lock:
                    observe()
            if scope.cancelled_caught:  # the other writer held on: a gap, shown as one
                as_gap()
                return False
            return True
        try:
            observe()
        finally:
            lock.release()
        return True

    async def lost(self, direction: Direction, raw: bytes, t: float) -> bool:
        """The connection ended while a frame (``raw``, as it was read) waited to go (out a
        ``delay`` fault, or for its writer's turn): record it undelivered
        (`Connection.observe_undelivered`: "client gone" for an answer whose client reset
        meanwhile), after whatever of that direction was being written (`in_order`). Returns
        whether it was recorded as a frame (not as a gap): a delay that held it is then said
        after it (`ActionEvents.delays_ended`); no other fault is, the frame was not sent as
        it would say."""
        return await self.in_order(
            direction,
            lambda: self.conn.observe_undelivered(direction, raw, t),
            lambda: self.conn.observe_unsent_lost(direction, len(raw), t),
        )

    async def lost_behind(self, direction: Direction) -> None:
        """The connection ended while ``direction``'s pump held bytes it never sent on: record
        them (`record_behind`), after whatever of that direction was being written."""
        if direction not in self._ahead and direction not in self._partial:
            return
        await self.in_order(
            direction, lambda: self.record_behind(direction), lambda: self._as_gap(direction)
        )

    def drop_behind(self, direction: Direction) -> int:
        """Forget what ``direction``'s pump read and never sent on; how many bytes."""
        rest, _, later = self._take(direction)
        return len(rest) + sum(len(chunk) for _, chunk in later)

    def record_behind(self, direction: Direction) -> None:
        """Record what ``direction``'s pump read and never sent on, undelivered ("connection
        ended", or the receiver gone): the whole frames behind the one it was sending, then
        the bytes of a frame not complete yet, then what it read on behind those, each chunk
        at its own time. Once."""
        rest, t, later = self._take(direction)
        self.conn.observe_undelivered(direction, rest, t)
        for read_at, chunk in later:
            self.conn.observe_undelivered(direction, chunk, read_at)

    def _as_gap(self, direction: Direction) -> None:
        rest, t, later = self._take(direction)
        self.conn.observe_unsent_lost(direction, len(rest) + sum(len(c) for _, c in later), t)

    def _take(self, direction: Direction) -> tuple[bytes, float, list[tuple[float, bytes]]]:
        """What ``direction``'s pump read and never sent on (the frames still to come, then a
        frame not complete yet), forgotten here, and when it came; then what it read on
        behind them (`ReadOn.drain`)."""
        ahead = self._ahead.pop(direction, None)
        partial = self._partial.pop(direction, None)
        read_on = self._read_on.pop(direction, None)
        t = self.now() if ahead is None else or_now(ahead.t, self.now)
        rest = b"" if ahead is None else ahead.raw()
        later = [] if read_on is None else read_on.drain()
        return rest + (b"" if partial is None else partial()), t, later
