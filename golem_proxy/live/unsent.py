"""What a faulted or intercepted connection's pumps read and never sent on, recorded when the
connection ends (fault_relay.py): a frame still waiting out a ``delay``, and the frames read in
the same go behind the one going then (a delayed or held one). The client or the server did
send them, so they are recorded, marked undelivered (their receiver never got them); the bytes
of a frame not complete yet are recorded as a gap of that many bytes. Nothing read is left out
of the recording.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Callable, Optional

import trio

from golem_core.framing import EndOfStream
from golem_core.framing import Event as FramingEvent

from ..events import Direction
from .connection import Connection

__all__ = ["LOST_WAIT", "Unsent", "or_now"]

LOST_WAIT = 1.0
"""How long bytes lost at a connection's end wait for their direction's writer to let go
(seconds); past it they are recorded as a gap."""


def or_now(sent_at: Optional[float], now: Callable[[], float]) -> float:
    """When the client sent a request (``sent_at``), or now when that is not known."""
    return now() if sent_at is None else sent_at


class _ReadAhead:
    """What a pump read in one go and has not gone through yet: the frames still to come out
    of its decoder (``pending``) and how to count the bytes of a frame not complete yet."""

    def __init__(
        self, pending: Iterator[FramingEvent], partial: Callable[[], int], t: Optional[float]
    ) -> None:
        self.pending = pending
        self.partial = partial
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

    def reading(
        self,
        direction: Direction,
        pending: Iterator[FramingEvent],
        partial: Callable[[], int],
        t: Optional[float],
    ) -> None:
        """``direction``'s pump goes through ``pending``, the frames of one read (``t``: when
        the client sent them, for requests); ``partial`` counts a frame not complete yet."""
        self._ahead[direction] = _ReadAhead(pending, partial, t)

    def read_through(self, direction: Direction) -> None:
        """The pump went through everything it read (or it was recorded)."""
        self._ahead.pop(direction, None)

    async def lost_in_delay(self, direction: Direction, raw: bytes, t: float) -> None:
        """The connection ended while a frame (``raw``, as it was read) waited out a ``delay``
        fault: record it undelivered (`Connection.observe_undelivered`: "client gone" for an
        answer whose client reset meanwhile): the exchange has the answer the proxy read, and
        says its client never got it. The fault's events are not published: the frame was
        not delayed as they would say. After whatever else of that direction was being
        written, whose writer ends with the connection too (the lock, shielded from the
        cancellation, is waited for at most `LOST_WAIT` seconds; past it, a gap)."""
        with trio.CancelScope(shield=True, deadline=trio.current_time() + LOST_WAIT) as scope:
            async with self.locks[direction]:
                self.conn.observe_undelivered(direction, raw, t)
        if scope.cancelled_caught:  # the other writer held on: a gap, shown as one
            self.conn.observe_lost(direction, len(raw), t)

    async def lost_behind(self, direction: Direction) -> None:
        """The connection ended while frames read for ``direction`` waited behind the one
        going then: record them (`record_behind`), after whatever of that direction was being
        written, as `lost_in_delay` does."""
        if direction not in self._ahead:
            return
        with trio.CancelScope(shield=True, deadline=trio.current_time() + LOST_WAIT) as scope:
            async with self.locks[direction]:
                self.record_behind(direction)
        if scope.cancelled_caught:  # the other writer held on: a gap, shown as one
            ahead = self._ahead.get(direction)
            t = self.now() if ahead is None else or_now(ahead.t, self.now)
            self.conn.observe_lost(direction, self.drop_behind(direction), t)

    def drop_behind(self, direction: Direction) -> int:
        """Forget what ``direction``'s pump read and never sent on; how many bytes."""
        ahead = self._ahead.pop(direction, None)
        return 0 if ahead is None else len(ahead.raw()) + ahead.partial()

    def record_behind(self, direction: Direction) -> None:
        """Record what ``direction``'s pump read and never sent on: the whole frames behind
        the one it was sending, undelivered ("connection ended", or the receiver gone), and
        the bytes of a frame not complete yet as a gap. Once."""
        ahead = self._ahead.pop(direction, None)
        if ahead is None:
            return
        t = or_now(ahead.t, self.now)
        rest = ahead.raw()
        self.conn.observe_undelivered(direction, rest, t)
        self.conn.observe_lost(direction, ahead.partial(), t)
