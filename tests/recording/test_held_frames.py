"""What a recording's reader holds until a later line names it (`HeldFrames`): the proxy's
``evicted`` gap lets go the requests it names (in files written before it named them: the
oldest of its connection and direction), and past the bound the oldest of all go, said in one
gap per connection and direction."""

from __future__ import annotations

import dataclasses
from typing import Optional

from golem_core.messages import Role
from golem_core.profiles import GOLEM, get_profile
from golem_proxy.events import Direction, FrameSeen, GapReason, ObservationLost
from golem_proxy.frame_runs import FrameRuns
from golem_proxy.recording.held_frames import HELD_MOST, HeldFrames, held_cost
from tests.support.frames import frame_seen

PROFILE = get_profile("jsonrpc-ndjson")
C2S, S2C = Direction.C2S, Direction.S2C


def _ask(held: HeldFrames, conn: int, direction: Direction, index: int) -> list[ObservationLost]:
    payload = b'{"jsonrpc":"2.0","id":%d,"method":"m"}' % index
    frame = frame_seen(
        PROFILE, direction, index, payload, conn=conn, t=index / 10, expects_answer=True
    )
    gaps, pairs = held.hold_request(frame)
    assert pairs == []
    return gaps


def _evicted(
    conn: int, direction: Direction, count: int, frames: Optional[FrameRuns] = None
) -> ObservationLost:
    return ObservationLost(
        conn=conn,
        route="main",
        direction=direction,
        t=1.0,
        reason=GapReason.EVICTED,
        size=count,
        frames=frames,
    )


def test_the_proxy_s_gap_lets_go_the_oldest_of_its_connection_and_direction() -> None:
    held = HeldFrames()
    for index in range(4):
        for conn, direction in ((1, C2S), (1, S2C), (2, C2S)):
            _ask(held, conn, direction, index)
    held.evicted(_evicted(1, C2S, 2))
    assert sorted(key for key in held.frames if key[:2] == (1, "c2s")) == [
        (1, "c2s", 2),
        (1, "c2s", 3),
    ]
    assert len(held.frames) == 10 and held.let_go == 0  # the proxy's, not the reader's
    held.evicted(_evicted(1, C2S, 5))  # more than are held: what is held goes
    assert not any(key[:2] == (1, "c2s") for key in held.frames)
    held.forget_connection(2)
    assert sorted(held.frames) == [(1, "s2c", n) for n in range(4)]
    assert held.held_bytes == sum(held_cost(frame) for frame in held.frames.values())


def test_a_gap_that_names_its_requests_lets_go_those_and_says_which_went() -> None:
    """The proxy had set request 0 aside (its answer missed, sent again): it let go 1 and 3,
    not the two oldest."""
    held = HeldFrames()
    for index in range(5):
        _ask(held, 1, C2S, index)
    said = held.evicted(_evicted(1, C2S, 3, frames=((1, 1), (3, 3), (7, 9))))
    assert sorted(held.frames) == [(1, "c2s", 0), (1, "c2s", 2), (1, "c2s", 4)]
    assert said.frames == ((1, 1), (3, 3)), "what this reader let go: 7 to 9 were never held"
    assert said.size == 3 and said.detail == ""  # the proxy's line, as it came
    unnamed = held.evicted(_evicted(1, C2S, 1))  # a file written before gaps named them
    assert unnamed.frames == ((0, 0),)
    assert sorted(held.frames) == [(1, "c2s", 2), (1, "c2s", 4)]


def test_a_gap_naming_a_billion_numbers_is_looked_at_within_a_bound() -> None:
    held = HeldFrames()
    for index in range(3):
        _ask(held, 1, C2S, 10**9 + index)
    for _ in range(3):  # a damaged file, none of them held: LOOKUP_SLACK + 3 looks, not 3e12
        assert held.evicted(_evicted(1, C2S, 1, frames=((0, 10**12),))).frames == ()
    assert len(held.frames) == 3
    _ask(held, 1, C2S, 5)  # each request read allows one look more
    assert held.evicted(_evicted(1, C2S, 1, frames=((5, 5),))).frames == ((5, 5),)


def test_past_its_bound_the_oldest_go_in_one_gap_per_connection_and_direction() -> None:
    cost = held_cost(frame_seen(PROFILE, C2S, 0, b'{"jsonrpc":"2.0","id":0,"method":"m"}'))
    held = HeldFrames(limit=cost * 8)
    gaps = []
    for index in range(4):
        gaps += _ask(held, 1, C2S, index)
        gaps += _ask(held, 2, S2C, index)
    assert gaps == [] and held.held_bytes == cost * 8
    gaps = _ask(held, 3, C2S, 0)  # the ninth: over, so down to 3/4 of the bound (6)
    assert [(gap.conn, gap.direction, gap.size) for gap in gaps] == [(1, C2S, 2), (2, S2C, 1)]
    assert all(gap.reason is GapReason.EVICTED and gap.t == 0.0 for gap in gaps)
    assert "frames #0 to #1" in gaps[0].detail and "let go by this reader" in gaps[0].detail
    assert held.let_go == 3 and held.held_bytes == cost * 6
    assert (1, "c2s", 0) not in held and (2, "s2c", 0) not in held and (2, "s2c", 1) in held


