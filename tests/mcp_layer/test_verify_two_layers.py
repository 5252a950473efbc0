"""``verify --update`` of a session recorded through ``golem-proxy mcp``: verify re-sends the
GOLEM layer's requests to a live plugin, and the update writes each live answer into its own
GOLEM frame, which keeps the tool call it belongs to; the MCP hop's lines are left as they
were (its exchanges are another layer's, never an answer verify got)."""

from __future__ import annotations

import json
from pathlib import Path

from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .mcp_helpers import recorded_session

CALLS = [("list_layers", {}), ("create_layer", {"name": "A"}), ("layer_report", {"name": "B"})]


def test_update_writes_the_golem_answer_of_its_tool_call_and_leaves_the_mcp_hop(
    tmp_path: Path,
) -> None:
    trace = recorded_session(tmp_path / "session.jsonl", CALLS)
    lines = trace.read_text().splitlines(keepends=True)
    # The recorded plugin said its default layer held an object: the live one holds none.
    at = next(
        i
        for i, line in enumerate(lines)
        if '"route":"main","dir":"s2c"' in line and '"object_count": 0' in line
    )
    lines[at] = lines[at].replace('"object_count": 0', '"object_count": 3', 1)
    trace.write_text("".join(lines))
    with PluginProcess(seed=7) as plugin:
        done = run_cli("verify", str(trace), "--target", str(plugin.main), "--update", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verify: updated 1 response in" in done.stderr
    after = trace.read_text().splitlines(keepends=True)
    assert len(after) == len(lines)
    changed = [i for i, (old, new) in enumerate(zip(lines, after)) if old != new]
    assert changed == [at]
    frame = json.loads(after[at])
    assert frame["msg"]["result"]["layers"][0]["object_count"] == 0
    assert frame["tool_calls"] == json.loads(lines[at])["tool_calls"]
    assert frame["tool_calls"][0]["tool"] == "list_layers"
    # A tool call is no request to send the plugin again.
    refused = run_cli("resend", str(trace), "3", "--target", "127.0.0.1:9")
    assert refused.returncode == 2
    assert "flow 3 is on route mcp, the MCP hop: resend sends to the plugin" in refused.stderr
    checked = run_cli("check", str(trace), "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert report["complete"] is True and report["errors"] == 0
