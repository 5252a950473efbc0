"""The frames a recording's reader holds until a later line names them (`HeldFrames`): the
requests waiting for their answer, and the answers waiting for their exchange line. And what it
lets go, so that no file can make a reader hold without bound.

A request is held until its exchange line or its connection's close. A recording made by the
proxy holds at most what the proxy held (it says, in an ``unobserved`` line of reason
``evicted``, which requests it let go past its own limits, and the reader lets the same ones
go). A file that asks ten million questions and answers none, made by hand or by a broken
writer, would hold them all: past `IN_FLIGHT_BYTES` the oldest held requests are let go, and
the reader says so in an event of the same kind (`ObservationLost`, `GapReason.EVICTED`)
that it reads in the file, so every view shows the gap as it shows the proxy's. A request let
go is a row of its own, marked so; an answer read after is a row of its own too (the reader no
longer holds what it answers).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import Optional

from ..events import Direction, FrameSeen, GapReason, ObservationLost
from ..terminal import counted, format_size

__all__ = ["IN_FLIGHT_BYTES", "REQUEST_OVERHEAD", "HeldFrames"]

Key = tuple[int, str, int]
"""A frame's connection, direction (its value) and number."""

IN_FLIGHT_BYTES = 96 * 1024 * 1024
"""What the requests a reader holds may cost, all connections together: their frames' bytes and
`REQUEST_OVERHEAD` each, as the proxy bounds what one connection may hold (its
``pending_bytes``, 64 MiB). Past it, what is let go leaves `LET_GO_TO` of it held, still more
than one connection of the proxy's may hold: a recording the proxy made lets go only where
several connections each held near their limit. Tens of thousands of small requests in flight
at once: a session reaches that only when something is badly wrong, and that is what the gap
then says."""
LET_GO_TO = 3 / 4
"""Past the limit, the oldest are let go until this share of it is held: one gap for many
requests, not one for each request read after."""
REQUEST_OVERHEAD = 1536
"""What a held request costs beyond its bytes (its frame, its parsed message, and the row a
view builds of it)."""


class HeldFrames:
    """Frames held by their key until taken, in the order read, within a bound."""

    def __init__(self, limit: int = IN_FLIGHT_BYTES) -> None:
        self.limit = limit
        self.frames: dict[Key, FrameSeen] = {}
        self._held_of: dict[int, set[Key]] = {}
        """The keys of `frames` by connection, so that a close forgets its own: scanning every
        frame held at each close made a file of many connections, each closed with a request
        unanswered, quadratic to read (20,000 took 13 s in this alone)."""
        # Ordered dicts, not dicts: the oldest go first, and a dict's first key is found past
        # every key deleted before it (reading a file of 200,000 took minutes).
        self._requests: OrderedDict[Key, int] = OrderedDict()
        """The held requests' costs, in the order read (the oldest first)."""
        self._asked: dict[tuple[int, str], OrderedDict[Key, None]] = {}
        """The held requests by connection and direction, in the order read (an ordered
        set): where the proxy's gap says the oldest were let go."""
        self.request_bytes = 0
        self.let_go = 0
        """Requests let go past `limit` so far."""

    def __contains__(self, key: Key) -> bool:
        return key in self.frames

    def __bool__(self) -> bool:
        return bool(self.frames)

    def hold(self, frame: FrameSeen) -> list[ObservationLost]:
        """Hold ``frame`` under its key; returns the gaps that say which requests were let go
        to stay within the limit (empty almost always)."""
        key = (frame.conn, frame.direction.value, frame.index)
        self.frames[key] = frame
        self._held_of.setdefault(frame.conn, set()).add(key)
        if frame.answers is not None:
            return []
        cost = frame.size + REQUEST_OVERHEAD
        self._drop_request(key)  # a number read again replaces what it held
        self._requests[key] = cost
        self._asked.setdefault((key[0], key[1]), OrderedDict())[key] = None
        self.request_bytes += cost
        return self._bound(frame.t) if self.request_bytes > self.limit else []

    def take(self, key: Key) -> Optional[FrameSeen]:
        """The frame held under ``key``, no longer held (None: none is)."""
        frame = self.frames.pop(key, None)
        if frame is not None:
            self._drop_request(key)
            held = self._held_of.get(key[0])
            if held is not None:
                held.discard(key)
                if not held:
                    del self._held_of[key[0]]
        return frame

    def forget_connection(self, conn: int) -> None:
        """The connection closed: no line will name its frames any more."""
        for key in self._held_of.pop(conn, ()):
            self.frames.pop(key, None)
            self._drop_request(key)

    def evicted(self, lost: ObservationLost) -> None:
        """The proxy let go of ``lost.size`` requests of ``lost``'s connection and direction,
        the oldest it held (`GapReason.EVICTED`): their answers will name none of them."""
        asked = self._asked.get((lost.conn, lost.direction.value), OrderedDict())
        for key in list(itertools.islice(asked, max(lost.size, 0))):
            self.take(key)

    def _drop_request(self, key: Key) -> None:
        cost = self._requests.pop(key, None)
        if cost is not None:
            self.request_bytes -= cost
            group = (key[0], key[1])
            asked = self._asked[group]
            del asked[key]
            if not asked:
                del self._asked[group]

    def _bound(self, t: float) -> list[ObservationLost]:
        """Let the oldest requests go until `LET_GO_TO` of the limit is held: one gap per
        connection and direction, in the order their oldest were read."""
        counts: dict[tuple[int, str], list[int]] = {}
        routes: dict[tuple[int, str], str] = {}
        target = self.limit * LET_GO_TO
        while self._requests and self.request_bytes > target:
            key = next(iter(self._requests))
            frame = self.take(key)
            if frame is None:  # never so: a held request's frame is held
                self._drop_request(key)
                continue
            group = (key[0], key[1])
            counts.setdefault(group, []).append(key[2])
            routes[group] = frame.route
        gaps = []
        for (conn, sent), numbers in counts.items():
            self.let_go += len(numbers)
            gaps.append(
                ObservationLost(
                    conn=conn,
                    route=routes[(conn, sent)],
                    direction=Direction(sent),
                    t=t,
                    reason=GapReason.EVICTED,
                    size=len(numbers),
                    detail=f"{counted(len(numbers), 'request')} waiting for an answer let go "
                    f"by this reader, past its limit of {format_size(self.limit)} held (frames "
                    f"#{numbers[0]} to #{numbers[-1]}): an answer read after one is a row of "
                    "its own",
                )
            )
        return gaps
