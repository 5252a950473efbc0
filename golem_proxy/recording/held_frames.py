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
from typing import Any, Optional, TypeVar

from ..events import Direction, FrameSeen, GapReason, ObservationLost
from ..terminal import counted, format_size

__all__ = ["IN_FLIGHT_BYTES", "REQUEST_OVERHEAD", "HeldFrames", "add_in_order"]

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


SMALL_GROUP = 8
"""Keys an ordered set of `add_in_order` holds as a plain dict."""

G = TypeVar("G")
K = TypeVar("K")


def add_in_order(groups: dict[G, dict[K, None]], group: G, key: K) -> None:
    """Add ``key`` last to ``group``'s ordered set of keys in ``groups``. A set stays a plain
    dict while it holds at most `SMALL_GROUP` keys, and becomes an OrderedDict past that: a
    dict's first key is found past every key deleted before it, so a large set whose oldest
    leave one by one made each look for the oldest grow with those gone (a file of 200,000
    requests took minutes), while an OrderedDict of one key costs ~490 bytes to a dict's ~315,
    and most sets hold one (a connection's request in flight)."""
    keys = groups.get(group)
    if keys is None:
        groups[group] = {key: None}
        return
    keys[key] = None
    if len(keys) > SMALL_GROUP and type(keys) is dict:
        groups[group] = OrderedDict(keys)


class HeldFrames:
    """Frames held by their key until taken, in the order read, within a bound."""

    def __init__(self, limit: int = IN_FLIGHT_BYTES) -> None:
        self.limit = limit
        self.frames: dict[Key, FrameSeen] = {}
        """Every frame held."""
        # An ordered dict, not a dict: the oldest go first, and a dict's first key is found
        # past every key deleted before it (reading a file of 200,000 took minutes).
        self._requests: OrderedDict[Key, None] = OrderedDict()
        """The keys of the held requests, in the order read."""
        self._asked: dict[tuple[int, str], dict[Key, None]] = {}
        """The keys of the held requests by connection and direction, in the order read
        (ordered sets, `add_in_order`): where the proxy's gap says the oldest were let go,
        and what a close forgets (looking at every frame held at each close made a file of
        many connections, each closed with a request unanswered, quadratic to read)."""
        self._answers_of: dict[int, set[Key]] = {}
        """The keys of the held answers (until their exchange line) by connection."""
        self.request_bytes = 0
        """What the held requests cost: their bytes and `REQUEST_OVERHEAD` each."""
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
        self.take(key)  # a number read again replaces what it held
        self.frames[key] = frame
        if frame.answers is not None:
            self._answers_of.setdefault(frame.conn, set()).add(key)
            return []
        add_in_order(self._asked, (key[0], key[1]), key)
        self._requests[key] = None
        self.request_bytes += frame.size + REQUEST_OVERHEAD
        return self._bound(frame.t) if self.request_bytes > self.limit else []

    def take(self, key: Key) -> Optional[FrameSeen]:
        """The frame held under ``key``, no longer held (None: none is)."""
        frame = self.frames.pop(key, None)
        if frame is None:
            return None
        if frame.answers is not None:
            _forget(self._answers_of, key[0], key)
        else:
            self.request_bytes -= frame.size + REQUEST_OVERHEAD
            del self._requests[key]
            _forget(self._asked, (key[0], key[1]), key)
        return frame

    def forget_connection(self, conn: int) -> None:
        """The connection closed: no line will name its frames any more."""
        frames = self.frames
        for sent in ("c2s", "s2c"):
            for key in self._asked.pop((conn, sent), ()):
                self.request_bytes -= frames.pop(key).size + REQUEST_OVERHEAD
                del self._requests[key]
        for key in self._answers_of.pop(conn, ()):
            del frames[key]

    def evicted(self, lost: ObservationLost) -> None:
        """The proxy let go of ``lost.size`` requests of ``lost``'s connection and direction,
        the oldest it held (`GapReason.EVICTED`): their answers will name none of them."""
        asked = self._asked.get((lost.conn, lost.direction.value), {})
        for key in list(itertools.islice(asked, max(lost.size, 0))):
            self.take(key)

    def _bound(self, t: float) -> list[ObservationLost]:
        """Let the oldest requests go until `LET_GO_TO` of the limit is held: one gap per
        connection and direction, in the order their oldest were read."""
        counts: dict[tuple[int, str], list[int]] = {}
        routes: dict[tuple[int, str], str] = {}
        over = self.request_bytes - self.limit * LET_GO_TO
        oldest = []
        for key in self._requests:
            if over <= 0:
                break
            oldest.append(key)
            over -= self.frames[key].size + REQUEST_OVERHEAD
        for key in oldest:
            frame = self.frames[key]
            self.take(key)
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


def _forget(keys_of: dict[G, Any], group: G, key: Key) -> None:
    """Forget ``key`` from ``group``'s keys in ``keys_of`` (and the group, once empty)."""
    keys = keys_of.get(group)
    if keys is not None:
        if isinstance(keys, dict):
            keys.pop(key, None)
        else:
            keys.discard(key)
        if not keys:
            del keys_of[group]
