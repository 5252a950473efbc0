"""``golem-proxy mcp --redact`` over both layers: a tool call's argument a rule replaces on
the MCP hop is what the server sends the plugin in its GOLEM request, and what the plugin
lists afterwards. It is hidden there too: a secret is one on every connection and route of
the session, the MCP hop's and the plugin's (it was recorded in clear in the GOLEM frames)."""

from __future__ import annotations

import json
from pathlib import Path

from golem_proxy.live.redact import REDACTED
from golem_proxy.testing.plugin_process import PluginProcess

from .mcp_helpers import call_tools, environment, wrapped

SECRET = "Hunter2-Layer"


def test_a_tool_argument_redacted_on_the_mcp_hop_is_hidden_in_the_golem_frames(
    tmp_path: Path,
) -> None:
    record = tmp_path / "session.jsonl"
    rule = ("--redact", "tools/call:params.arguments.name")
    calls = [("create_layer", {"name": SECRET}), ("list_layers", {})]
    with PluginProcess(seed=7) as plugin:
        outcomes = call_tools(wrapped(plugin, record, *rule), environment(), calls)
    # The model got the real answers: redaction is of what is recorded.
    assert SECRET in json.dumps(outcomes[1])
    text = record.read_text()
    assert SECRET not in text
    frames = [json.loads(line) for line in text.splitlines()[1:]]
    golem = [f for f in frames if f.get("kind") == "frame" and f["route"] == "main"]
    create = next(f for f in golem if f.get("method") == "scene.create_layer")
    assert create["msg"]["params"]["name"] == REDACTED
    assert create["redacted"] == ["echo"]
    assert create["tool_calls"][0]["tool"] == "create_layer"
    listed = [f for f in golem if f["dir"] == "s2c" and "echo" in f.get("redacted", [])]
    assert len(listed) == 2  # the created layer's answer, and the list after it
