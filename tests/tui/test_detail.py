"""The detail pane's summary of an MCP tool call says what the model was told: ``isError``
only when the result said so, a failure inside a success result by its own name."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from golem_core.messages import Role
from golem_core.profiles import GOLEM, MCP
from golem_proxy.analysis.flows import Flow
from golem_proxy.analysis.tool_calls import shared_with, two_layer_label
from golem_proxy.events import (
    Direction,
    FrameSeen,
    GapReason,
    ObservationLost,
    RouteDown,
    ToolCallRef,
)
from golem_proxy.tui.widgets.flow_summary import flow_summary


def frame(direction: Direction, obj: Any, t: float) -> FrameSeen:
    payload = json.dumps(obj).encode()
    role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
    return FrameSeen(
        conn=1, route="mcp", direction=direction, index=0, t=t, size=len(payload),
        payload=payload, message=MCP.parse(payload, role),
    )  # fmt: skip


def tool_call(result: Any) -> Flow:
    request = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "boolean_union", "arguments": {"guids": ["a"]}}}  # fmt: skip
    flow = Flow(1, 1, "mcp", request=frame(Direction.C2S, request, 1.0))
    flow.response = frame(Direction.S2C, {"jsonrpc": "2.0", "id": 3, "result": result}, 1.5)
    flow.outcome = MCP.outcome(flow.request.message, flow.response.message)  # type: ignore[union-attr]
    return flow


def tool_line(flow: Flow) -> str:
    text = flow_summary(flow, MCP).plain
    return next(line for line in text.splitlines() if line.startswith("tool call"))


def test_a_failure_inside_a_success_result_is_not_called_is_error() -> None:
    error = {"success": False, "error": {"code": "INVALID_PARAMS", "message": "one guid"}}
    result = {"content": [{"type": "text", "text": "x"}], "structuredContent": error,
              "isError": False}  # fmt: skip
    line = tool_line(tool_call(result))
    assert "isError" not in line
    assert line.endswith(tool_call(result).status(MCP))
    assert line.endswith("success: false")  # the status the table shows for it


def test_is_error_and_success_read_as_the_model_saw_them() -> None:
    failed = tool_line(tool_call({"content": [], "isError": True}))
    assert failed.endswith("isError")
    assert tool_line(tool_call({"content": []})).endswith("  ok")


def test_a_call_made_while_a_golem_route_was_down_says_why_nothing_is_under_it() -> None:
    result = {"content": [{"type": "text", "text": "Broken pipe"}], "isError": True}
    flow = tool_call(result)
    assert flow.request is not None
    flow.request = dataclasses.replace(
        flow.request, routes_down=(RouteDown(route="main", since=0.731),)
    )
    text = flow_summary(flow, MCP).plain
    (line,) = [line for line in text.splitlines() if line.startswith("  ⋯ ")]
    assert "main down since 0.731 s" in line
    assert "refused by the system" in line and "nothing of it can be seen" in line
    assert two_layer_label(flow) == 'boolean_union(guids=["a"])  ⋯ main down since 0.731 s'


def test_a_call_a_golem_route_went_down_under_says_so_and_when() -> None:
    result = {"content": [{"type": "text", "text": "Connection reset"}], "isError": True}
    flow = tool_call(result)
    assert flow.response is not None
    flow.response = dataclasses.replace(
        flow.response, routes_down=(RouteDown(route="main", since=1.204),)
    )
    text = flow_summary(flow, MCP).plain
    (line,) = [line for line in text.splitlines() if line.startswith("  ⋯ ")]
    assert "stopped listening while it was in flight (main at 1.204 s" in line
    assert "tried there after that was refused by the system" in line
    assert "made while" not in line
    assert two_layer_label(flow) == 'boolean_union(guids=["a"])  ⋯ main went down at 1.204 s'


def test_a_call_answered_in_a_frame_too_large_to_observe_says_so() -> None:
    """Not ``pending``, not unanswered: answered, how is not known (`Flow.answered_in`)."""
    flow = tool_call({"content": []})
    flow.response, flow.outcome = None, None
    flow.answered_in = ObservationLost(
        conn=1, route="mcp", direction=Direction.S2C, t=2.5, reason=GapReason.FRAME_TOO_LARGE,
        size=40_000_124, detail="a 40000124-byte frame", answers=0,
    )  # fmt: skip
    text = flow_summary(flow, MCP).plain
    assert "answered (unobserved:frame-too-large)" in text
    assert "by a 40000124-byte frame too large to observe" in text


def test_a_huge_method_is_cut_in_the_summary_as_in_the_table() -> None:
    """A hostile client's 200,000-character method filled the pane's top with it."""
    request = {"jsonrpc": "2.0", "id": 3, "method": "m" * 200_000, "params": {}}
    flow = Flow(1, 1, "mcp", request=frame(Direction.C2S, request, 1.0))
    first = flow_summary(flow, MCP).plain.splitlines()[0]
    assert len(first) < 400 and "…" in first


def test_a_request_waiting_while_the_file_is_read_says_loading_as_the_table_does() -> None:
    """The table said ``loading`` (its answer may be further on in the file), the detail
    ``pending``."""
    request = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
    flow = Flow(1, 1, "mcp", request=frame(Direction.C2S, request, 1.0))
    first = flow_summary(flow, MCP, loading=True).plain.splitlines()[0]
    assert "  loading" in first and "pending" not in first
    assert "pending" in flow_summary(flow, MCP).plain.splitlines()[0]


def test_a_tool_call_lists_the_golem_flows_it_may_have_caused_with_other_calls() -> None:
    """A GOLEM flow sent while two calls were in flight names both: the detail of each call
    listed none of them, as if the tool never reached Rhino."""
    call = tool_call({"content": []})
    refs = (
        ToolCallRef(conn=1, index=0, id=3, tool="boolean_union"),
        ToolCallRef(conn=1, index=1, id=4, tool="list_layers"),
    )
    payload = b'{"id": "g1", "method": "scene.list_layers", "params": {}}'
    asked = FrameSeen(
        conn=2, route="main", direction=Direction.C2S, index=0, t=1.2, size=len(payload),
        payload=payload, message=GOLEM.parse(payload, Role.REQUEST), tool_calls=refs,
    )  # fmt: skip
    golem = Flow(2, 2, "main", request=asked)
    assert shared_with(call, [call, golem]) == [golem]
    text = flow_summary(call, MCP, shared=[golem]).plain
    assert "? #2 scene.list_layers" in text and "ambiguous: it or another call" in text


def test_a_session_s_gap_row_names_no_route() -> None:
    """Observation stopped for the whole session: its row said ``route  conn 0``."""
    gap = ObservationLost(
        conn=0, route="", direction=Direction.C2S, t=3.0, reason=GapReason.STOPPED,
        size=0, detail="observation stopped",
    )  # fmt: skip
    flow = Flow(7, 0, "")
    flow.gap = gap
    first = flow_summary(flow, MCP).plain.splitlines()[0]
    assert "every route and connection" in first and "conn 0" not in first


def test_a_request_never_delivered_is_not_said_closed_before_an_answer() -> None:
    flow = tool_call({"content": []})
    flow.response, flow.outcome = None, None
    assert flow.request is not None
    flow.request = dataclasses.replace(flow.request, undelivered="upstream gone")
    flow.closed_unanswered = True
    text = flow_summary(flow, MCP).plain
    assert "undelivered (upstream gone)" in text
    assert "never delivered (upstream gone): nothing was asked" in text
    assert "closed before an answer" not in text
