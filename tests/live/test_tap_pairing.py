"""The tap decides the pairing once and its frames say it: a request whether it waits for an
answer, a response which request it answers, or that it is an orphan, or (neither) that it
answers a request too large to observe."""

from __future__ import annotations

import json
import tracemalloc

from golem_core.profiles import GOLEM, JSONRPC_NDJSON, MCP
from golem_proxy.events import (
    Direction,
    Event,
    ExchangeCompleted,
    FrameSeen,
    GapReason,
    ObservationLost,
    ViolationSeen,
)
from golem_proxy.live.tap import ConnectionTap, ObserveLimits

CALL = b'{"jsonrpc":"2.0","id":%d,"method":"state","params":{}}\n'
NOTE = b'{"jsonrpc":"2.0","method":"tick","params":{}}\n'
ANSWER = b'{"jsonrpc":"2.0","id":%d,"result":{}}\n'


def call(n: int) -> bytes:
    """A GOLEM request with id ``n``."""
    return GOLEM.encode({"id": n, "method": "state", "params": {}})


def answer(n: int) -> bytes:
    """The GOLEM answer to ``call(n)``."""
    return GOLEM.encode({"id": n, "result": {}, "error": None})


def frames(events: list[Event]) -> list[tuple[str, int, bool, object, bool]]:
    return [
        (e.direction.value, e.index, e.expects_answer, e.answers, e.orphan)
        for e in events
        if isinstance(e, FrameSeen)
    ]


def test_requests_notifications_answers_and_orphans_say_what_the_tap_decided() -> None:
    events: list[Event] = []
    tap = ConnectionTap(1, "scrybe", JSONRPC_NDJSON, events.append)
    tap.process(Direction.C2S, CALL % 1 + NOTE + CALL % 2, 0.1)
    tap.process(Direction.S2C, ANSWER % 2 + ANSWER % 1 + ANSWER % 7, 0.2)
    assert frames(events) == [
        ("c2s", 0, True, None, False),
        ("c2s", 1, False, None, False),  # a notification: nothing waits for it
        ("c2s", 2, True, None, False),
        ("s2c", 0, False, 2, False),  # by id, not by order
        ("s2c", 1, False, 0, False),
        ("s2c", 2, False, None, True),
    ]
    exchanges = [e for e in events if isinstance(e, ExchangeCompleted)]
    assert [(e.request.index, e.response.answers) for e in exchanges] == [(2, 2), (0, 0)]
    orphan = [e for e in events if isinstance(e, ViolationSeen) and e.orphan]
    assert [e.frame_index for e in orphan] == [2]
    assert tap.outstanding() == 0


def test_the_answer_to_a_request_too_large_to_observe_is_no_orphan() -> None:
    events: list[Event] = []
    limits = ObserveLimits(frame=64)
    tap = ConnectionTap(1, "main", GOLEM, events.append, limits=limits)
    big = GOLEM.encode({"id": "a", "method": "x", "params": {"blob": "z" * 200}})
    tap.process(Direction.C2S, big, 0.1)
    tap.process(Direction.S2C, GOLEM.encode({"id": "a", "result": {}, "error": None}), 0.2)
    assert frames(events) == [("s2c", 0, False, None, False)]
    assert not any(isinstance(e, ViolationSeen) and e.orphan for e in events)


def test_the_late_answer_to_a_request_let_go_past_the_limits_is_no_orphan() -> None:
    """A pipelining client past the pending limit: the oldest requests are let go (an
    ``evicted`` gap says so); their answers, when they come, are theirs, not orphans. An answer
    to no request at all still is one."""
    events: list[Event] = []
    tap = ConnectionTap(1, "scrybe", JSONRPC_NDJSON, events.append, limits=ObserveLimits(pending=2))
    tap.process(Direction.C2S, b"".join(CALL % n for n in (1, 2, 3, 4)), 0.1)
    tap.process(Direction.S2C, b"".join(ANSWER % n for n in (1, 2, 3, 4, 2, 9)), 0.2)
    answers = [f for f in frames(events) if f[0] == "s2c"]
    assert answers == [
        ("s2c", 0, False, None, False),  # id 1, let go: late, not an orphan
        ("s2c", 1, False, None, False),  # id 2, let go
        ("s2c", 2, False, 2, False),
        ("s2c", 3, False, 3, False),
        ("s2c", 4, False, None, True),  # id 2 again: its request was answered already
        ("s2c", 5, False, None, True),  # id 9: asked by nobody
    ]
    orphans = [e.frame_index for e in events if isinstance(e, ViolationSeen) and e.orphan]
    assert orphans == [4, 5]


