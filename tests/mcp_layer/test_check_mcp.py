"""``golem-proxy check`` on a two-layer recording audits the MCP layer: the envelope (with
the mcp profile, not GOLEM's), initialize first, unique ids, arguments against the recorded
inputSchema, the content shape, and a server that writes non-JSON to stdout."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_helpers import run_cli

from .mcp_helpers import environment, recorded_session, start_piped

# A server that prints a banner first, lists one tool (``add``, an integer ``a`` required),
# answers ``add`` properly and any other tool with a broken result.
SERVER = """
import json, sys
print("starting up", flush=True)
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "t"}}
    elif method == "tools/list":
        schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
        result = {"tools": [{"name": "add", "inputSchema": schema}]}
    elif message["params"]["name"] == "add":
        result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
    else:
        result = {"content": "not a list", "isError": "yes"}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


def call(ident: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


CLIENT: list[dict[str, Any]] = [
    {"jsonrpc": "2.0", "id": 0, "method": "tools/list"},  # before initialize
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    call(2, "add", {"a": "x"}),  # not an integer
    call(2, "add", {"a": 1}),  # the id again
    call(3, "nope", {}),  # no such tool; the server answers with a broken result
    {"id": 4, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1}}},
]


def record_session(record: Path) -> None:
    """Drive the server through ``golem-proxy mcp --record`` as a careful client does: each
    request's answer read before the next line is written."""
    command = [
        sys.executable, "-m", "golem_proxy", "mcp", "--record", str(record),
        "--upstream", "127.0.0.1:9", "--gh-upstream", "127.0.0.1:9",
        "--", sys.executable, "-c", SERVER,
    ]  # fmt: skip
    process = start_piped(command)
    watchdog = threading.Timer(60, process.kill)  # a hung server fails the test, not the run
    watchdog.start()
    try:
        assert process.stdin is not None and process.stdout is not None
        for message in CLIENT:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            while "id" in message:
                line = process.stdout.readline()
                assert line, "the server stopped answering"
                if line.startswith(b"{") and json.loads(line).get("id") == message["id"]:
                    break
        process.stdin.close()
        assert process.wait() == 0
    finally:
        watchdog.cancel()
        process.kill()
        process.wait()


def check_json(record: Path, *options: str) -> tuple[int, dict[str, Any]]:
    done = run_cli("check", "--json", *options, str(record), env=environment())
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    record = tmp_path_factory.mktemp("check") / "broken.jsonl"
    record_session(record)
    return record


def by_rule(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {group["rule"]: group["findings"] for group in report["rules"]}


def test_every_mcp_rule_broken_is_reported(broken: Path) -> None:
    code, report = check_json(broken)
    assert code == 1
    rules = by_rule(report)
    counts = {rule: len(findings) for rule, findings in rules.items() if rule.startswith("mcp.")}
    assert counts == {
        "mcp.lifecycle.initialize-first": 1,
        "mcp.request.id-unique": 1,
        "mcp.tools-call.arguments": 1,
        "mcp.tools-call.unknown-tool": 1,
        "mcp.tools-call.content": 2,
        "mcp.stdio.stdout-not-jsonrpc": 1,
    }
    assert rules["mcp.lifecycle.initialize-first"][0]["method"] == "tools/list"
    arguments = rules["mcp.tools-call.arguments"][0]
    assert arguments["path"] == "$.params.arguments.a"
    assert "'x' is not of type 'integer'" in arguments["message"]
    assert {f["path"] for f in rules["mcp.tools-call.content"]} == {
        "$.result.content",
        "$.result.isError",
    }
    stdout = rules["mcp.stdio.stdout-not-jsonrpc"][0]["message"]
    assert "'starting up'" in stdout and "reports it as an error and drops it" in stdout
    # The envelope is the mcp profile's: the request without "jsonrpc" is flagged ...
    assert len(rules["jsonrpc.request.envelope"]) == 1
    # ... and no GOLEM rule is applied to the MCP hop.
    assert not any(rule.startswith("golem.") for rule in rules)


def test_the_table_names_the_mcp_rules(broken: Path) -> None:
    done = run_cli("check", str(broken), env=environment(COLUMNS="200"))
    assert done.returncode == 1
    assert "mcp.stdio.stdout-not-jsonrpc" in done.stdout
    assert "mcp.tools-call.arguments" in done.stdout


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A FastMCP session with the `mcp` client, through the wrapper to the headless plugin."""
    calls = [("list_layers", {}), ("create_layer", {"name": "A"}), ("broken_tool", {})]
    return recorded_session(tmp_path_factory.mktemp("check") / "clean.jsonl", calls)


def test_a_clean_session_has_no_violation_on_either_layer(clean: Path) -> None:
    # Before the MCP layer had its own profile here, every MCP message broke GOLEM rules.
    code, report = check_json(clean)
    assert (code, report["rules"]) == (0, [])
    code, report = check_json(clean, "--catalogue", "golem-3dmcp@9819b31")
    # The catalogue lists GOLEM methods: the MCP layer's are not "unknown methods".
    unknown = [row["method"] for row in report["drift"]["unknown_methods"]]
    assert unknown == ["scene.no_such_method"]
