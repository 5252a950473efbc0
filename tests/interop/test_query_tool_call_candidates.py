"""``query``'s ``tool_call_candidates``: the tool calls an ambiguous GOLEM flow may belong to,
as ``show`` names them (``? scene.list_layers (ambiguous: #1|#2)``), from a recording and from
its Parquet export alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from golem_core.profiles import GOLEM, MCP
from golem_proxy.events import Direction, Event, ExchangeCompleted, FrameSeen
from golem_proxy.live.attribution import ToolCallTracker
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo
from tests.support.cli_helpers import run_cli
from tests.support.frames import frame_seen

from .query_helpers import query_lines


def _frame(
    profile: Any, conn: int, route: str, direction: Direction, index: int, obj: Any
) -> FrameSeen:
    asks = direction is Direction.C2S
    return frame_seen(
        profile, direction, index, json.dumps(obj).encode(), conn=conn, route=route,
        expects_answer=asks, answers=None if asks else index,
    )  # fmt: skip


def _exchange(profile: Any, request: FrameSeen, response: FrameSeen) -> ExchangeCompleted:
    return ExchangeCompleted(
        conn=request.conn, route=request.route, request=request, response=response,
        outcome=profile.outcome(request.message, response.message),
    )  # fmt: skip


def overlapping_calls(path: Path) -> str:
    """A `golem-proxy mcp` recording: two tool calls in flight (flows 1 and 2), a GOLEM flow
    sent meanwhile (3, ambiguous), the calls answered, then a GOLEM flow of no call (4)."""
    tracker = ToolCallTracker(MCP)
    events: list[Event] = []
    calls = []
    for index, tool in enumerate(("list_layers", "create_layer")):
        params = {"name": tool, "arguments": {}}
        asked = {"jsonrpc": "2.0", "id": index + 1, "method": "tools/call", "params": params}
        call = _frame(MCP, 1, "mcp", Direction.C2S, index, asked)
        tracker.watch(call)
        calls.append(call)
    events += calls

    def golem(index: int) -> list[Event]:
        request = {"id": f"g{index}", "method": "scene.list_layers", "params": {}}
        sent = tracker.annotate(_frame(GOLEM, 2, "main", Direction.C2S, index, request))
        answer = {"id": f"g{index}", "result": [], "error": None}
        came = tracker.annotate(_frame(GOLEM, 2, "main", Direction.S2C, index, answer))
        return [sent, came, _exchange(GOLEM, sent, came)]

    events += golem(0)
    for index, call in enumerate(calls):
        answered = {"jsonrpc": "2.0", "id": index + 1, "result": {"content": []}}
        answer = _frame(MCP, 1, "mcp", Direction.S2C, index, answered)
        tracker.watch(answer)
        events += [answer, _exchange(MCP, call, answer)]
    events += golem(1)
    routes = [
        RouteInfo("main", "127.0.0.1:1", "127.0.0.1:2"),
        RouteInfo("mcp", "stdio", "server", MCP.name),
    ]
    with RecordingWriter.create(str(path), Header.new(GOLEM.name, routes)) as writer:
        for event in events:
            writer.write(event)
    return str(path)


QUERY = "SELECT n, attribution, tool_call, tool_call_candidates FROM flows ORDER BY n"
EXPECTED = [
    {"n": 1, "attribution": None, "tool_call": None, "tool_call_candidates": None},
    {"n": 2, "attribution": None, "tool_call": None, "tool_call_candidates": None},
    {"n": 3, "attribution": "ambiguous", "tool_call": None, "tool_call_candidates": [1, 2]},
    {"n": 4, "attribution": "none", "tool_call": None, "tool_call_candidates": None},
]


def test_an_ambiguous_flow_names_its_candidate_calls_as_show_does(tmp_path: Path) -> None:
    recording = overlapping_calls(tmp_path / "two-layers.jsonl")
    shown = run_cli("show", recording)
    assert "? scene.list_layers (ambiguous: #1|#2)" in shown.stdout
    assert [json.loads(line) for line in query_lines(QUERY, recording)] == EXPECTED
    # The candidates joined to the calls' rows: which tools may have sent the frame.
    tools = (
        "SELECT g.n, list(c.tool ORDER BY c.n) AS tools FROM flows g, "
        "unnest(g.tool_call_candidates) AS u(k) JOIN flows c ON c.trace = g.trace AND c.n = u.k "
        "GROUP BY g.n"
    )
    assert [json.loads(line) for line in query_lines(tools, recording)] == [
        {"n": 3, "tools": ["list_layers", "create_layer"]}
    ]


def test_a_parquet_export_holds_the_candidates(tmp_path: Path) -> None:
    recording = overlapping_calls(tmp_path / "two-layers.jsonl")
    parquet = tmp_path / "flows.parquet"
    done = run_cli("export", recording, "--format", "parquet", "--out", str(parquet))
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in query_lines(QUERY, str(parquet))] == EXPECTED
    # A file exported before the column existed is still read, the column null in it.
    import duckdb

    older = tmp_path / "older.parquet"
    select = f"SELECT * EXCLUDE (tool_call_candidates) FROM read_parquet('{parquet}')"
    duckdb.sql(f"COPY ({select}) TO '{older}' (FORMAT parquet)")
    counted = "SELECT count(*) AS flows, count(tool_call_candidates) AS named FROM flows"
    assert [json.loads(line) for line in query_lines(counted, str(older))] == [
        {"flows": 4, "named": 0}
    ]
