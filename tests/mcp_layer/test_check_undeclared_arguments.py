"""``golem-proxy check`` warns of a tool call whose arguments name a property the tool's
``inputSchema`` (from the recorded ``tools/list``) does not declare: the arguments are valid
JSON Schema, and the server drops the property unread (GOLEM-3DMCP's ``create_box(length=2)``
made a box of the default depth). Where the schema forbids others it is the error of
``mcp.tools-call.arguments``; where it accepts them, nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_helpers import run_cli

from .mcp_helpers import environment, listing_server, recorded_listing, recorded_session

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


# Tools whose schemas say what becomes of a property they do not list.
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
]  # fmt: skip

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
    return recorded_listing(record, listing_server(TOOLS), CALLS)


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
