"""Attribution at its edges, end to end: tool calls that overlap are "ambiguous" with every
candidate named, and the rule holds when the GOLEM routes decode on the forwarding path
(--enforce-limits); a 16 MiB tool result crosses byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from golem_proxy.analysis.tool_calls import cause_text
from golem_proxy.analysis.two_layers import read_tool_calls, read_two_layers
from golem_proxy.events import FrameSeen
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import reap, run_cli

from .mcp_helpers import INITIALIZE, call_tools, environment, rpc_line, start_piped, wrapped


def tool_call(ident: int, name: str, arguments: dict[str, Any]) -> bytes:
    params = {"name": name, "arguments": arguments}
    return rpc_line({"id": ident, "method": "tools/call", "params": params})


def test_overlapping_calls_are_ambiguous_and_name_both(tmp_path: Path) -> None:
    record, log = tmp_path / "r.jsonl", tmp_path / "live.log"
    with PluginProcess(seed=3) as plugin:
        process = start_piped(wrapped(plugin, record, "--log", str(log)))
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(INITIALIZE)
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 0
            # Both calls in one write: both are in flight before the server sends anything.
            initialized = rpc_line({"method": "notifications/initialized"})
            process.stdin.write(
                initialized
                + tool_call(1, "list_layers", {})
                + tool_call(2, "create_layer", {"name": "Z"})
            )
            process.stdin.flush()
            answers = {json.loads(process.stdout.readline())["id"] for _ in range(2)}
            assert answers == {1, 2}
            process.stdin.close()
            assert process.wait(30) == 0
        finally:
            reap(process)
            process.stdout.close()
    frames = [
        e
        for e in read_recording(str(record)).events
        if isinstance(e, FrameSeen) and e.route == "main"
    ]
    assert frames
    for frame in frames:
        assert frame.tool_calls is not None
        tools = [call.tool for call in frame.tool_calls]
        # The server serialises the calls: once the first is answered, the second owns its
        # frames; before that, both were in flight and the frame says so.
        assert tools in (["list_layers", "create_layer"], ["create_layer"])
    assert any(len(frame.tool_calls or ()) == 2 for frame in frames)
    calls = read_tool_calls(str(record))
    # Ambiguous flows belong to no call: nothing is guessed.
    ambiguous = [f for f in frames if len(f.tool_calls or ()) == 2 and f.direction.value == "c2s"]
    attributed = sum(len(call.golem) for call in calls)
    assert attributed == sum(1 for f in frames if f.direction.value == "c2s") - len(ambiguous)
    # The live log has no rows to name the candidates by (show: `#3|#4`): each by its tool
    # and MCP id (overlapping calls may share a tool), in the words the TUI's detail of the
    # flow names them beside their rows, so the two can be matched.
    candidates = [line for line in log.read_text().splitlines() if "⟵ ambiguous: " in line]
    named = "list_layers (MCP id 1) | create_layer (MCP id 2)"
    assert candidates and all(line.endswith(f"⟵ ambiguous: {named}") for line in candidates), (
        candidates
    )
    detail = cause_text(read_two_layers(str(record)).ambiguous[0], {(1, 2): 3, (1, 3): 4})
    assert detail == "ambiguous: one of #3 list_layers (MCP id 1), #4 create_layer (MCP id 2)"
    # Each call knows the flows it shares, and its Rhino time is not guessed from its own.
    for call in calls:
        assert len(call.shared) == len(ambiguous)
    done = run_cli("stats", str(record), "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["tool"]: row for row in json.loads(done.stdout)["tools"]}
    assert {row["shared_golem_flows"] for row in rows.values()} == {len(ambiguous)}
    assert rows["list_layers"]["split_calls"] == 0
    assert rows["list_layers"]["rhino_mean_ms"] is None
    table = " ".join(run_cli("stats", str(record), env=environment(COLUMNS="200")).stdout.split())
    assert "shared" in table and "each names every candidate" in table


def test_attribution_holds_when_golem_frames_are_decoded_inline(tmp_path: Path) -> None:
    record, log = tmp_path / "r.jsonl", tmp_path / "live.log"
    calls = [("list_layers", {}), ("layer_report", {"name": "Q"}), ("broken_tool", {})]
    with PluginProcess(seed=4) as plugin:
        options = ("--enforce-limits", "--log", str(log))
        call_tools(wrapped(plugin, record, *options), environment(), calls)
    found = read_tool_calls(str(record))
    assert [[flow.method for flow in call.golem] for call in found] == [
        ["ping", "scene.list_layers"],
        ["scene.create_layer", "scene.list_layers"],
        ["scene.no_such_method"],
    ]
    # The live log names the tool and says which call failed.
    lines = log.read_text().splitlines()
    failed = next(line for line in lines if "tools/call broken_tool" in line)
    assert "isError" in failed
    golem = next(line for line in lines if "scene.no_such_method" in line)
    assert golem.endswith("⟵ broken_tool")
    assert not any("malformed" in line for line in lines)  # notifications are no problem


def test_a_16_mib_result_crosses_whole(tmp_path: Path) -> None:
    record = tmp_path / "r.jsonl"
    # FastMCP sends a text result twice (content and structuredContent): a 16 MiB line.
    size = 8 * 1024 * 1024
    with PluginProcess(seed=5) as plugin:
        [(failed, content)] = call_tools(
            wrapped(plugin, record), environment(), [("big_text", {"size": size})]
        )
    assert not failed
    assert content[0]["text"] == "x" * size
    [call] = read_tool_calls(str(record))
    assert call.tool == "big_text" and not call.is_error
    assert call.flow.response is not None and call.flow.response.size > 2 * size


def test_a_fault_on_the_golem_layer_shows_under_the_tool_call_that_failed(tmp_path: Path) -> None:
    record = tmp_path / "r.jsonl"
    fault = "error:code=-32000,message=busy,method=scene.create_layer"
    with PluginProcess(seed=6) as plugin:
        [listed, created] = call_tools(
            wrapped(plugin, record, "--fault", fault, "--fault-seed", "1"),
            environment(),
            [("list_layers", {}), ("create_layer", {"name": "F"})],
        )
    assert not listed[0]
    assert created[0] and "busy" in created[1][0]["text"]
    calls = read_tool_calls(str(record))
    assert [call.is_error for call in calls] == [False, True]
    assert [flow.method for flow in calls[1].failed_golem] == ["scene.create_layer"]
    assert calls[1].failed_golem[0].faults  # the injected fault is on the flow it hit
