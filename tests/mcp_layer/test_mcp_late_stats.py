"""stats splits a tool call whose GOLEM answer came late: the call waited on Rhino from its
request until it gave up, and that is Rhino's time; the answer's later part is no part of the
call, and the calls after it, which read an answer already waiting, spent almost nothing on
Rhino (their own exchanges outlived them too).

The real scenario through the real `golem-proxy mcp`: the headless plugin made slow by a
script (1.5 s), the test server giving up after 0.5 s and reading answers in order
(late_session.py)."""

from __future__ import annotations

import json
from pathlib import Path

from golem_proxy.analysis.two_layers import read_tool_calls
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .late_session import SERVER, late_answer_session
from .mcp_helpers import wrapped


def test_a_late_call_is_rhinos_time_up_to_its_end_and_no_further(tmp_path: Path) -> None:
    record, stderr = tmp_path / "r.jsonl", tmp_path / "stderr"
    with PluginProcess(seed=3, extra_args=("--allow-scripts",)) as plugin:
        late_answer_session(wrapped(plugin, record, server=SERVER), record, stderr)

    calls = {call.tool: call for call in read_tool_calls(str(record)) if call.tool != "list_layers"}
    slow = calls["run_python"]
    [script] = slow.golem
    assert slow.latency is not None and script.latency is not None
    assert script.latency > slow.latency  # the scenario: Rhino answered after the call ended
    # From its request to the call's end, the server waited on Rhino: all of it Rhino's.
    waited = slow.flow.t + slow.latency - script.t
    assert abs(slow.rhino_time - waited) < 1e-6
    assert slow.server_time is not None and abs(slow.server_time - (script.t - slow.flow.t)) < 1e-6

    stats = run_cli("stats", "--json", str(record))
    assert stats.returncode == 0, stats.stderr
    tools = {row["tool"]: row for row in json.loads(stats.stdout)["tools"]}
    row = tools["run_python"]
    assert row["errors"] == 1 and row["split_calls"] == 1
    assert row["rhino_mean_ms"] == round(slow.rhino_time * 1000, 3)
    total = row["rhino_mean_ms"] + row["server_mean_ms"]
    assert abs(total - slow.latency * 1000) < 0.002  # each rounded to a microsecond
    # Far less than the script's 1.5 s: the late part is not counted.
    assert row["rhino_mean_ms"] < script.latency * 1000
    # A later call read the late answer at once: whatever its own exchange took, no more of
    # its span than it lasted went to Rhino.
    for tool in ("create_layer", "get_document_info"):
        later = tools[tool]
        assert later["rhino_mean_ms"] <= later["latency"]["max_ms"]
