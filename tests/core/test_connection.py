"""The sans-IO connection: bytes of both peers in, typed, checked and paired events out."""

from __future__ import annotations

import json
from typing import Any

from core_feeding import chunkings
from hypothesis import given, settings
from hypothesis import strategies as st

from golem_core.catalogue import MethodCatalogue
from golem_core.connection import (
    BytesSkipped,
    Connection,
    ConnectionEvent,
    ExchangePaired,
    FramingProblem,
    Limits,
    MessageSeen,
    OrphanResponse,
    Sender,
    StreamEnded,
    Unanswered,
    UnansweredReason,
)
from golem_core.framing import NEED_DATA, FrameErrorKind
from golem_core.messages import ErrorResponse, Malformed, Request, Response
from golem_core.profiles import GOLEM, JSONRPC_NDJSON, Profile

C, S = Sender.CLIENT, Sender.SERVER


def golem_request(ident: Any, method: str = "scene.get_info", **params: Any) -> bytes:
    return GOLEM.encode(GOLEM.request(ident, method, params))


def golem_ok(ident: Any, **result: Any) -> bytes:
    return GOLEM.encode(GOLEM.success(ident, result or {"ok": True}))


def kinds(events: list[ConnectionEvent]) -> list[str]:
    return [type(event).__name__ for event in events]


def rules(violations: Any) -> list[str]:
    return [found.rule for found in violations]


def test_a_conforming_exchange_is_seen_and_paired() -> None:
    conn = Connection(GOLEM)
    sent = conn.feed(C, golem_request("a"))
    assert kinds(sent) == ["MessageSeen"]
    request = sent[0]
    assert isinstance(request, MessageSeen) and isinstance(request.message, Request)
    assert (request.sender, request.index, request.violations) == (C, 0, ())
    assert conn.outstanding == 1
    answered = conn.feed(S, golem_ok("a"))
    assert kinds(answered) == ["MessageSeen", "ExchangePaired"]
    response, paired = answered
    assert isinstance(response, MessageSeen) and isinstance(response.message, Response)
    assert response.answers is request
    assert paired == ExchangePaired(request, response, ())
    assert conn.outstanding == 0


def test_events_do_not_depend_on_how_the_bytes_are_chunked() -> None:
    requests = golem_request("a") + golem_request("b", "scene.list_layers")
    responses = golem_ok("a") + golem_ok("b", layers=[])
    expected = _session([requests], [responses])
    for label, chunks in chunkings(requests):
        assert _session(chunks, [responses]) == expected, label
    for label, chunks in chunkings(responses):
        assert _session([requests], chunks) == expected, label


def _session(client: list[bytes], server: list[bytes]) -> list[ConnectionEvent]:
    conn = Connection(GOLEM)
    events: list[ConnectionEvent] = []
    for chunk in client:
        events += conn.feed(C, chunk)
    for chunk in server:
        events += conn.feed(S, chunk)
    return events


def test_next_event_needs_data_then_hands_out_one_event_at_a_time() -> None:
    conn = Connection(GOLEM)
    frame = golem_request("a")
    conn.receive_data(C, frame[:3])
    assert conn.next_event(C) is NEED_DATA
    conn.receive_data(C, frame[3:] + golem_request("b")[:5])
    first = conn.next_event(C)
    assert isinstance(first, MessageSeen) and first.message.id == "a"
    assert conn.next_event(C) is NEED_DATA
    assert conn.next_event(S) is NEED_DATA


def test_a_response_to_nothing_is_an_orphan() -> None:
    conn = Connection(GOLEM)
    events = conn.feed(S, golem_ok("x"))
    assert kinds(events) == ["MessageSeen", "OrphanResponse"]
    seen, orphan = events
    assert isinstance(seen, MessageSeen) and seen.answers is None
    assert isinstance(orphan, OrphanResponse) and orphan.response is seen
    assert orphan.violation.rule == "pairing.orphan-response"


def test_an_id_not_echoed_is_paired_with_the_only_request_and_reported() -> None:
    conn = Connection(GOLEM)
    conn.feed(C, golem_request("a"))
    paired = conn.feed(S, golem_ok("b"))[-1]
    assert isinstance(paired, ExchangePaired)
    assert rules(paired.violations) == ["golem.exchange.id-echoed"]


def test_responses_pair_by_id_whatever_their_order() -> None:
    conn = Connection(GOLEM)
    conn.feed(C, golem_request("a") + golem_request("b"))
    events = conn.feed(S, golem_ok("b") + golem_ok("a"))
    paired = [event for event in events if isinstance(event, ExchangePaired)]
    assert [(p.request.message.id, p.response.message.id) for p in paired] == [
        ("b", "b"),
        ("a", "a"),
    ]
    assert all(p.violations == () for p in paired)