def test_the_late_answer_to_a_request_let_go_is_not_the_one_waiting_s() -> None:
    """Three calls past a limit of two let the first go; once the second is answered, the
    first's late answer is no answer to the third, the one request still waiting (which a
    reply whose id matches nothing waiting is paired with, for a sequential client)."""
    for profile, ask, reply in (
        (JSONRPC_NDJSON, CALL.__mod__, ANSWER.__mod__),
        (GOLEM, call, answer),
    ):
        events: list[Event] = []
        tap = ConnectionTap(1, "main", profile, events.append, limits=ObserveLimits(pending=2))
        tap.process(Direction.C2S, ask(1) + ask(2) + ask(3), 0.1)
        tap.process(Direction.S2C, reply(2) + reply(1) + reply(3), 0.2)
        paired = [(answers, orphan) for d, _, _, answers, orphan in frames(events) if d == "s2c"]
        assert paired == [(1, False), (None, False), (2, False)], profile.name
        wrong = [
            e.violation.rule
            for e in events
            if isinstance(e, ViolationSeen) and (e.orphan or "id-echoed" in e.violation.rule)
        ]
        assert wrong == [], profile.name


def test_requests_let_go_in_one_read_are_said_in_one_gap_after_its_frames() -> None:
    """A client pipelining past the limit has a request let go with each one it adds: one
    ``evicted`` gap for what a read lets go (its size the count, the oldest named), not one
    a request."""
    events: list[Event] = []
    tap = ConnectionTap(1, "scrybe", JSONRPC_NDJSON, events.append, limits=ObserveLimits(pending=2))
    tap.process(Direction.C2S, b"".join(CALL % n for n in range(1, 7)), 0.1)
    tap.process(Direction.C2S, CALL % 7, 0.2)
    kinds = ["gap" if isinstance(e, ObservationLost) else "frame" for e in events]
    assert kinds == ["frame"] * 6 + ["gap", "frame", "gap"]
    gaps = [e for e in events if isinstance(e, ObservationLost)]
    assert [(g.reason, g.size, g.t) for g in gaps] == [
        (GapReason.EVICTED, 4, 0.1),
        (GapReason.EVICTED, 1, 0.2),
    ]
    assert gaps[0].detail.startswith("4 requests unanswered (evicted)")
    assert gaps[0].detail.endswith("oldest frame #0") and gaps[1].detail.endswith("#4")


def test_answers_to_requests_lost_in_a_gap_are_no_orphans_until_an_answer_pairs_again() -> None:
    """A pipelined burst whose middle was forwarded but not observed (the observer shed it):
    the answers to what was lost pair with nothing, and are not orphans; once an answer pairs
    with a request sent after the gap, one that answers nothing is."""

    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append)
    tap.process(Direction.C2S, call(1), 0.1)
    tap.lose(Direction.C2S, len(call(2) + call(3)), 0.2)
    tap.process(Direction.C2S, call(4) + call(5), 0.3)
    answers = b"".join(GOLEM.encode({"id": n, "result": {}}) for n in (1, 2, 3, 4, 5, 9))
    tap.process(Direction.S2C, answers, 0.4)
    paired = [(answers, orphan) for d, _, _, answers, orphan in frames(events) if d == "s2c"]
    assert paired == [(0, False), (None, False), (None, False), (1, False), (2, False),
                      (None, True)]  # fmt: skip
    orphans = [e.frame_index for e in events if isinstance(e, ViolationSeen) and e.orphan]
    assert orphans == [5]


def test_after_a_gap_the_one_request_waiting_is_not_paired_with_another_ones_answer() -> None:
    """A client of one call at a time: its call 1 was observed, then its answer, call 2 and
    the start of call 3 were lost; the answer to 3 is not taken for 1's (which GOLEM's
    pairing does with the one request waiting, and then flags the id)."""

    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append)
    tap.process(Direction.C2S, call(1), 0.1)
    tap.lose(Direction.S2C, len(answer(1) + answer(2)), 0.2)
    tap.lose(Direction.C2S, len(call(2) + call(3)), 0.2)
    tap.process(Direction.S2C, answer(3), 0.3)
    tap.process(Direction.C2S, call(4), 0.4)
    tap.process(Direction.S2C, answer(4), 0.5)
    paired = [(answers, orphan) for d, _, _, answers, orphan in frames(events) if d == "s2c"]
    assert paired == [(None, False), (1, False)]
    assert [e for e in events if isinstance(e, ViolationSeen)] == []
    assert [e.request.index for e in events if isinstance(e, ExchangeCompleted)] == [1]