def _answer(held: HeldFrames, conn: int, index: int, answers: int) -> list[object]:
    payload = b'{"jsonrpc":"2.0","id":%d,"result":{}}' % answers
    frame = frame_seen(PROFILE, S2C, index, payload, conn=conn, t=1.0, answers=answers)
    gaps, pairs = held.hold_answer(frame, (conn, "c2s", answers))
    return [*gaps, *pairs]


def test_an_answered_request_is_never_let_go_and_pairs_go_whole_past_the_bound() -> None:
    """A request whose answer is held waits for its exchange line, not for an answer: the
    proxy's gap skips it; past the bound the oldest pairs go first, whole, for their exchange
    to be told; a second answer finds nothing waiting."""
    held = HeldFrames()
    for index in range(3):
        _ask(held, 1, C2S, index)
    assert _answer(held, 1, 0, 0) == []
    assert not held.waiting((1, "c2s", 0)) and held.waiting((1, "c2s", 1))
    held.evicted(_evicted(1, C2S, 1))  # the oldest *waiting*: #1, not the answered #0
    assert (1, "c2s", 0) in held and (1, "c2s", 1) not in held
    request, response = held.take_exchange((1, "c2s", 0), (1, "s2c", 0))
    assert request is not None and response is not None and response.answers == 0

    asked = held_cost(frame_seen(PROFILE, C2S, 0, b'{"jsonrpc":"2.0","id":0,"method":"m"}'))
    answered = held_cost(frame_seen(PROFILE, S2C, 0, b'{"jsonrpc":"2.0","id":0,"result":{}}'))
    small = HeldFrames(limit=3 * asked + answered * 3 // 2)  # 4 fit, 5 do not
    _ask(small, 2, C2S, 0)
    _ask(small, 2, C2S, 1)
    assert _answer(small, 2, 0, 0) == []  # 3 held
    assert _ask(small, 2, C2S, 2) == []  # 4 held: the limit
    let_go = _answer(small, 2, 1, 1)  # 5 held, over: the pair #0 goes whole
    assert [(pair[0].index, pair[1].index) for pair in let_go] == [(0, 0)]  # type: ignore[index]
    assert small.let_go == 0 and sorted(small.frames) == [
        (2, "c2s", 1),
        (2, "c2s", 2),
        (2, "s2c", 1),
    ]


def test_what_a_line_says_of_its_size_does_not_lower_what_holding_it_costs() -> None:
    held = HeldFrames()
    payload = b'{"jsonrpc":"2.0","id":1,"method":"m","params":"%s"}' % (b"x" * 100_000)
    frame = frame_seen(PROFILE, C2S, 1, payload, size=0, expects_answer=True)
    held.hold_request(frame)
    assert held.held_bytes >= 100_000


def test_an_exchange_that_names_another_request_s_answer_leaves_neither_held() -> None:
    """A damaged file: request #0 and its answer, then request #1, and an exchange line naming
    #1 and #0's answer. No line can pair #0 any more; holding it would let such a file hold
    without bound."""
    held = HeldFrames()
    _ask(held, 1, C2S, 0)
    assert _answer(held, 1, 0, 0) == []
    _ask(held, 1, C2S, 1)
    request, response = held.take_exchange((1, "c2s", 1), (1, "s2c", 0))
    assert request is not None and request.index == 1 and response is not None
    assert not held and held.held_bytes == 0


def test_a_frame_held_is_charged_what_its_parse_holds_at_most_what_a_connection_may() -> None:
    """A request of ``[[],[],…]`` holds ~25 times its bytes once parsed: charged its bytes,
    a hand-made file of them was held parsed whole. One frame is charged at most `HELD_MOST`,
    so the newest stays held."""
    nested = b"[" + b"[]," * 20_000 + b"[]]"
    payload = b'{"jsonrpc":"2.0","id":1,"method":"m","params":%s}' % nested
    assert held_cost(frame_seen(PROFILE, C2S, 1, payload)) > 15 * len(payload)
    huge = b'{"jsonrpc":"2.0","id":1,"method":"m","params":[%s[]]}' % (b"[]," * (1 << 20))
    held = HeldFrames()
    gaps, _ = held.hold_request(frame_seen(PROFILE, C2S, 1, huge, expects_answer=True))
    assert gaps == [] and held.held_bytes == HELD_MOST and (1, "c2s", 1) in held


def test_seven_connections_each_waiting_on_a_16_mib_capture_are_all_held() -> None:
    """A reader holds a capture's characters, which the proxy elides: each costs it ~32 MiB.
    Seven such requests waiting at once fit the bound (under 96 MiB, three did not: rows the
    proxy answered were shown evicted); an eighth goes over."""
    payload = GOLEM.encode_payload(
        {"id": "c", "method": "scene.import_texture", "params": {"png": "QUJD" * (4 << 20)}}
    )
    message = GOLEM.parse(payload, Role.REQUEST)
    held = HeldFrames()
    for conn in range(1, 8):
        frame = FrameSeen(
            conn=conn, route="main", direction=C2S, index=0, t=0.0, size=len(payload) + 4,
            payload=payload, message=message, expects_answer=True,
        )  # fmt: skip
        assert held.hold_request(frame) == ([], [])
    assert len(held.frames) == 7 and held.let_go == 0
    eighth = dataclasses.replace(frame, conn=8)
    gaps, _ = held.hold_request(eighth)
    assert gaps and held.let_go > 0
