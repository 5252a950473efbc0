"""A frame too large to observe that is, whole, the answer to a waiting request: the tap reads
its id from its ends, pairs it as it would have paired the answer, and its gap names the
request (`ObservationLost.answers`); the rows read that request answered. A frame whose id
cannot be read, a server's request, or one cut short answers nothing known, as before."""

from __future__ import annotations

import json

from golem_core.profiles import GOLEM, MCP
from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.events import ConnectionClosed, Direction, Event, ObservationLost
from golem_proxy.live.tap import ConnectionTap, ObserveLimits

LIMITS = ObserveLimits(frame=1024)
BULK = "z" * 5000


def line(obj: dict[str, object]) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def call(ident: int) -> bytes:
    return line({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": "t"}})


def session(*steps: tuple[Direction, bytes]) -> tuple[ConnectionTap, list[Event], FlowTracker]:
    events: list[Event] = []
    tap = ConnectionTap(1, "mcp", MCP, events.append, limits=LIMITS)
    for at, (direction, data) in enumerate(steps):
        tap.process(direction, data, 0.1 * (at + 1))
    tracker = FlowTracker(MCP)
    for event in events:
        tracker.apply(event)
    return tap, events, tracker


def gaps(events: list[Event]) -> list[tuple[Direction, object]]:
    return [(e.direction, e.answers) for e in events if isinstance(e, ObservationLost)]


def close(tracker: FlowTracker) -> None:
    tracker.apply(ConnectionClosed(conn=1, route="mcp", reason="closed", t=9.0))


def test_an_answer_with_its_id_last_answers_its_request() -> None:
    # The TypeScript SDK's order: the id after the bulk.
    big = line({"result": {"text": BULK}, "jsonrpc": "2.0", "id": 8})
    tap, events, tracker = session((Direction.C2S, call(7) + call(8)), (Direction.S2C, big))
    assert gaps(events) == [(Direction.S2C, 1)]
    assert tap.outstanding() == 1  # call 7 waits on
    close(tracker)
    rows = {flow.number: flow.status(MCP) for flow in tracker.flows}
    assert rows == {1: "unanswered", 2: "answered (unobserved:frame-too-large)",
                    3: "unobserved:frame-too-large"}  # fmt: skip
    answered = tracker.flows[1]
    assert not answered.is_error and not answered.pending and answered.response_size == len(big)


def test_an_id_that_cannot_be_read_answers_nothing_known() -> None:
    hidden = line({"jsonrpc": "2.0", "result": {"text": BULK, "nested": [{"id": 7}]}})
    not_json = b"Traceback (most recent call last): id 7 " + BULK.encode() + b' "id": 7}\n'
    batch = b"[" + line({"jsonrpc": "2.0", "id": 7, "result": BULK})[:-1] + b"]\n"
    for big in (hidden, not_json, batch):
        tap, events, tracker = session((Direction.C2S, call(7)), (Direction.S2C, big))
        assert gaps(events) == [(Direction.S2C, None)], big[-40:]
        assert tap.outstanding() == 1
        close(tracker)
        assert [flow.status(MCP) for flow in tracker.flows] == [
            "unanswered",
            "unobserved:frame-too-large",
        ]


def test_a_servers_request_with_a_waiting_id_is_no_answer() -> None:
    asked = line({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage",
                  "params": {"text": BULK}})  # fmt: skip
    tap, events, _ = session((Direction.C2S, call(7)), (Direction.S2C, asked))
    assert gaps(events) == [(Direction.S2C, None)]
    assert tap.outstanding() == 1


def test_a_frame_the_stream_cut_short_answers_nothing() -> None:
    big = line({"jsonrpc": "2.0", "id": 7, "result": {"text": BULK}})
    _, events, _ = session(
        (Direction.C2S, call(7)), (Direction.S2C, big[:3000]), (Direction.S2C, b"")
    )
    assert [answers for _, answers in gaps(events)] == [None]


def test_a_golem_answer_pairs_by_the_golem_rule() -> None:
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append, limits=LIMITS)
    tap.process(Direction.C2S, GOLEM.encode({"id": "a", "method": "viewport.capture"}), 0.1)
    tap.process(Direction.S2C, GOLEM.encode({"id": "a", "result": BULK, "error": None}), 0.2)
    tap.process(Direction.C2S, GOLEM.encode({"id": "b", "method": "ping"}), 0.3)
    tap.process(Direction.S2C, GOLEM.encode({"id": "b", "result": {}, "error": None}), 0.4)
    assert [e.answers for e in events if isinstance(e, ObservationLost)] == [0]
    assert tap.outstanding() == 0