def test_after_a_gap_a_reused_id_pairs_with_the_request_sent_after_it() -> None:
    """A request sent before a gap whose answer crossed in it: when the client sends its id
    again (after a restart of the observing process, or any gap), the new request's answer is
    the new request's, not the old one's (which stays unanswered, before the gap)."""

    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append)
    tap.process(Direction.C2S, call(5) + call(6), 0.1)
    tap.lose(Direction.S2C, len(answer(5)), 0.2)
    tap.process(Direction.C2S, call(5), 0.3)
    tap.process(Direction.S2C, answer(5) + answer(6), 0.4)
    paired = [(answers, orphan) for d, _, _, answers, orphan in frames(events) if d == "s2c"]
    assert paired == [(2, False), (1, False)]
    assert [e.request.index for e in events if isinstance(e, ExchangeCompleted)] == [2, 1]
    assert tap.outstanding() == 0


def test_without_a_gap_a_reused_id_still_pairs_first_in_first_out() -> None:
    events: list[Event] = []
    tap = ConnectionTap(1, "scrybe", JSONRPC_NDJSON, events.append)
    tap.process(Direction.C2S, CALL % 5 + CALL % 5, 0.1)
    tap.process(Direction.S2C, ANSWER % 5 + ANSWER % 5, 0.2)
    paired = [answers for d, _, _, answers, _ in frames(events) if d == "s2c"]
    assert paired == [0, 1]


def test_after_a_restart_a_reused_id_pairs_with_the_request_sent_after_it() -> None:
    """The new observing process holds again what the recording shows in flight; the answers
    that crossed while none observed are unknown, so a reused id is the new request's."""
    before: list[Event] = []
    ConnectionTap(1, "scrybe", JSONRPC_NDJSON, before.append).process(
        Direction.C2S, CALL % 5 + CALL % 6, 0.1
    )
    in_flight = [e for e in before if isinstance(e, FrameSeen)]
    events: list[Event] = []
    tap = ConnectionTap(1, "scrybe", JSONRPC_NDJSON, events.append)
    tap.resume((2, 0), recorded=in_flight)
    tap.process(Direction.C2S, CALL % 5, 0.3)
    tap.process(Direction.S2C, ANSWER % 5 + ANSWER % 6, 0.4)
    paired = [(answers, orphan) for d, _, _, answers, orphan in frames(events) if d == "s2c"]
    assert paired == [(2, False), (1, False)]
    assert tap.outstanding() == 0


def test_an_mcp_servers_stray_line_answers_nothing_and_the_real_answer_pairs() -> None:
    # A banner or a print() on the server's stdout, while a call is outstanding: the MCP
    # client reads past it, and the call is answered by the line that carries its id.
    events: list[Event] = []
    tap = ConnectionTap(1, "mcp", MCP, events.append)
    tap.process(Direction.C2S, CALL % 2, 0.1)
    tap.process(Direction.S2C, b"Starting GOLEM server...\n" + ANSWER % 2, 0.2)
    assert frames(events) == [
        ("c2s", 0, True, None, False),
        ("s2c", 0, False, None, False),  # no reply: answers nothing, no orphan either
        ("s2c", 1, False, 0, False),
    ]
    [exchange] = [e for e in events if isinstance(e, ExchangeCompleted)]
    assert exchange.response.index == 1
    rules = [e.violation.rule for e in events if isinstance(e, ViolationSeen)]
    assert "pairing.orphan-response" not in rules
    assert rules == ["jsonrpc.response.json"]  # what it is, said once
    assert tap.outstanding() == 0


def test_a_log_line_printed_as_json_answers_nothing_and_is_no_orphan() -> None:
    # A JSON object with none of a reply's members (no id, result or error): a log line, not
    # an answer to the call waiting, nor an orphan.
    events: list[Event] = []
    tap = ConnectionTap(1, "mcp", MCP, events.append)
    tap.process(Direction.C2S, CALL % 2, 0.1)
    tap.process(Direction.S2C, b'{"status": "starting"}\n' + ANSWER % 2, 0.2)
    assert frames(events) == [
        ("c2s", 0, True, None, False),
        ("s2c", 0, False, None, False),
        ("s2c", 1, False, 0, False),
    ]
    rules = [e.violation.rule for e in events if isinstance(e, ViolationSeen)]
    assert "pairing.orphan-response" not in rules
    assert tap.outstanding() == 0


