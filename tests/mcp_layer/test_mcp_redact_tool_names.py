"""``golem-proxy mcp --redact`` and the tools' names: on the MCP hop a ``tools/call``'s
``params.name`` is the tool, not a value of the call. A rule for every method
(``params.name``, which means GOLEM's parameter) hid every tool's name, and then, as an echo,
every GOLEM method and listed tool with it as a word (``scene.«redacted»``): the log, `show`,
`stats` lost the tools, and `check` took the placeholder for a tool (a false
``arguments`` error, or ``unknown-tool`` on every call). Now such a rule leaves the names
alone, a rule scoped to ``tools/call`` hides them, and `check` never looks a placeholder up."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from golem_proxy.live.redact import REDACTED
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .mcp_helpers import Call, call_tools, environment, wrapped

TOOLS = ("create_layer", "list_layers", "big_text")
CALLS: list[Call] = [
    # A layer named like a tool: GOLEM's params.name hides it, and it recurs as a word of
    # the tool the next call names and of the GOLEM method that call makes.
    ("create_layer", {"name": "list_layers"}),
    ("list_layers", {}),
    ("big_text", {"size": 3}),
]
GOLEM_METHODS = ["ping", "scene.create_layer", "scene.list_layers"]


def _session(tmp_path: Path, *rules: str) -> list[dict[str, Any]]:
    record = tmp_path / "session.jsonl"
    options = [word for rule in rules for word in ("--redact", rule)]
    with PluginProcess(seed=7) as plugin:
        call_tools(wrapped(plugin, record, "--quiet", *options), environment(), CALLS)
    return [json.loads(line) for line in record.read_text().splitlines()[1:]]


def _frames(lines: list[dict[str, Any]], route: str, direction: str) -> list[dict[str, Any]]:
    return [
        line
        for line in lines
        if line["kind"] == "frame" and line["route"] == route and line["dir"] == direction
    ]


def _listed(lines: list[dict[str, Any]]) -> list[str]:
    [listing] = [
        line["msg"]["result"]["tools"]
        for line in _frames(lines, "mcp", "s2c")
        if "tools" in (line["msg"].get("result") or {})
    ]
    return [tool["name"] for tool in listing]


def test_a_rule_for_every_method_leaves_the_tools_and_the_golem_methods_named(
    tmp_path: Path,
) -> None:
    lines = _session(tmp_path, "params.name")
    calls = [f for f in _frames(lines, "mcp", "c2s") if f.get("method") == "tools/call"]
    assert [f["msg"]["params"]["name"] for f in calls] == list(TOOLS)
    golem = _frames(lines, "main", "c2s")
    assert [f["msg"]["method"] for f in golem] == GOLEM_METHODS
    assert [f["method"] for f in golem] == [f["msg"]["method"] for f in golem]
    assert golem[1]["msg"]["params"] == {"name": REDACTED}  # the layer, as the rule says
    assert [f["tool_calls"][0]["tool"] for f in golem[1:]] == ["create_layer", "list_layers"]
    assert _listed(lines) == [
        "list_layers",
        "create_layer",
        "layer_report",
        "broken_tool",
        "gh_ping",
        "big_text",
        "boolean_union",
    ]
    # Where the layer's name recurs as a value, it is hidden: the list the tool returned.
    texts = [
        f["msg"]["result"]["content"][0]["text"]
        for f in _frames(lines, "mcp", "s2c")
        if "content" in (f["msg"].get("result") or {})
    ]
    [text] = [text for text in texts if '"layers"' in text]
    assert REDACTED in text and "list_layers" not in text

    record = str(tmp_path / "session.jsonl")
    shown = run_cli("show", record)
    # The argument came before the GOLEM request the rule hid it in (the first start hint).
    assert 'create_layer(name="list_layers")' in shown.stdout
    assert "↳ scene.list_layers" in shown.stdout and "«redacted»()" not in shown.stdout
    checked = run_cli("check", record)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "no contract violations" in checked.stdout
    assert "not checked" not in checked.stderr


def test_a_rule_scoped_to_tools_call_hides_the_tool_and_check_does_not_look_it_up(
    tmp_path: Path,
) -> None:
    """The placeholder is no tool: not a tool missing from the listing, nor one whose
    schema the arguments miss. The call's tool is not recorded, so its arguments are not
    checked, and `check` says so once. The name, learned as a secret, is still not hidden in
    the GOLEM methods the tool makes, nor in the listing of the tools."""
    lines = _session(tmp_path, "tools/call:params.name")
    calls = [f for f in _frames(lines, "mcp", "c2s") if f.get("method") == "tools/call"]
    assert [f["msg"]["params"]["name"] for f in calls] == [REDACTED] * 3
    golem = _frames(lines, "main", "c2s")
    assert [f["msg"]["method"] for f in golem] == GOLEM_METHODS
    assert set(TOOLS) <= set(_listed(lines))
    assert not [line for line in lines if line["kind"] == "violation"]

    record = tmp_path / "session.jsonl"
    checked = run_cli("check", str(record))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "no contract violations" in checked.stdout
    assert checked.stderr.count("not checked against a tool's inputSchema") == 1
    assert "note: 3 tools/call not checked against a tool's inputSchema" in checked.stderr

    # A recording written by a version that took the placeholder for a tool holds those
    # violations as the session ran: check drops them, as it would not make them.
    old = tmp_path / "old.jsonl"
    old.write_text(_with_old_violations(record.read_text()))
    checked = run_cli("check", str(old))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "no contract violations" in checked.stdout, checked.stdout
    assert "seq" not in checked.stderr
    # The rows drop them by the same rule: show's ⚠ column and stats counted each such call.
    rows = [json.loads(line) for line in run_cli("show", "--json", str(old)).stdout.splitlines()]
    assert [row["violations"] for row in rows if row["method"] == "tools/call"] == [[]] * 3
    assert "⚠ " not in run_cli("show", str(old)).stdout
    stats = json.loads(run_cli("stats", "--json", str(old)).stdout)
    assert {row["method"]: row["with_violations"] for row in stats["methods"]}["tools/call"] == 0


def test_a_listing_with_redacted_names_builds_no_tool_of_the_placeholder(
    tmp_path: Path,
) -> None:
    """Tools listed under the placeholder: a call in clear may be any of them, so it is not
    reported unknown (nor its arguments held to the schema of a tool named «redacted»)."""
    lines = _session(tmp_path, "tools/list:result.tools.*.name")
    assert _listed(lines) == [REDACTED] * 7
    checked = run_cli("check", str(tmp_path / "session.jsonl"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "no contract violations" in checked.stdout
    assert "unknown-tool" not in checked.stdout
    assert "note: 3 tools/call not checked against a tool's inputSchema" in checked.stderr


def test_the_start_hint_says_a_rule_for_every_method_leaves_the_tool_names(
    tmp_path: Path,
) -> None:
    rules = ["params.name", "tools/call:params.name", "result.tools.*.name"]
    args = [arg for rule in rules for arg in ("--redact", rule)]
    done = run_cli(
        "mcp", *args, "--record", str(tmp_path / "r.jsonl"), "--", sys.executable, "-c", "pass"
    )
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("golem-proxy: mcp:")]
    assert said == [
        "golem-proxy: mcp: --redact params.name hides GOLEM's params.name; the tool call's "
        "arguments are params.arguments.*: add --redact tools/call:params.arguments.name to "
        "hide it there too",
        # tools/call:params.name is given: only the prompt's rule is left to suggest.
        "golem-proxy: mcp: --redact params.name leaves the prompt a prompts/get names in clear "
        "on the MCP hop: a name of the protocol, not a value; add --redact "
        "prompts/get:params.name to hide it",
        "golem-proxy: mcp: --redact result.tools.*.name leaves the tools a tools/list lists "
        "in clear on the MCP hop (but in an answer whose request the proxy did not see, of no "
        "known method, where every rule hides what it reaches): a name of the protocol, not a "
        "value; add --redact tools/list:result.tools.*.name to hide it",
    ]


def _with_old_violations(text: str) -> str:
    """``text`` (a recording) with an ``unknown-tool`` and an ``arguments`` violation after
    each ``tools/call`` frame, as the session's own rules recorded them before a placeholder
    was told from a tool, the lines numbered again."""
    header, *rest = text.splitlines()
    out = [header]
    for raw in rest:
        line = json.loads(raw)
        out.append(raw)
        if line["kind"] == "frame" and line.get("method") == "tools/call" and line["dir"] == "c2s":
            for rule, severity, path, message in (
                ("mcp.tools-call.unknown-tool", "warning", "$.params.name", "no tool"),
                ("mcp.tools-call.arguments", "error", "$.params.arguments", "'name' required"),
            ):
                violation = {
                    "seq": 0,
                    "t": line["t"],
                    "kind": "violation",
                    "conn": line["conn"],
                    "route": "mcp",
                    "dir": "c2s",
                    "frame": line["n"],
                    "rule": rule,
                    "message": message,
                    "path": path,
                    "severity": severity,
                }
                out.append(json.dumps(violation))
    # Each line as written but its number: a reader holds a line to the writer's layout.
    renumbered = [out[0]]
    for seq, raw in enumerate(out[1:], start=1):
        renumbered.append(re.sub(r'^\{"seq": ?\d+,', f'{{"seq":{seq},', raw))
    return "\n".join(renumbered) + "\n"
