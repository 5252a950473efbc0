"""End to end: the `mcp` package's stdio client drives the test FastMCP server through
``golem-proxy mcp --record`` to the headless plugin, and the same calls run directly against
an identical plugin. The model must get the same results, and the recording must say which
tool call caused each GOLEM flow, with observation in the wrapper's process and in a process
of its own (``--observer child-process``: both hops handed on through one pipe)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem_proxy.analysis.tool_calls import LAYER_GOLEM, ToolCallIndex, mcp_routes
from golem_proxy.analysis.trace import open_flows
from golem_proxy.analysis.two_layers import read_tool_calls, read_two_layers
from golem_proxy.events import FrameSeen
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .mcp_helpers import CALLS, ROOT, SERVER_COMMAND, call_tools, direct_env, environment, wrapped

# The GOLEM methods each call causes, in order (the first call also opens the connection).
EXPECTED = {
    "list_layers": ["ping", "scene.list_layers"],
    "create_layer": ["scene.create_layer"],
    "layer_report": ["scene.create_layer", "scene.list_layers"],
    "broken_tool": ["scene.no_such_method"],
    # The Grasshopper socket has no ping: the connect-time ping fails and so does the tool.
    "gh_ping": ["ping"],
    "big_text": [],
}


@pytest.fixture(scope="module", params=["in-process", "child-process"])
def session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[list, list, Path]]:
    """The calls made directly and through the wrapper (two plugins with the same seed),
    and the wrapper's recording, observed where the parameter says."""
    record = tmp_path_factory.mktemp("mcp") / "session.jsonl"
    observer = ("--observer", request.param)
    with PluginProcess(seed=7) as first, PluginProcess(seed=7) as second:
        direct = call_tools(SERVER_COMMAND, direct_env(first), CALLS)
        proxied = call_tools(wrapped(second, record, *observer), environment(), CALLS)
    yield direct, proxied, record


def test_every_tool_result_is_the_direct_runs(session: tuple[list, list, Path]) -> None:
    direct, proxied, _ = session
    assert proxied == direct
    assert [failed for failed, _ in proxied] == [False, False, False, True, True, False]


def test_every_golem_flow_names_the_tool_call_that_caused_it(
    session: tuple[list, list, Path],
) -> None:
    _, _, record = session
    calls = read_tool_calls(str(record))
    assert [call.tool for call in calls] == [name for name, _ in CALLS]
    for call in calls:
        assert [flow.method for flow in call.golem] == EXPECTED[call.tool], call.tool
    assert [call.is_error for call in calls] == [False, False, False, True, True, False]
    failing = next(call for call in calls if call.tool == "broken_tool")
    assert [flow.method for flow in failing.failed_golem] == ["scene.no_such_method"]


def test_no_golem_frame_is_left_without_a_decision(session: tuple[list, list, Path]) -> None:
    _, _, record = session
    recording = read_recording(str(record))
    golem = [e for e in recording.events if isinstance(e, FrameSeen) and e.route != "mcp"]
    assert golem
    assert all(frame.tool_calls is not None and len(frame.tool_calls) == 1 for frame in golem)
    with open_flows(str(record)) as reader:
        index = ToolCallIndex(mcp_routes(reader.route_profiles))
        flows = list(reader.flows())
    for flow in flows:
        index.note(flow)
        if index.layer(flow) == LAYER_GOLEM:
            assert index.attribution(flow).state == "call"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env=environment(COLUMNS="160"))


def show_json(record: Path, *args: str) -> list[dict]:
    done = cli("show", "--json", *args, str(record))
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_show_json_names_each_golem_flows_tool_call(session: tuple[list, list, Path]) -> None:
    _, _, record = session
    flows = show_json(record)
    assert {flow["layer"] for flow in flows} == {"mcp", "golem"}
    by_number = {flow["number"]: flow for flow in flows}
    calls = [flow for flow in flows if flow.get("tool") is not None]
    assert [(c["tool"], c["is_error"]) for c in calls] == [
        (name, name in ("broken_tool", "gh_ping")) for name, _ in CALLS
    ]
    seen: dict[str, list[str]] = {name: [] for name, _ in CALLS}
    for flow in flows:
        if flow["layer"] == "golem":
            assert flow["attribution"] == "call"
            seen[by_number[flow["tool_call"]]["tool"]].append(flow["method"])
    assert seen == EXPECTED


def test_show_lists_tool_calls_with_their_golem_flows_under_them(
    session: tuple[list, list, Path],
) -> None:
    _, _, record = session
    done = cli("show", str(record))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = next(n for n, line in enumerate(lines) if "broken_tool()" in line)
    assert "isError" in lines[at]
    assert "↳ scene.no_such_method" in lines[at + 1]
    assert "APPLICATION_ERROR" in lines[at + 1]
    assert any('layer_report(name="B")' in line for line in lines)
    mcp_only = cli("show", "--layer", "mcp", str(record)).stdout
    assert "↳" not in mcp_only and "layer_report" in mcp_only


