"""The frames a recording's reader holds until a later line names them (`HeldFrames`): the
requests waiting for their answer, and a request with its answer until their exchange line
(a pair). And what it lets go, so that what a file asks cannot make it hold without bound.

A request is held until its exchange line or its connection's close. A recording made by the
proxy says, in an ``unobserved`` line of reason ``evicted``, which requests of a connection it
let go past its own limits (``frames``), and the reader lets the same go. A file written before
the line named them says how many: the reader lets its oldest waiting ones of that connection
and direction go, as the proxy did (not the same ones where the proxy had withdrawn a request
whose answer it missed, or lines went unwritten). A file that asks ten million questions and
answers none, made by hand or by a broken writer, would hold them all: past `IN_FLIGHT_BYTES`
held, the oldest pairs go first, their exchange told as their line would have told it, then the
oldest requests waiting, said in an event of the kind the file holds (`ObservationLost`,
`GapReason.EVICTED`), so every view shows the gap as it shows the proxy's. A request let go is
a row of its own, marked so; an answer read after it is a row of its own too (the reader no
longer holds what it answers), as is a second answer to one request.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import OrderedDict
from typing import Any, Optional, TypeVar

from golem_core.messages import JsonId
from golem_core.profiles.members import id_key

from ..events import Direction, FrameSeen, GapReason, ObservationLost
from ..frame_runs import FrameRuns, frame_runs, numbers_in, run_count
from ..json_cost import message_holds
from ..terminal import counted, format_size

__all__ = [
    "HELD_MOST",
    "IN_FLIGHT_BYTES",
    "LOOKUP_SLACK",
    "REQUEST_OVERHEAD",
    "HeldFrames",
    "add_in_order",
    "forget_in_group",
    "held_cost",
]

Key = tuple[int, str, int]
"""A frame's connection, direction (its value) and number."""

IN_FLIGHT_BYTES = 256 * 1024 * 1024
"""What the frames a reader holds may cost, all connections together (`held_cost`: what their
parsed messages hold too, as the proxy charges a request kept waiting), as the proxy bounds
what one connection may hold (its ``pending_bytes``, 64 MiB). A reader holds a blob's
characters, which the proxy elides: a request of 16 MiB of base64 costs it 32 MiB, the proxy
16. Past the limit, what is let go leaves `LET_GO_TO` of it held: a recording the proxy made
lets go only where several connections each held large requests waiting at once (more than
four at their limit; seven waiting on a 16 MiB capture each fit, an eighth goes over). Tens
of thousands of small requests in flight at once: a session reaches that only when something
is badly wrong, and that is what the gap then says. (96 MiB while a frame was charged its
bytes alone: three connections waiting on 16 MiB captures at once each had their request let
go once it was charged its characters too.)"""
LET_GO_TO = 3 / 4
"""Past the limit, the oldest are let go until this share of it is held: one gap for many
requests, not one for each request read after."""
LOOKUP_SLACK = 65_536
"""Frame numbers the proxy's gaps may name beyond one for each request read (`HeldFrames._named`):
room for requests whose lines went unwritten."""
REQUEST_OVERHEAD = 1536
"""What a held frame costs beyond its bytes and its parsed message (its event, and the row a
view builds of it)."""
HELD_MOST = 64 * 1024 * 1024
"""The most one frame is charged, as the proxy charges one request at most what its connection
may hold (``pending_bytes``): the newest frame held stays held whatever it costs, as the proxy
keeps the newest request waiting (past the limit, what is let go leaves `LET_GO_TO` of it)."""


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


def held_cost(frame: FrameSeen) -> int:
    """What holding ``frame`` costs: its bytes (the larger of what its line says and what it
    holds: a line may say 0), what its parsed message holds (`json_cost.message_holds`: a
    hand-made file of requests of ``[[],[],…]``, each charged its bytes, held ~25 times
    that) and `REQUEST_OVERHEAD`; at most `HELD_MOST`."""
    payload = frame.payload
    cost = max(frame.size, len(payload)) + message_holds(payload, frame.elided)
    return min(cost + REQUEST_OVERHEAD, HELD_MOST)


Pair = tuple[FrameSeen, FrameSeen]
"""A request and its answer, let go before their exchange line (`HeldFrames._bound`)."""


