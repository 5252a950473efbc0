"""Flows of a JSON-RPC connection whose server speaks first: a notification is a complete row
(never pending, also when it is broken), and a server's request and the client's answer are
one row, keyed apart from the client's own requests with the same frame numbers."""

from __future__ import annotations

from typing import Optional

from golem_core.messages import Role
from golem_core.profiles import JSONRPC_NDJSON
from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.events import Direction, ExchangeCompleted, FrameSeen


def seen(
    payload: bytes, direction: Direction, index: int, answers: Optional[int] = None
) -> FrameSeen:
    """A frame as the tap publishes it: a request says whether it waits for an answer, an
    answer which request it answers."""
    role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
    message = JSONRPC_NDJSON.parse(payload, role)
    asks = message.role is Role.REQUEST
    return FrameSeen(
        conn=1,
        route="scrybe",
        direction=direction,
        index=index,
        t=0.1 * index,
        size=len(payload) + 1,
        payload=payload,
        message=message,
        expects_answer=asks and JSONRPC_NDJSON.expects_response(message),
        answers=answers,
    )


def test_notifications_are_complete_rows_and_server_requests_pair_with_their_answer() -> None:
    tracker = FlowTracker(JSONRPC_NDJSON)
    note = seen(b'{"jsonrpc":"2.0","method":"notifications/message"}', Direction.S2C, 0)
    broken = seen(b'{"jsonrpc":"1.0","method":"tick"}', Direction.S2C, 1)
    asked = seen(b'{"jsonrpc":"2.0","id":0,"method":"ping"}', Direction.S2C, 2)
    call = seen(b'{"jsonrpc":"2.0","id":0,"method":"state"}', Direction.C2S, 0)
    answer = seen(b'{"jsonrpc":"2.0","id":0,"result":{}}', Direction.C2S, 1, answers=2)
    for event in (note, broken, asked, call, answer):
        tracker.apply(event)
    outcome = JSONRPC_NDJSON.outcome(asked.message, answer.message)
    flow = tracker.apply(
        ExchangeCompleted(conn=1, route="scrybe", request=asked, response=answer, outcome=outcome)
    )
    assert flow is not None and flow.request is asked and flow.response is answer
    rows = tracker.flows
    assert [row.status(JSONRPC_NDJSON) for row in rows] == [
        "notification",
        "malformed:wrong-version",
        "ok",
        "pending",  # the client's own call, still waiting for the server
    ]
    assert [row.pending for row in rows] == [False, False, False, True]
    assert [row.asked_by_server for row in rows] == [True, True, True, False]
    # A reader streaming the same events is handed the three settled rows; the call waits.
    streaming = FlowTracker(JSONRPC_NDJSON, keep=False)
    for event in (note, broken, asked, call, answer):
        streaming.apply(event)
    streaming.apply(
        ExchangeCompleted(conn=1, route="scrybe", request=asked, response=answer, outcome=outcome)
    )
    assert [row.number for row in streaming.take_settled(None)] == [1, 2, 3]
    assert [row.number for row in streaming.take_rest()] == [4]
