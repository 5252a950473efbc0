"""Rows of a two-layer session as the TUI model shows them: a tool call as tool(arguments)
with isError as its status, the GOLEM flows it caused marked under it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from golem_core.profiles import GOLEM, MCP, Profile
from golem_proxy.analysis.tool_calls import cause_text
from golem_proxy.events import (
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    ExchangeCompleted,
    FrameSeen,
)
from golem_proxy.live.attribution import ToolCallTracker
from golem_proxy.live.connection_attribution import ConnectionAttribution
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo
from golem_proxy.tui.model import SessionModel
from golem_proxy.tui.payloads import in_recording, payload_of
from golem_proxy.tui.render import flow_label
from tests.support.frames import frame_seen
from tests.tui.helpers import recording_app, run, select


def frame(profile: Profile, conn: int, route: str, direction: Direction, obj: Any) -> FrameSeen:
    asks = direction is Direction.C2S
    # Each connection asks once: a request waits for its answer, the answer names frame 0.
    return frame_seen(
        profile,
        direction,
        0,
        json.dumps(obj).encode(),
        conn=conn,
        route=route,
        expects_answer=asks,
        answers=None if asks else 0,
    )


def completed(profile: Profile, request: FrameSeen, response: FrameSeen) -> ExchangeCompleted:
    """The exchange the tap publishes once ``response`` answers ``request``."""
    return ExchangeCompleted(
        conn=request.conn,
        route=request.route,
        request=request,
        response=response,
        outcome=profile.outcome(request.message, response.message),
    )


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
        completed(GOLEM, request, response),
        answer,
        completed(MCP, call, answer),
    ]


def test_the_model_shows_a_tool_call_over_the_frames_it_caused() -> None:
    model = SessionModel(GOLEM)
    model.apply(session())
    tool_call, golem = model.flows
    assert flow_label(tool_call) == "create_box(width=2)"
    assert model.status(tool_call) == "isError"
    assert flow_label(golem) == "  ↳ geometry.create_box"
    assert cause_text(golem) == "caused by tool call create_box (MCP id 4)"
    # Named by its row, as show names it, where the model finds it.
    assert model.call_rows(golem) == {(tool_call.conn, tool_call.request.index): 1}  # type: ignore[union-attr]
    assert (
        cause_text(golem, model.call_rows(golem)) == "caused by tool call #1 create_box (MCP id 4)"
    )
    assert model.caused_by(tool_call) == [golem]
    assert model.caused_by(golem) == []


def test_the_tui_detail_of_a_tool_call_lists_the_golem_flows_it_caused(tmp_path: Path) -> None:
    path = tmp_path / "two-layers.jsonl"
    routes = [
        RouteInfo("main", "127.0.0.1:1", "127.0.0.1:2"),
        RouteInfo("mcp", "stdio", "server", MCP.name),
    ]
    with RecordingWriter.create(str(path), Header.new(GOLEM.name, routes)) as writer:
        for event in session():
            writer.write(event)

    async def body() -> None:
        async with recording_app(str(path)) as (app, pilot):
            await select(pilot, 0)
            text = app.detail.text()
            assert "tool call create_box(width=2)  isError" in text
            assert "↳ #2 geometry.create_box" in text
            await select(pilot, 1)
            assert "caused by tool call #1 create_box (MCP id 4)" in app.detail.text()
            # A tool call is not sent to the plugin (r) nor copied as a GOLEM call (Y).
            await select(pilot, 0)
            for key in ("r", "Y"):
                await pilot.press(key)
                notes = [note.message for note in app._notifications]
                assert "flow 1 is on route mcp, the MCP hop" in notes[-1], notes
            # o folds the call's GOLEM flows away under its row, and opens them again.
            await select(pilot, 0)
            await pilot.press("o")
            assert list(app.model.view) == [0]
            assert app.model.label(app.model.flows[0]) == "▸ create_box(width=2)"
            await pilot.press("o")
            assert list(app.model.view) == [0, 1]
            await select(pilot, 1)
            await pilot.press("o")  # not a tool call: nothing folds
            assert list(app.model.view) == [0, 1]

    run(body())


REFUSED = "upstream 127.0.0.1:9876 unreachable: Connection refused"


def refused_session() -> list[Event]:
    """A tool call whose GOLEM connection the plugin refused: nothing crossed it."""
    tracker = ToolCallTracker(MCP)
    connections = ConnectionAttribution(tracker)
    params = {"name": "list_layers", "arguments": {}}
    call = frame(
        MCP,
        1,
        "mcp",
        Direction.C2S,
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params},
    )
    tracker.watch(call)
    opened = ConnectionOpened(conn=2, route="main", client="c", upstream="u", t=0.1)
    connections.opened(opened)
    closed = connections.closed(
        ConnectionClosed(conn=2, route="main", reason=REFUSED, t=0.2, abnormal=True)
    )
    result = {"content": [{"type": "text", "text": "Connection reset by peer"}], "isError": True}
    answer = frame(MCP, 1, "mcp", Direction.S2C, {"jsonrpc": "2.0", "id": 5, "result": result})
    return [call, opened, closed, answer, completed(MCP, call, answer)]


def test_a_connection_that_carried_nothing_is_a_row_under_the_call_it_failed(
    tmp_path: Path,
) -> None:
    model = SessionModel(GOLEM)
    model.apply(refused_session())
    tool_call, failed = model.flows
    assert flow_label(failed) == f"  ↳ ✗ connection: {REFUSED}"
    assert model.status(failed) == "failed" and failed.is_error
    assert cause_text(failed) == "caused by tool call list_layers (MCP id 5)"
    assert model.caused_by(tool_call) == [failed]
    path = tmp_path / "refused.jsonl"
    routes = [
        RouteInfo("main", "127.0.0.1:1", "127.0.0.1:2"),
        RouteInfo("mcp", "stdio", "server", MCP.name),
    ]
    with RecordingWriter.create(str(path), Header.new(GOLEM.name, routes)) as writer:
        for event in refused_session():
            writer.write(event)

    async def body() -> None:
        async with recording_app(str(path)) as (app, pilot):
            await select(pilot, 0)
            assert f"↳ #2 ✗ connection: {REFUSED} failed" in app.detail.text()
            await select(pilot, 1)
            text = app.detail.text()
            assert f"✗ connection: {REFUSED}" in text and "before a byte crossed it" in text
            assert "caused by tool call #1 list_layers (MCP id 5)" in text
            await select(pilot, 0)
            await pilot.press("o")  # folded away under its call, as a GOLEM flow is
            assert list(app.model.view) == [0]

    run(body())


def test_a_tool_call_answered_with_a_large_image_reads_it_back_from_the_file(
    tmp_path: Path,
) -> None:
    """`tui FILE` on a two-layer recording leaves a tool call's 200 KB image in the file
    (tui/payloads.py `LeftInFile`): the row is still the tool call with its status, and the
    bytes read back are the answer's."""
    tracker = ToolCallTracker(MCP)
    call = frame(
        MCP,
        1,
        "mcp",
        Direction.C2S,
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "capture_viewport", "arguments": {}},
        },
    )
    tracker.watch(call)
    image = {"type": "image", "data": "iVBORw0KGgo" + "A" * 200_000, "mimeType": "image/png"}
    result = {"content": [image], "isError": False}
    answer = frame(MCP, 1, "mcp", Direction.S2C, {"jsonrpc": "2.0", "id": 7, "result": result})
    tracker.watch(answer)
    path = tmp_path / "two-layers.jsonl"
    routes = [
        RouteInfo("main", "127.0.0.1:1", "127.0.0.1:2"),
        RouteInfo("mcp", "stdio", "server", MCP.name),
    ]
    with RecordingWriter.create(str(path), Header.new(GOLEM.name, routes)) as writer:
        for event in (call, answer, completed(MCP, call, answer)):
            writer.write(event)

    async def body() -> None:
        async with recording_app(str(path)) as (app, pilot):
            await select(pilot, 0)
            (flow,) = app.model.flows
            assert flow_label(flow) == "capture_viewport()"
            assert app.model.status(flow) == "ok"
            assert in_recording(flow.response) is not None
            assert flow.response is not None and payload_of(flow.response) == answer.payload
            # Under 1 MiB, the pane shows the image read back, shortened as a kept one is.
            assert flow.response.message.obj["result"]["content"][0]["data"].endswith(
                " bytes elided>"
            )
            assert "… (200,011 chars)" in app.detail.text()
            # Filtered as `show --filter` reads it: the MCP layer's, its answer written as MCP
            # peers write it (compact), as the answer kept in memory would read.
            for text in ("~layer mcp", '~s "isError":false', "~tool capture"):
                app.model.set_filter(text)
                assert list(app.model.view) == [0], text
            app.model.set_filter("~layer golem")
            assert list(app.model.view) == []

    run(body())