def test_filters_by_tool_and_layer(session: tuple[list, list, Path]) -> None:
    _, _, record = session
    report = show_json(record, "-f", "~tool ^layer_report$")
    assert [flow.get("tool") or flow["method"] for flow in report] == [
        "layer_report",
        "scene.create_layer",
        "scene.list_layers",
    ]
    assert {flow["layer"] for flow in show_json(record, "-f", "~layer mcp")} == {"mcp"}


def test_a_catalogue_never_replaces_the_recorded_attribution(
    session: tuple[list, list, Path],
) -> None:
    _, _, record = session
    catalogue = ("--catalogue", "golem-3dmcp@9819b31")
    assert all("likely_tools" not in flow for flow in show_json(record, *catalogue))
    # layer_report also sends scene.create_layer: a guess would wrongly name create_layer.
    chosen = show_json(record, *catalogue, "-f", "~tool ^create_layer$")
    assert [flow.get("tool") or flow["method"] for flow in chosen] == [
        "create_layer",
        "scene.create_layer",
    ]
    table = cli("show", *catalogue, str(record)).stdout
    assert "likely tool?" not in table and "the catalogue guesses nothing" in table


def test_stats_counts_every_failed_tool_call(session: tuple[list, list, Path]) -> None:
    _, _, record = session
    done = cli("stats", "--json", str(record))
    assert done.returncode == 0, done.stderr
    tools = {row["tool"]: row for row in json.loads(done.stdout)["tools"]}
    assert {name: row["errors"] for name, row in tools.items()} == {
        "big_text": 0,
        "broken_tool": 1,
        "create_layer": 0,
        "gh_ping": 1,
        "layer_report": 0,
        "list_layers": 0,
    }
    assert tools["layer_report"]["golem_flows"] == 2
    assert tools["big_text"]["rhino_mean_ms"] == 0
    table = cli("stats", str(record)).stdout
    assert "MCP tool calls" in table and "broken_tool" in table


def test_check_and_export_read_each_route_with_its_own_profile(
    session: tuple[list, list, Path], tmp_path: Path
) -> None:
    _, _, record = session
    checked = cli("check", str(record))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 errors, 0 warnings" in checked.stdout
    catalogue = str(ROOT / "docs" / "golem-method-catalogue.json")
    drift = cli("check", "--catalogue", catalogue, str(record)).stdout
    assert "tools/call" not in drift and "initialize" not in drift  # not the plugin's methods
    out = tmp_path / "streams"
    exported = cli("export", str(record), "--format", "streams", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    assert "differ" not in exported.stdout + exported.stderr
    index = json.loads((out / "index.json").read_text())
    assert index
    mcp_stream = (out / "conn-0001-c2s.bin").read_bytes()
    assert mcp_stream.endswith(b"\n") and b'"tools/call"' in mcp_stream


def test_query_and_export_carry_each_flows_tool_call(
    session: tuple[list, list, Path], tmp_path: Path
) -> None:
    # "Which call caused this frame" in SQL and in the exported lines, as `show --json` says.
    _, _, record = session
    sql = (
        "SELECT g.method, c.tool, g.attribution FROM flows g JOIN flows c "
        "ON c.n = g.tool_call WHERE g.layer = 'golem' ORDER BY g.n"
    )
    done = cli("query", sql, str(record), "--json")
    assert done.returncode == 0, done.stderr
    found = [json.loads(line) for line in done.stdout.splitlines()]
    rows = [(r["method"], r["tool"], r["attribution"]) for r in found]
    assert rows == [
        (method, tool, "call") for tool, methods in EXPECTED.items() for method in methods
    ]
    ids = cli("query", "SELECT DISTINCT id_type FROM flows WHERE layer = 'mcp'", str(record))
    assert "number" in ids.stdout and "string" not in ids.stdout  # MCP ids here are integers
    out = tmp_path / "flows.jsonl"
    assert cli("export", str(record), "--format", "jsonl", "--out", str(out)).returncode == 0
    shown = cli("show", str(record), "--json").stdout
    assert out.read_text() == shown


def test_verify_replays_the_golem_layer_only(session: tuple[list, list, Path]) -> None:
    _, _, record = session
    golem = [f for f in show_json(record) if f["layer"] == "golem"]
    with PluginProcess(seed=7) as plugin:
        done = cli(
            "verify", str(record), "--target", str(plugin.main), "--gh-target", str(plugin.gh)
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"all {len(golem)} exchanges match" in done.stdout + done.stderr


def test_the_two_layers_read_whole(session: tuple[list, list, Path]) -> None:
    _, _, record = session
    layers = read_two_layers(str(record))
    methods = [flow.method for flow in layers.mcp]
    assert methods[:2] == ["initialize", "notifications/initialized"]
    assert methods.count("tools/call") == len(CALLS)
    assert [call.tool for call in layers.tool_calls] == [name for name, _ in CALLS]
    assert layers.outside == [] and layers.ambiguous == []
    sent = layers.client_requests()
    assert [frame.index for frame in sent] == list(range(len(sent)))
    assert sent[0].method == "initialize"