class HeldFrames:
    """Frames held by their key until taken, in the order read, within a bound: requests
    waiting for their answer, and requests with the answer that waits for their exchange
    line (a pair)."""

    def __init__(self, limit: int = IN_FLIGHT_BYTES) -> None:
        self.limit = limit
        self.frames: dict[Key, FrameSeen] = {}
        """Every frame held."""
        self.held_bytes = 0
        """What the frames held cost (`held_cost`)."""
        self._costs: dict[Key, int] = {}
        """What each frame held was charged (counting a large one's structure again when it
        goes would cost as much again)."""
        # Ordered dicts, not dicts: the oldest go first, and a dict's first key is found past
        # every key deleted before it (reading a file of 200,000 took minutes).
        self._requests: OrderedDict[Key, None] = OrderedDict()
        """The keys of the requests waiting for their answer, in the order read."""
        self._asked: dict[tuple[int, str], dict[Key, None]] = {}
        """The same by connection and direction (ordered sets, `add_in_order`): where the
        proxy's gap says the oldest were let go, and what a close forgets (looking at every
        frame held at each close made a file of many connections, each closed with a request
        unanswered, quadratic to read)."""
        self._ids: dict[tuple[int, str, Any], int] = {}
        """How many requests wait with each id (its `id_key`), by connection and direction
        (`waiting_with_id`)."""
        self._pairs: OrderedDict[Key, Key] = OrderedDict()
        """A request's key → its answer's, until their exchange line, in the order answered."""
        self._answer_for: dict[Key, Key] = {}
        self._pairs_of: dict[int, set[Key]] = {}
        """The requests of `_pairs` by connection."""
        self.let_go = 0
        """Requests let go past `limit` so far."""
        self.told_early = 0
        """Pairs let go before their exchange line (past `limit`, or a number read again)."""
        self._looks_left = LOOKUP_SLACK
        """Frame numbers the proxy's gaps may still name (`_named`)."""
        self._replaced: list[Pair] = []
        """Pairs a frame number read again let go, until taken (`take_replaced`)."""

    def __contains__(self, key: Key) -> bool:
        return key in self.frames

    def __bool__(self) -> bool:
        return bool(self.frames)

    def waiting(self, key: Key) -> bool:
        """A request held under ``key`` waits for its answer (none is held for it)."""
        return key in self._requests

    def waiting_with_id(self, conn: int, direction: str, ident: JsonId) -> int:
        """How many requests of ``conn`` sent ``direction`` (its value) wait for their answer
        with ``ident`` for their id (``1`` is no ``"1"``, as pairing has it)."""
        found = id_key(ident)
        return 0 if found is None else self._ids.get((conn, direction, found), 0)

    def hold_request(self, frame: FrameSeen) -> tuple[list[ObservationLost], list[Pair]]:
        """Hold a request until its answer; returns what was let go to stay within the limit
        (`_bound`)."""
        key = self._put(frame)
        self._requests[key] = None
        ident = id_key(frame.message.id)
        if ident is not None:
            counted = (key[0], key[1], ident)
            self._ids[counted] = self._ids.get(counted, 0) + 1
        self._looks_left += 1
        add_in_order(self._asked, (key[0], key[1]), key)
        return self._bound(frame.t)

    def hold_answer(self, frame: FrameSeen, asked: Key) -> tuple[list[ObservationLost], list[Pair]]:
        """Hold the answer to the request held under ``asked`` (it `waiting`) until their
        exchange line; the request waits no more. Returns what was let go (`_bound`)."""
        self._stop_waiting(asked, self.frames[asked])
        key = self._put(frame)
        self._pairs[asked] = key
        self._answer_for[key] = asked
        self._pairs_of.setdefault(asked[0], set()).add(asked)
        return self._bound(frame.t)

    def take_exchange(
        self, asked: Key, answered: Key
    ) -> tuple[Optional[FrameSeen], Optional[FrameSeen]]:
        """The request and the answer an exchange line names, no longer held (None for one
        not held). Where the line names a request and an answer that are not a pair (a
        damaged file), each one's partner goes with it: no line can pair them any more."""
        if self._pairs.get(asked) == answered:
            request, response = self.frames[asked], self.frames[answered]
            self.take(asked)  # its answer with it
            return request, response
        return self.take(asked), self.take(answered)

    def take(self, key: Key) -> Optional[FrameSeen]:
        """The frame held under ``key``, no longer held (None: none is). A pair goes whole: the
        answer held for a request goes with it, and the request with its answer."""
        frame = self._pop(key)
        if frame is None:
            return None
        if key in self._requests:
            self._stop_waiting(key, frame)
        elif key in self._pairs:
            answer = self._pairs.pop(key)
            forget_in_group(self._pairs_of, key[0], key)
            del self._answer_for[answer]
            self._pop(answer)
        elif key in self._answer_for:
            asked = self._answer_for.pop(key)
            del self._pairs[asked]
            forget_in_group(self._pairs_of, asked[0], asked)
            self._pop(asked)
        return frame

    def forget_connection(self, conn: int) -> None:
        """The connection closed: no line will name its frames any more."""
        for sent in ("c2s", "s2c"):
            for key in list(self._asked.get((conn, sent), ())):
                self.take(key)
        for key in list(self._pairs_of.get(conn, ())):
            self.take(key)

    def evicted(self, lost: ObservationLost) -> ObservationLost:
        """The proxy let go requests of ``lost``'s connection and direction (`GapReason.EVICTED`):
        those its ``frames`` name, or, in a file written before gaps named them, the ``size``
        oldest waiting. No answer will name them. Returns the gap naming those this reader let
        go (`ObservationLost.frames`), for the views to let the same go."""
        group = (lost.conn, lost.direction.value)
        asked = self._asked.get(group, {})
        if lost.frames is None:
            keys = list(itertools.islice(asked, max(lost.size, 0)))
        else:
            keys = self._named(group, asked, lost.frames)
        for key in keys:
            self.take(key)
        return dataclasses.replace(lost, frames=frame_runs(key[2] for key in keys))

    def _named(self, group: tuple[int, str], asked: dict[Key, None], runs: FrameRuns) -> list[Key]:
        """The requests waiting in ``asked`` that ``runs`` name. Each number named costs a
        look, and a damaged line can name a billion in a few bytes: the numbers looked at, all
        gaps together, are at most one for each request held so far and `LOOKUP_SLACK`, which
        a file the proxy wrote never needs (it names each request it let go once); past that
        the rest of a gap's numbers are skipped."""
        conn, sent = group
        keys: list[Key] = []
        looked = 0
        for number in itertools.islice(numbers_in(runs), min(run_count(runs), self._looks_left)):
            if len(keys) == len(asked):
                break
            looked += 1
            key = (conn, sent, number)
            if key in asked:
                keys.append(key)
        self._looks_left -= looked
        return keys

    def take_replaced(self) -> list[Pair]:
        """The pairs a frame number read again let go since the last call (`_put`)."""
        replaced, self._replaced = self._replaced, []
        return replaced

    def _put(self, frame: FrameSeen) -> Key:
        key = (frame.conn, frame.direction.value, frame.index)
        asked = key if key in self._pairs else self._answer_for.get(key)
        if asked is not None:  # a damaged file: told as their exchange line would have
            self._replaced.append((self.frames[asked], self.frames[self._pairs[asked]]))
            self.told_early += 1
        self.take(key)  # a number read again replaces what it held
        self.frames[key] = frame
        cost = self._costs[key] = held_cost(frame)
        self.held_bytes += cost
        return key

    def _pop(self, key: Key) -> Optional[FrameSeen]:
        """The frame held under ``key``, no longer held nor charged (None: none is)."""
        frame = self.frames.pop(key, None)
        if frame is not None:
            self.held_bytes -= self._costs.pop(key)
        return frame

    def _stop_waiting(self, key: Key, frame: FrameSeen) -> None:
        """The request ``frame``, held under ``key``, waits no more."""
        del self._requests[key]
        forget_in_group(self._asked, (key[0], key[1]), key)
        ident = id_key(frame.message.id)
        if ident is not None:
            counted = (key[0], key[1], ident)
            left = self._ids[counted] - 1
            if left:
                self._ids[counted] = left
            else:
                del self._ids[counted]

    def _bound(self, t: float) -> tuple[list[ObservationLost], list[Pair]]:
        """Past the limit, let go until `LET_GO_TO` of it is held: first the oldest pairs
        (returned, for their exchange to be told as their line would have told it), then the
        oldest requests waiting, said in one gap per connection and direction, in the order
        their oldest were read."""
        if self.held_bytes <= self.limit:
            return [], []
        target = self.limit * LET_GO_TO
        pairs: list[Pair] = []
        while self._pairs and self.held_bytes > target:
            asked, answered = next(iter(self._pairs.items()))
            pairs.append((self.frames[asked], self.frames[answered]))
            self.told_early += 1
            self.take(asked)  # its answer with it
        counts: dict[tuple[int, str], list[int]] = {}
        routes: dict[tuple[int, str], str] = {}
        while self._requests and self.held_bytes > target:
            key = next(iter(self._requests))
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
                    frames=frame_runs(numbers),
                )
            )
        return gaps, pairs


def forget_in_group(keys_of: dict[G, Any], group: G, key: Any) -> None:
    """Forget ``key`` from ``group``'s keys in ``keys_of`` (an ordered set of `add_in_order`,
    or a set), and the group once it is empty."""
    keys = keys_of.get(group)
    if keys is not None:
        if isinstance(keys, dict):
            keys.pop(key, None)
        else:
            keys.discard(key)
        if not keys:
            del keys_of[group]
