"""`FlowTracker` pairs nothing: a response's row is the request its frame names (even when
the ids would say otherwise: the tap decided), an orphan is a row of its own, a notification
is never held, and what a closed connection left pending is settled and let go."""

from __future__ import annotations

import dataclasses
from typing import Optional

from golem_core.profiles import JSONRPC_NDJSON
from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.events import (
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    ExchangeCompleted,
    FrameSeen,
)
from tests.support.frames import frame_seen


def frame(
    payload: bytes,
    direction: Direction,
    index: int,
    *,
    expects_answer: bool = False,
    answers: Optional[int] = None,
    orphan: bool = False,
) -> FrameSeen:
    return frame_seen(
        JSONRPC_NDJSON,
        direction,
        index,
        payload,
        route="scrybe",
        t=0.1 * (index + 1),
        size=len(payload) + 1,
        expects_answer=expects_answer,
        answers=answers,
        orphan=orphan,
    )


def opened() -> ConnectionOpened:
    return ConnectionOpened(conn=1, route="scrybe", client="c", upstream="u", t=0.0)


def test_a_response_joins_the_row_its_frame_names() -> None:
    tracker = FlowTracker(JSONRPC_NDJSON, keep=False)
    tracker.apply(opened())
    first = frame(b'{"jsonrpc":"2.0","id":1,"method":"a"}', Direction.C2S, 0, expects_answer=True)
    second = frame(b'{"jsonrpc":"2.0","id":1,"method":"b"}', Direction.C2S, 1, expects_answer=True)
    # Same id twice: the tap paired this answer with the second request, and that stands.
    answer = frame(b'{"jsonrpc":"2.0","id":1,"result":{}}', Direction.S2C, 0, answers=1)
    for event in (first, second):
        tracker.apply(event)
    owner = tracker.apply(answer)
    assert owner is not None and owner.request is second
    outcome = JSONRPC_NDJSON.outcome(second.message, answer.message)
    tracker.apply(
        ExchangeCompleted(conn=1, route="scrybe", request=second, response=answer, outcome=outcome)
    )
    done = tracker.take_settled(None)
    assert done == [] and tracker.holds(owner)  # row 2 waits behind row 1, still in flight
    tracker.apply(ConnectionClosed(conn=1, route="scrybe", reason="closed", t=1.0))
    rows = tracker.take_settled(None)
    assert [(r.number, r.method, r.status(JSONRPC_NDJSON)) for r in rows] == [
        (1, "a", "unanswered"),
        (2, "b", "ok"),
    ]
    assert tracker.take_rest() == []


def test_orphans_and_notifications_are_rows_never_held() -> None:
    tracker = FlowTracker(JSONRPC_NDJSON, keep=False)
    tracker.apply(opened())
    note = frame(b'{"jsonrpc":"2.0","method":"tick"}', Direction.C2S, 0)
    orphan = frame(b'{"jsonrpc":"2.0","id":9,"result":{}}', Direction.S2C, 0, orphan=True)
    handed = []
    for event in (note, orphan, note):
        handed += tracker.take_settled(tracker.apply(event))
    handed += tracker.take_settled(None)
    assert [r.status(JSONRPC_NDJSON) for r in handed] == ["notification", "ok", "notification"]
    assert handed[1].response is orphan and handed[1].request is None
    assert not tracker._by_request and not tracker._answers and not tracker._ready


def test_a_close_settles_its_own_connections_requests_in_order_and_no_others() -> None:
    tracker = FlowTracker(JSONRPC_NDJSON, keep=False)
    for conn in (1, 2):
        tracker.apply(ConnectionOpened(conn=conn, route="scrybe", client="c", upstream="u", t=0))
    asked = {}
    for index in range(3):
        for conn in (1, 2):
            payload = b'{"jsonrpc":"2.0","id":%d,"method":"m"}' % index
            request = dataclasses.replace(
                frame(payload, Direction.C2S, index, expects_answer=True), conn=conn
            )
            asked[(conn, index)] = tracker.apply(request)
    closed = ConnectionClosed(conn=1, route="scrybe", reason="client closed", t=1.0)
    tracker.apply(closed)
    settled = tracker.take_settled(None)
    assert [(flow.conn, flow.closed_unanswered) for flow in settled] == [(1, True)]
    # Connection 1's later rows wait behind connection 2's first, still in flight.
    answer = dataclasses.replace(
        frame(b'{"jsonrpc":"2.0","id":1,"result":{}}', Direction.S2C, 0, answers=1), conn=2
    )
    owner = tracker.apply(answer)
    assert owner is asked[(2, 1)]
    rest = tracker.take_rest()
    assert [(flow.number, flow.conn, flow.closed_unanswered) for flow in rest] == [
        (2, 2, False),
        (3, 1, True),
        (4, 2, False),
        (5, 1, True),
        (6, 2, False),
    ]
