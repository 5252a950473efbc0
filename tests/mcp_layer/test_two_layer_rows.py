"""Rows of a two-layer session as the TUI model shows them: a tool call as tool(arguments)
with isError as its status, the GOLEM flows it caused marked under it."""

from __future__ import annotations

import json
from typing import Any

from golem_core.messages import Role
from golem_core.profiles import GOLEM, MCP, Profile
from golem_proxy.analysis.tool_calls import cause_text
from golem_proxy.events import Direction, Event, ExchangeCompleted, FrameSeen
from golem_proxy.live.attribution import ToolCallTracker
from golem_proxy.tui.model import SessionModel
from golem_proxy.tui.render import flow_label


def frame(profile: Profile, conn: int, route: str, direction: Direction, obj: Any) -> FrameSeen:
    payload = json.dumps(obj).encode()
    role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
    message = profile.parse(payload, role)
    return FrameSeen(conn, route, direction, 0, 0.0, len(payload), payload, message)


def session() -> list[Event]:
    tracker = ToolCallTracker(MCP)
    params = {"name": "create_box", "arguments": {"width": 2}}
    call = frame(
        MCP,
        1,
        "mcp",
        Direction.C2S,
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": params},
    )
    tracker.watch(call)
    request = tracker.annotate(
        frame(
            GOLEM,
            2,
            "main",
            Direction.C2S,
            {"id": "u", "method": "geometry.create_box", "params": {}},
        )
    )
    error = {"code": -32000, "message": "boom"}
    response = tracker.annotate(
        frame(GOLEM, 2, "main", Direction.S2C, {"id": "u", "result": None, "error": error})
    )
    result = {
        "content": [{"type": "text", "text": "Error executing tool create_box: boom"}],
        "isError": True,
    }
    answer = frame(MCP, 1, "mcp", Direction.S2C, {"jsonrpc": "2.0", "id": 4, "result": result})
    tracker.watch(answer)
    return [
        call,
        request,
        response,
        ExchangeCompleted(2, "main", request, response),
        answer,
        ExchangeCompleted(1, "mcp", call, answer),
    ]


def test_the_model_shows_a_tool_call_over_the_frames_it_caused() -> None:
    model = SessionModel(GOLEM)
    model.apply(session())
    tool_call, golem = model.flows
    assert flow_label(tool_call) == "create_box(width=2)"
    assert model.status(tool_call) == "isError"
    assert flow_label(golem) == "  ↳ geometry.create_box"
    assert cause_text(golem) == "caused by tool call create_box (MCP id 4)"