def test_an_unparseable_request_is_paired_with_the_null_id_answer() -> None:
    conn = Connection(GOLEM)
    conn.feed(C, golem_request("a"))
    garbage = conn.feed(C, GOLEM.frame_payload(b"{not json"))[0]
    assert isinstance(garbage, MessageSeen) and isinstance(garbage.message, Malformed)
    assert rules(garbage.violations) == ["golem.message.malformed"]
    reply = GOLEM.unparseable_request(garbage.message)
    events = conn.feed(S, GOLEM.encode(reply))
    paired = events[-1]
    assert isinstance(paired, ExchangePaired) and paired.request is garbage
    assert paired.violations == ()
    assert conn.outstanding == 1


def test_message_violations_and_the_catalogue_are_on_the_frame() -> None:
    catalogue = MethodCatalogue.from_method_list(["ping", "scene.list_layers"])
    conn = Connection(GOLEM, catalogue=catalogue)
    payload = json.dumps({"id": "a", "method": "scene.get_info"}).encode()
    seen = conn.feed(C, GOLEM.frame_payload(payload))[0]
    assert isinstance(seen, MessageSeen)
    assert rules(seen.violations) == ["golem.request.params-object", "catalogue.unknown-method"]


def test_an_oversized_frame_is_reported_skipped_and_decoding_goes_on() -> None:
    conn = Connection(GOLEM, limits=Limits(max_frame=100))
    big = golem_request("big", blob="x" * 500)
    events = conn.feed(C, big + golem_request("small"))
    assert kinds(events) == ["FramingProblem", "BytesSkipped", "MessageSeen"]
    problem, skipped, seen = events
    assert isinstance(problem, FramingProblem) and problem.error.kind is FrameErrorKind.OVERSIZED
    assert problem.violation.rule == "golem.frame.oversized"
    assert isinstance(skipped, BytesSkipped) and skipped.discarded.final
    assert isinstance(seen, MessageSeen) and seen.message.id == "small" and seen.index == 0
    raw = problem.error.raw + skipped.discarded.raw + seen.frame.raw
    assert raw == big + golem_request("small")


def test_a_stream_cut_inside_a_frame_is_truncated_then_ends() -> None:
    conn = Connection(GOLEM)
    conn.receive_data(C, golem_request("a")[:-4])
    conn.receive_eof(C)
    events = conn.events(C)
    assert kinds(events) == ["FramingProblem", "StreamEnded"]
    problem = events[0]
    assert isinstance(problem, FramingProblem) and problem.error.kind is FrameErrorKind.TRUNCATED
    assert problem.violation.rule == "golem.frame.truncated"
    assert conn.next_event(C) is NEED_DATA


def test_a_clean_end_of_stream_is_stream_ended_once() -> None:
    conn = Connection(GOLEM)
    assert kinds(conn.feed(S, b"")) == ["StreamEnded"]
    assert conn.next_event(S) is NEED_DATA
    assert conn.feed(C, golem_request("a"))[0].sender is C  # type: ignore[union-attr]


def test_a_big_frame_is_typed_with_its_blob_elided() -> None:
    conn = Connection(GOLEM, limits=Limits(elide_frames_over=1000, elide_strings_over=100))
    conn.feed(C, golem_request("a", "viewport.capture"))
    image = "iVBORw0KGgo" + "A" * 5000
    seen = conn.feed(S, golem_ok("a", image=image))[0]
    assert isinstance(seen, MessageSeen) and isinstance(seen.message, Response)
    assert seen.elided > 4000
    assert image not in json.dumps(seen.message.result)
    assert seen.frame.payload == GOLEM.encode_payload(GOLEM.success("a", {"image": image}))


def test_pairing_limits_give_up_the_oldest_requests() -> None:
    conn = Connection(GOLEM, limits=Limits(max_pending=2, max_pending_bytes=None))
    events: list[ConnectionEvent] = []
    for ident in "abc":
        events += conn.feed(C, golem_request(ident))
    assert kinds(events) == ["MessageSeen", "MessageSeen", "MessageSeen", "Unanswered"]
    evicted = events[-1]
    assert isinstance(evicted, Unanswered) and evicted.reason is UnansweredReason.EVICTED
    assert evicted.request.message.id == "a"
    assert kinds(conn.feed(S, golem_ok("a"))) == ["MessageSeen", "OrphanResponse"]
    assert conn.outstanding == 2


def test_the_byte_limit_counts_the_held_frames() -> None:
    frame = golem_request("a")
    conn = Connection(GOLEM, limits=Limits(max_pending=None, max_pending_bytes=2 * len(frame)))
    events = conn.feed(C, golem_request("a") + golem_request("b") + golem_request("c"))
    assert [e.request.message.id for e in events if isinstance(e, Unanswered)] == ["a"]


