"""``golem-proxy check`` warns of a tool call whose arguments name a property the tool's
``inputSchema`` (from the recorded ``tools/list``) does not declare: the arguments are valid
JSON Schema, and the server drops the property unread (GOLEM-3DMCP's ``create_box(length=2)``
made a box of the default depth). Where the schema forbids others it is the error of
``mcp.tools-call.arguments``; where it accepts them, nothing."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_helpers import run_cli

from .mcp_helpers import environment, recorded_session, start_piped

UNDECLARED = "mcp.tools-call.undeclared-argument"


def check_json(record: Path, *options: str) -> tuple[int, dict[str, list[dict[str, Any]]]]:
    done = run_cli("check", "--json", *options, str(record), env=environment())
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    return done.returncode, {group["rule"]: group["findings"] for group in report["rules"]}


def test_an_argument_a_fastmcp_tool_does_not_declare_is_a_warning(tmp_path: Path) -> None:
    # The FastMCP server answers as if the colour were not there: nothing tells the client.
    calls = [("create_layer", {"name": "A", "colour": "red"}), ("list_layers", {})]
    record = recorded_session(tmp_path / "session.jsonl", calls)
    code, rules = check_json(record)
    assert code == 0, rules  # a warning
    assert list(rules) == [UNDECLARED]
    (finding,) = rules[UNDECLARED]
    assert finding["path"] == "$.params.arguments.colour"
    assert finding["severity"] == "warning"
    assert finding["method"] == "tools/call"
    said = "'colour' is not among the properties create_layer's inputSchema declares (name)"
    assert said in finding["message"]
    strict, _ = check_json(record, "--strict")
    assert strict == 1
    shown = run_cli("check", str(record), env=environment(COLUMNS="200"))
    assert UNDECLARED in shown.stdout


# A server listing tools whose schemas say what becomes of a property they do not list.
SERVER = """
import json, sys
OBJECT = {"type": "object", "properties": {"a": {"type": "integer"}}}
TOOLS = [
    {"name": "closed", "inputSchema": {**OBJECT, "additionalProperties": False}},
    {"name": "open", "inputSchema": {**OBJECT, "additionalProperties": True}},
    {"name": "patterned", "inputSchema": {**OBJECT, "patternProperties": {"^x_": {}}}},
    {"name": "plain", "inputSchema": OBJECT},
    {"name": "conditional", "inputSchema": {**OBJECT, "if": {"required": ["a"]},
        "then": {"properties": {"b": {"type": "integer"}}}}},
    {"name": "dependent", "inputSchema": {**OBJECT,
        "dependentSchemas": {"a": {"properties": {"b": {"type": "integer"}}}}}},
]
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "t"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    else:
        result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("closed", {"a": 1, "b": 2}),  # forbidden: the arguments error, no warning besides
    ("open", {"a": 1, "b": 2}),  # accepted
    ("patterned", {"a": 1, "x_b": 2}),  # declared by a pattern
    ("patterned", {"a": 1, "y": 2}),
    ("plain", {"a": 1, "b": 2, "c": 3}),
    ("conditional", {"a": 1, "b": 2}),  # declared in a branch: not read here, no warning
    ("dependent", {"a": 1, "b": 2}),
]


@pytest.fixture(scope="module")
def schemas(tmp_path_factory: pytest.TempPathFactory) -> Path:
    record = tmp_path_factory.mktemp("undeclared") / "schemas.jsonl"
    command = [
        sys.executable, "-m", "golem_proxy", "mcp", "--record", str(record),
        "--upstream", "127.0.0.1:9", "--gh-upstream", "127.0.0.1:9",
        "--", sys.executable, "-c", SERVER,
    ]  # fmt: skip
    messages: list[dict[str, Any]] = [
        {"id": 0, "method": "initialize", "params": {"capabilities": {}}},
        {"method": "notifications/initialized"},
        {"id": 1, "method": "tools/list"},
    ]
    messages += [
        {"id": 2 + at, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        for at, (name, arguments) in enumerate(CALLS)
    ]
    process = start_piped(command)
    watchdog = threading.Timer(60, process.kill)  # a hung server fails the test, not the run
    watchdog.start()
    try:
        assert process.stdin is not None and process.stdout is not None
        for message in messages:
            process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
            process.stdin.flush()
            while "id" in message:
                line = process.stdout.readline()
                assert line, "the server stopped answering"
                if json.loads(line).get("id") == message["id"]:
                    break
        process.stdin.close()
        assert process.wait() == 0
    finally:
        watchdog.cancel()
        process.kill()
        process.wait()
    return record


def test_what_the_schema_says_of_other_properties_decides(schemas: Path) -> None:
    code, rules = check_json(schemas)
    assert code == 1  # the closed schema's error
    (closed,) = rules["mcp.tools-call.arguments"]
    assert "'b' was unexpected" in closed["message"]
    warned = [(f["path"], f["message"].split(" is not")[0]) for f in rules[UNDECLARED]]
    assert warned == [
        ("$.params.arguments.y", "'y'"),
        ("$.params.arguments.b", "'b'"),
        ("$.params.arguments.c", "'c'"),
    ]