def test_an_mcp_batch_is_answered_by_the_batch_that_answers_it() -> None:
    # JSON-RPC batches (MCP 2025-03-26): the array of answers goes to the array of requests.
    events: list[Event] = []
    tap = ConnectionTap(1, "mcp", MCP, events.append)
    tap.process(Direction.C2S, b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n', 0.1)
    tap.process(Direction.S2C, b'[{"jsonrpc":"2.0","id":1,"result":{}}]\n', 0.2)
    assert frames(events) == [("c2s", 0, True, None, False), ("s2c", 0, False, 0, False)]
    assert tap.outstanding() == 0


def test_requests_waiting_are_charged_what_their_messages_hold() -> None:
    """An upstream that never answers, a client sending 512 KiB of ``[[],…]`` a request: each
    parsed holds ~18 MiB, and the requests let go keep what the tap holds within the pending
    limit (charged their bytes alone, 64 of them stayed: over 1 GiB)."""
    lost: list[Event] = []

    def keep_gaps(event: Event) -> None:
        if isinstance(event, ObservationLost):
            lost.append(event)

    tap = ConnectionTap(1, "main", GOLEM, keep_gaps)
    tracemalloc.start()
    try:
        for n in range(24):
            grid = b"[" + b"[]," * 170_000 + b"[]]"
            payload = b'{"id":"r%d","method":"scene.import","params":{"grid":%s}}' % (n, grid)
            tap.process(Direction.C2S, GOLEM.frame_payload(payload), n / 100)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 128 * 1024 * 1024
    assert tap.held <= ObserveLimits().pending_bytes
    assert sum(gap.size for gap in lost if isinstance(gap, ObservationLost)) >= 20


def test_json_passed_as_a_string_is_charged_as_text() -> None:
    """A call carrying 3 MiB of JSON in a string parameter (an MCP tool's document) is charged
    about what it holds, so a call sent while it waits does not let it go."""
    events: list[Event] = []
    tap = ConnectionTap(1, "scrybe", JSONRPC_NDJSON, events.append)
    document = json.dumps([{"name": f"item{k}", "pos": [k, k + 1]} for k in range(100_000)])
    call = {"jsonrpc": "2.0", "id": 1, "method": "write", "params": {"content": document}}
    tap.process(Direction.C2S, json.dumps(call).encode() + b"\n" + CALL % 2, 0.1)
    assert tap.held < 4 * len(document)
    tap.process(Direction.S2C, ANSWER % 2 + ANSWER % 1, 0.2)
    exchanges = [e for e in events if isinstance(e, ExchangeCompleted)]
    assert [e.request.message.method for e in exchanges] == ["state", "write"]
    assert not any(isinstance(e, ObservationLost) for e in events)


def test_one_request_is_charged_at_most_its_connection_s_limit() -> None:
    """So that a request holding more never stands for more than the observer's budget lets
    one connection hold (the observer would shed the answer that lets it go)."""
    limits = ObserveLimits(pending_bytes=1024 * 1024)
    tap = ConnectionTap(1, "main", GOLEM, [].append, limits=limits)
    payload = b'{"id":"a","method":"scene.import","params":{"grid":[' + b"[]," * 100_000 + b"[]]}}"
    tap.process(Direction.C2S, GOLEM.frame_payload(payload), 0.1)
    assert tap.held == limits.pending_bytes


NULL_ID_ERROR = GOLEM.encode({"id": None, "result": None, "error": {"code": -32603, "message": ""}})


def test_after_an_answer_not_observed_a_null_id_answers_the_request_sent_since() -> None:
    """The answer to a request was too large to observe; the client sent its next request,
    answered with a null id: that answer is the request's sent since, as it would be if the
    first had been answered where the tap saw it (its own answer was among the bytes not
    observed), whether the requests have ids or not."""
    big = GOLEM.encode({"id": None, "result": {"blob": "z" * 500}, "error": None})
    for first, second in (
        ({"id": "a", "method": "scene.get", "params": {}}, {"id": "b", "method": "ping"}),
        ({"method": "scene.get", "params": {}}, {"method": "ping", "params": {}}),
    ):
        events: list[Event] = []
        tap = ConnectionTap(1, "main", GOLEM, events.append, limits=ObserveLimits(frame=256))
        tap.process(Direction.C2S, GOLEM.encode(first), 0.1)
        tap.process(Direction.S2C, big, 0.2)
        tap.process(Direction.C2S, GOLEM.encode(second), 0.3)
        tap.process(Direction.S2C, NULL_ID_ERROR, 0.4)
        paired = [(answers, orphan) for d, _, _, answers, orphan in frames(events) if d == "s2c"]
        assert paired == [(1, False)], first
        exchanges = [e for e in events if isinstance(e, ExchangeCompleted)]
        assert [e.request.index for e in exchanges] == [1], first


def test_a_null_id_answer_after_answers_not_observed_to_requests_waiting_is_no_orphan() -> None:
    """Two requests pipelined, then bytes of answers not observed: one of them may have had
    its answer there, which one is not known; a null-id answer after it answers the other."""
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append)
    tap.process(Direction.C2S, call(1) + call(2), 0.1)
    tap.lose(Direction.S2C, len(answer(1)), 0.2)
    tap.process(Direction.S2C, NULL_ID_ERROR, 0.3)
    assert [f for f in frames(events) if f[0] == "s2c"] == [("s2c", 0, False, None, False)]
    assert not any(isinstance(e, ViolationSeen) and e.orphan for e in events)
