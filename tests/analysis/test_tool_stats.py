"""`tool_stats`: a tool's row counts each call that met a GOLEM route not listening once,
whether it was made while the route was down, was in flight as it went down, or both."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from golem_core.profiles import GOLEM, MCP
from golem_proxy.analysis.flows import Flow
from golem_proxy.analysis.tool_stats import _row
from golem_proxy.analysis.two_layers import ToolCall
from golem_proxy.events import Direction, FrameSeen, RouteDown
from tests.support.frames import frame_seen


def _frame(direction: Direction, obj: dict[str, Any], t: float) -> FrameSeen:
    payload = json.dumps(obj).encode()
    return frame_seen(MCP, direction, 0, payload, route="mcp", t=t)


def _call(made: tuple[RouteDown, ...] = (), went: tuple[RouteDown, ...] = ()) -> ToolCall:
    request = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "list_layers", "arguments": {}}}  # fmt: skip
    answer = {"jsonrpc": "2.0", "id": 3, "result": {"content": [], "isError": True}}
    flow = Flow(1, 1, "mcp", request=_frame(Direction.C2S, request, 1.0))
    flow.response = _frame(Direction.S2C, answer, 1.5)
    assert flow.request is not None
    if made:
        flow.request = dataclasses.replace(flow.request, routes_down=made)
    if went:
        flow.response = dataclasses.replace(flow.response, routes_down=went)
    flow.outcome = MCP.outcome(flow.request.message, flow.response.message)
    return ToolCall(flow)


def test_a_call_that_met_a_route_down_both_ways_counts_once() -> None:
    main = (RouteDown(route="main", since=0.5),)
    gh = (RouteDown(route="gh", since=1.2),)
    calls = [_call(), _call(made=main), _call(went=gh), _call(made=main, went=gh)]
    row = _row("list_layers", calls)
    assert (row.made_while_down, row.went_down_during, row.met_route_down) == (2, 2, 3)
    data = row.to_json()
    assert (data["calls_while_down"], data["calls_went_down"], data["calls_met_route_down"]) == (
        2,
        2,
        3,
    )


def test_a_call_whose_answer_was_never_seen_is_neither_ok_nor_an_error() -> None:
    """Pending at the end, or let go past the pairing limits: its outcome is unknown, and
    the row says so rather than leave it to read as a success (calls less errors)."""
    request = {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
               "params": {"name": "list_layers", "arguments": {}}}  # fmt: skip
    pending = Flow(2, 1, "mcp", request=_frame(Direction.C2S, request, 2.0))
    let_go = Flow(3, 1, "mcp", request=_frame(Direction.C2S, request, 3.0))
    let_go.let_go = True
    closed = Flow(4, 1, "mcp", request=_frame(Direction.C2S, request, 4.0))
    closed.closed_unanswered = True
    calls = [_call(), ToolCall(pending), ToolCall(let_go), ToolCall(closed)]
    row = _row("list_layers", calls)
    assert (row.calls, row.errors, row.unknown, row.pending) == (4, 2, 2, 1)
    assert row.to_json()["unknown"] == 2


def test_time_waiting_on_a_plugin_that_never_answered_is_rhino_s() -> None:
    """The call (1.0 s to 1.5 s) sent a GOLEM request at 1.1 s that was never answered (the
    plugin died): the server waited on Rhino, or learned it was gone, until it answered the
    call; that time read as the server's own (rhino 0.0, server 500 ms)."""
    call = _call()
    asked = frame_seen(GOLEM, Direction.C2S, 0, b'{"id": "g1", "method": "debug.sleep"}', t=1.1)
    golem = Flow(2, 2, "main", request=asked)
    golem.closed_unanswered = True
    call.golem.append(golem)
    assert abs(call.rhino_time - 0.4) < 1e-9
    assert call.server_time is not None and abs(call.server_time - 0.1) < 1e-9
    # Its connection closed at 1.2 s (a reset): the wait ended there. The retry on a new
    # connection from 1.15 s to 1.45 s overlaps it: Rhino was waited on from 1.1 to 1.45 s
    # (the two were summed, and Rhino's time came out longer than the call).
    golem.unanswered_at = 1.2
    assert abs(call.rhino_time - 0.1) < 1e-9
    again = frame_seen(GOLEM, Direction.C2S, 0, b'{"id": "g2", "method": "debug.sleep"}', t=1.15)
    retry = Flow(3, 3, "main", request=again)
    retry.response = frame_seen(GOLEM, Direction.S2C, 0, b'{"id": "g2", "result": {}}', t=1.45)
    call.golem.append(retry)
    assert abs(call.rhino_time - 0.35) < 1e-9
