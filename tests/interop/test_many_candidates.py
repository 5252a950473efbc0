"""A GOLEM flow sent while 300 tool calls were in flight: every view names its first
candidates and counts the rest (`candidates_text`), so that no row or line grows with the
number of calls in flight (``show``'s table was 1,477 characters wide on every row, the live
log's line 7,098); ``show --json`` and ``query`` keep every candidate."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from golem_core.profiles import GOLEM, MCP
from golem_proxy.analysis.late_answers import late_words
from golem_proxy.analysis.tool_calls import cause_text
from golem_proxy.analysis.two_layers import read_two_layers
from golem_proxy.events import Direction, Event, FrameSeen
from golem_proxy.live.attribution import ToolCallTracker
from golem_proxy.live.log import EventLog
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo, read_recording
from tests.support.cli_helpers import run_cli

from .query_helpers import query_lines
from .test_query_tool_call_candidates import _exchange, _frame

CALLS = 300


def calls_in_flight(path: Path, count: int = CALLS) -> str:
    """A `golem-proxy mcp` recording: ``count`` tool calls in flight (flows 1 to 300), one
    GOLEM flow sent meanwhile (301, ambiguous), then the calls answered."""
    tracker = ToolCallTracker(MCP)
    events: list[Event] = []
    calls = []
    for index in range(count):
        params = {"name": f"tool_{index + 1}", "arguments": {}}
        asked = {"jsonrpc": "2.0", "id": index + 1, "method": "tools/call", "params": params}
        call = _frame(MCP, 1, "mcp", Direction.C2S, index, asked)
        tracker.watch(call)
        calls.append(call)
    events += calls
    request = {"id": "g0", "method": "scene.list_layers", "params": {}}
    sent = tracker.annotate(_frame(GOLEM, 2, "main", Direction.C2S, 0, request))
    came = tracker.annotate(
        _frame(GOLEM, 2, "main", Direction.S2C, 0, {"id": "g0", "result": [], "error": None})
    )
    events += [sent, came, _exchange(GOLEM, sent, came)]
    for index, call in enumerate(calls):
        answered = {"jsonrpc": "2.0", "id": index + 1, "result": {"content": []}}
        answer = _frame(MCP, 1, "mcp", Direction.S2C, index, answered)
        tracker.watch(answer)
        events += [answer, _exchange(MCP, call, answer)]
    routes = [
        RouteInfo("main", "127.0.0.1:1", "127.0.0.1:2"),
        RouteInfo("mcp", "stdio", "server", MCP.name),
    ]
    with RecordingWriter.create(str(path), Header.new(GOLEM.name, routes)) as writer:
        for event in events:
            writer.write(event)
    return str(path)


def test_show_names_three_candidates_and_counts_the_rest(tmp_path: Path) -> None:
    recording = calls_in_flight(tmp_path / "r.jsonl")
    shown = run_cli("show", recording)
    assert shown.returncode == 0, shown.stderr
    assert "? scene.list_layers (ambiguous: #1|#2|#3 … and 297 more)" in shown.stdout
    assert max(len(line) for line in shown.stdout.splitlines()) < 200
    as_json = run_cli("show", recording, "--json")
    flows = [json.loads(line) for line in as_json.stdout.splitlines()]
    (ambiguous,) = [flow for flow in flows if flow.get("attribution") == "ambiguous"]
    assert ambiguous["tool_call_candidates"] == list(range(1, CALLS + 1))
    found = query_lines("SELECT tool_call_candidates FROM flows WHERE n = 301", recording)
    assert json.loads(found[0])["tool_call_candidates"] == list(range(1, CALLS + 1))


def test_the_live_log_and_the_tuis_detail_name_three_and_count_the_rest(
    tmp_path: Path,
) -> None:
    recording = calls_in_flight(tmp_path / "r.jsonl")
    buffer = io.StringIO()
    log = EventLog(Console(file=buffer, width=200), GOLEM)
    for event in read_recording(recording).events:
        if event.route == "main":
            log.handle(event)
    lines = [line for line in buffer.getvalue().splitlines() if "ambiguous" in line]
    named = "tool_1 (MCP id 1) | tool_2 (MCP id 2) | tool_3 (MCP id 3) … and 297 more"
    assert lines and all(line.endswith(f"⟵ ambiguous: {named}") for line in lines), lines
    assert max(len(line) for line in buffer.getvalue().splitlines()) < 250
    (flow,) = read_two_layers(recording).ambiguous
    rows = {(1, index): index + 1 for index in range(CALLS)}
    assert cause_text(flow, rows) == (
        "ambiguous: one of #1 tool_1 (MCP id 1), #2 tool_2 (MCP id 2), #3 tool_3 (MCP id 3)"
        " … and 297 more"
    )
    refs = next(e for e in read_recording(recording).events if isinstance(e, FrameSeen)
                and e.route == "main").tool_calls  # fmt: skip
    assert refs is not None and len(refs) == CALLS
    assert late_words(refs, rows) == "late: after its tool calls #1, #2, #3 … and 297 more returned"


def test_one_more_than_three_is_named_rather_than_counted(tmp_path: Path) -> None:
    (flow,) = read_two_layers(calls_in_flight(tmp_path / "r.jsonl", 4)).ambiguous
    assert cause_text(flow) == (
        "ambiguous: one of tool_1 (MCP id 1), tool_2 (MCP id 2), tool_3 (MCP id 3), "
        "tool_4 (MCP id 4)"
    )