def test_close_hands_back_what_is_still_outstanding() -> None:
    conn = Connection(GOLEM)
    conn.feed(C, golem_request("a") + golem_request("b"))
    conn.feed(S, golem_ok("a"))
    left = conn.close()
    assert [(u.request.message.id, u.reason) for u in left] == [("b", UnansweredReason.CLOSED)]
    assert conn.outstanding == 0 and conn.close() == []


def test_jsonrpc_notifications_are_seen_but_never_held() -> None:
    conn = Connection(JSONRPC_NDJSON)
    events = conn.feed(C, b'{"jsonrpc":"2.0","method":"tick"}\n' * 3)
    assert kinds(events) == ["MessageSeen"] * 3
    assert conn.outstanding == 0 and conn.close() == []


def test_jsonrpc_exchange_with_outcome_names() -> None:
    conn = Connection(JSONRPC_NDJSON)
    conn.feed(C, JSONRPC_NDJSON.encode(JSONRPC_NDJSON.request(1, "state", {})))
    events = conn.feed(S, b'{"jsonrpc":"2.0","id":2,"result":{}}\n')
    paired = events[-1]
    assert isinstance(paired, ExchangePaired)
    assert [v.outcome for v in paired.violations if v.rule == "jsonrpc.exchange.id-echoed"] == [
        "MismatchedResponseId { expected: 1, actual: 2 }"
    ]


def test_jsonrpc_parse_error_answer_pairs_with_the_unreadable_request() -> None:
    conn = Connection(JSONRPC_NDJSON)
    garbage = conn.feed(C, b"{oops\n")[0]
    assert isinstance(garbage, MessageSeen) and isinstance(garbage.message, Malformed)
    reply = JSONRPC_NDJSON.unparseable_request(garbage.message)
    events = conn.feed(S, JSONRPC_NDJSON.encode(reply))
    assert isinstance(events[0], MessageSeen) and isinstance(events[0].message, ErrorResponse)
    paired = events[-1]
    assert isinstance(paired, ExchangePaired) and paired.request is garbage


# -- properties ---------------------------------------------------------------------------

_ids = st.sampled_from(["a", "b", "c", 1, 2, "1"])
_steps = st.lists(st.tuples(st.sampled_from([C, S]), _ids, st.booleans()), min_size=1, max_size=25)


@settings(max_examples=150, deadline=None)
@given(_steps, st.integers(1, 4), st.sampled_from([GOLEM, JSONRPC_NDJSON]), st.booleans())
def test_every_request_ends_exactly_once_and_every_byte_is_accounted_for(
    steps: list[tuple[Sender, Any, bool]], max_pending: int, profile: Profile, cut: bool
) -> None:
    conn = Connection(profile, limits=Limits(max_pending=max_pending, max_pending_bytes=None))
    fed = {C: b"", S: b""}
    events: list[ConnectionEvent] = []
    for sender, ident, garbage in steps:
        data = _frame(profile, sender, ident, garbage)
        fed[sender] += data
        events += conn.feed(sender, data)
    if cut:
        tail = _frame(profile, C, "z", False)[:-1]
        fed[C] += tail
        events += conn.feed(C, tail)
    for sender in Sender:
        events += conn.feed(sender, b"")
    events += conn.close()
    requests = [e for e in events if isinstance(e, MessageSeen) and e.sender is C]
    ended = [e.request for e in events if isinstance(e, ExchangePaired)]
    ended += [e.request for e in events if isinstance(e, Unanswered)]
    held = [r for r in requests if profile.expects_response(r.message)]
    assert sorted(r.index for r in ended) == sorted(r.index for r in held)
    for sender in Sender:
        frames = [e for e in events if isinstance(e, MessageSeen) and e.sender is sender]
        assert [e.index for e in frames] == list(range(len(frames)))
        cut_off = [
            e.error.raw for e in events if isinstance(e, FramingProblem) and e.sender is sender
        ]
        assert b"".join(e.frame.raw for e in frames) + b"".join(cut_off) == fed[sender]
        assert sum(isinstance(e, StreamEnded) and e.sender is sender for e in events) == 1


def _frame(profile: Profile, sender: Sender, ident: Any, garbage: bool) -> bytes:
    if garbage:
        return profile.frame_payload(b"[1, 2")
    if profile is JSONRPC_NDJSON and not isinstance(ident, int):
        ident = 3
    if sender is C:
        return profile.encode(profile.request(ident, "state", {}))
    return profile.encode(profile.success(ident, {}))
