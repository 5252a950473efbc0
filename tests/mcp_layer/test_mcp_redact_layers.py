"""``golem-proxy mcp --redact`` over both layers: a tool call's argument a rule replaces on
the MCP hop is what the server sends the plugin in its GOLEM request, and what the plugin
lists afterwards. It is hidden there too: a secret is one on every connection and route of
the session, the MCP hop's and the plugin's (it was recorded in clear in the GOLEM frames)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from golem_proxy.live.redact import REDACTED
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .mcp_helpers import SERVER_COMMAND, call_tools, environment, wrapped


@pytest.mark.parametrize("secret", ["Hunter2-Layer", "שכבה-סודית"])
def test_a_tool_argument_redacted_on_the_mcp_hop_is_hidden_in_the_golem_frames(
    tmp_path: Path, secret: str
) -> None:
    """The tool returns the plugin's answer as JSON text, which ``json.dumps`` writes with
    every non-ASCII character escaped: the second secret comes back in the MCP result as
    ``\\u05e9…``, and is hidden in that form too."""
    record = tmp_path / "session.jsonl"
    rule = ("--redact", "tools/call:params.arguments.name")
    calls = [("create_layer", {"name": secret}), ("list_layers", {})]
    with PluginProcess(seed=7) as plugin:
        outcomes = call_tools(wrapped(plugin, record, *rule), environment(), calls)
    # The model got the real answers: redaction is of what is recorded.
    assert secret in json.loads(outcomes[1][1][0]["text"])["layers"][1]["name"]
    text = record.read_text()
    frames = [json.loads(line) for line in text.splitlines()[1:]]
    written = json.dumps(secret)[1:-1]  # as JSON text holds it: ``\\u05e9…``
    assert not [s for s in _strings(frames) if secret in s or written in s]
    golem = [f for f in frames if f.get("kind") == "frame" and f["route"] == "main"]
    create = next(f for f in golem if f.get("method") == "scene.create_layer")
    assert create["msg"]["params"]["name"] == REDACTED
    assert create["redacted"] == ["echo"]
    assert create["tool_calls"][0]["tool"] == "create_layer"
    listed = [f for f in golem if f["dir"] == "s2c" and "echo" in f.get("redacted", [])]
    assert len(listed) == 2  # the created layer's answer, and the list after it

    # Played to the same build, Rhino stood in by the redacted recording: the server now
    # writes the placeholder the stand-in answers with into its JSON text, where the proxy
    # wrote it into the recorded text: the same JSON, no difference.
    done = run_cli("mcp-verify", str(record), "--", *SERVER_COMMAND, env=environment(), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mcp-verify: all 2 tool calls match" in done.stdout


def _strings(node: Any) -> Iterator[str]:
    """Every string in ``node``, keys too."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


def test_a_rule_that_hides_only_the_golem_parameter_says_where_the_tool_call_has_it(
    tmp_path: Path,
) -> None:
    """``--redact params.code`` hides the GOLEM request's code, but the tool call that came
    first holds it under ``params.arguments``, recorded in clear: the wrapper says so when it
    starts, and names the rule that would hide it there, without guessing it in."""
    rules = ["params.code", "scripting.execute_python:params.code"]
    rules += ["tools/call:params.arguments.name", "params.arguments.text", "result.image"]
    args = [arg for rule in rules for arg in ("--redact", rule)]
    done = run_cli(
        "mcp", *args, "--record", str(tmp_path / "r.jsonl"), "--", sys.executable, "-c", "pass"
    )
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "the tool call's arguments" in line]
    assert said == [
        "golem-proxy: mcp: --redact params.code hides GOLEM's params.code; the tool call's "
        "arguments are params.arguments.*: add --redact tools/call:params.arguments.code to "
        "hide it there too",
        "golem-proxy: mcp: --redact scripting.execute_python:params.code hides GOLEM's "
        "params.code; the tool call's arguments are params.arguments.*: add --redact "
        "tools/call:params.arguments.code to hide it there too",
    ]


@pytest.mark.parametrize(
    "given",
    [
        "tools/call:params.arguments.name",  # the very rule the hint names
        "params.arguments",  # a rule above it, for every method
        "tools/call:params.arguments.*",
    ],
)
def test_the_hint_never_asks_for_a_rule_given_already(tmp_path: Path, given: str) -> None:
    """``--redact params.name`` with the rule that hides the name among a tool call's
    arguments given too: the hint told the user to add the rule they had given (or one a
    rule of theirs covers), so they would look for what they got wrong."""
    args = ["--redact", "params.name", "--redact", given]
    done = run_cli(
        "mcp", *args, "--record", str(tmp_path / "r.jsonl"), "--", sys.executable, "-c", "pass"
    )
    assert done.returncode == 0, done.stderr
    assert "the tool call's arguments" not in done.stderr
    assert "add --redact tools/call:params.arguments.name" not in done.stderr
