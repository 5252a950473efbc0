"""Flows of a JSON-RPC connection whose server speaks first: a notification is a complete row
(never pending, also when it is broken), and a server's request and the client's answer are
one row, keyed apart from the client's own requests with the same frame numbers."""

from __future__ import annotations

from golem_core.messages import Role
from golem_core.profiles import JSONRPC_NDJSON
from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.events import Direction, ExchangeCompleted, FrameSeen


def seen(payload: bytes, direction: Direction, index: int) -> FrameSeen:
    role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
    message = JSONRPC_NDJSON.parse(payload, role)
    return FrameSeen(1, "scrybe", direction, index, 0.1 * index, len(payload) + 1, payload, message)


def test_notifications_are_complete_rows_and_server_requests_pair_with_their_answer() -> None:
    tracker = FlowTracker(JSONRPC_NDJSON)
    note = seen(b'{"jsonrpc":"2.0","method":"notifications/message"}', Direction.S2C, 0)
    broken = seen(b'{"jsonrpc":"1.0","method":"tick"}', Direction.S2C, 1)
    asked = seen(b'{"jsonrpc":"2.0","id":0,"method":"ping"}', Direction.S2C, 2)
    call = seen(b'{"jsonrpc":"2.0","id":0,"method":"state"}', Direction.C2S, 0)
    answer = seen(b'{"jsonrpc":"2.0","id":0,"result":{}}', Direction.C2S, 1)
    for event in (note, broken, asked, call, answer):
        tracker.apply(event)
    outcome = JSONRPC_NDJSON.outcome(asked.message, answer.message)
    flow = tracker.apply(ExchangeCompleted(1, "scrybe", asked, answer, outcome))
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
    settled = rows[:3]
    assert tracker.take_settled(None) == settled
