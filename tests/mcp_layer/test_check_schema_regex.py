"""``golem-proxy check`` holds a tool call's arguments to the regular expressions of its
tool's ``inputSchema`` (``pattern``, nested or not, and ``patternProperties``) within a bound:
a pattern that backtracks (``^(a+)+$`` against 30 ``a`` and a ``!``, minutes in Python's
`re`) costs the call one warning naming it, every other part of the schema is still checked,
and ``check`` finishes in seconds."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from golem_proxy.analysis.bounded_schema import DEADLINE, BoundedSchemas

from .mcp_helpers import ROOT, Call, environment, listing_server, recorded_listing

UNCHECKED = "mcp.tools-call.arguments-unchecked"
ARGUMENTS = "mcp.tools-call.arguments"
ARGUMENTS_AT = "$.params.arguments"
HOSTILE = "a" * 30 + "!"

TOOLS = [
    {"name": "label", "inputSchema": {"type": "object", "properties": {
        "name": {"type": "string", "pattern": "^(a+)+$"},
        "count": {"type": "integer"},
    }}},
    {"name": "nested", "inputSchema": {"type": "object", "properties": {
        "outer": {"type": "object", "properties": {
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        }},
    }}},
    {"name": "keyed", "inputSchema": {
        "type": "object",
        "patternProperties": {"^x_[0-9]+$": {"type": "integer"}},
        "additionalProperties": False,
    }},
    {"name": "keys", "inputSchema": {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "patternProperties": {"^(b+)+$": {"type": "integer"}},
    }},
]  # fmt: skip

CALLS: list[Call] = [
    ("label", {"name": HOSTILE, "count": "two"}),  # flow 4: runs past; count still checked
    ("label", {"name": HOSTILE, "count": 2}),  # flow 5: left out, no second deadline
    ("nested", {"outer": {"code": "abc"}}),  # flow 6: a violation in a nested property
    ("nested", {"outer": {"code": "ABC"}}),  # flow 7: none
    ("keyed", {"x_1": 1}),  # flow 8: none
    ("keyed", {"x_1": "one", "y": 1}),  # flow 9: the pattern's schema, and y is not allowed
    ("keys", {"a": "s", "b" * 30 + "!": 1}),  # flow 10: a property name runs past
]


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    record = tmp_path_factory.mktemp("regex") / "regex.jsonl"
    return recorded_listing(record, listing_server(TOOLS), CALLS)


def findings(report: dict[str, Any]) -> list[tuple[int, str, str, str]]:
    """(flow, rule, path, message) of each tools/call finding, in flow order."""
    return sorted(
        (f["flow"], group["rule"], f["path"], f["message"])
        for group in report["rules"]
        for f in group["findings"]
        if f["method"] == "tools/call" and group["rule"].startswith("mcp.tools-call.")
    )


def test_a_backtracking_pattern_costs_a_warning_and_check_finishes(recording: Path) -> None:
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "golem_proxy", "check", "--json", str(recording)],
        cwd=ROOT, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        out, err = process.communicate(timeout=60)  # before the fix: minutes, per call
    finally:
        process.kill()
    elapsed = time.monotonic() - started
    assert process.returncode == 1, err  # the errors below
    # Two deadlines (flows 4 and 10) and a worker started three times: seconds, not minutes.
    assert elapsed < 2 * DEADLINE + 15, elapsed
    found = findings(json.loads(out))
    assert [(flow, rule, path) for flow, rule, path, _ in found] == [
        (4, ARGUMENTS, "$.params.arguments.count"),
        (4, UNCHECKED, "$.params.arguments"),
        (5, UNCHECKED, "$.params.arguments"),
        (6, ARGUMENTS, "$.params.arguments.outer.code"),
        (9, ARGUMENTS, "$.params.arguments"),
        (9, ARGUMENTS, "$.params.arguments.x_1"),
        (10, ARGUMENTS, "$.params.arguments.a"),
        (10, UNCHECKED, "$.params.arguments"),
    ]
    said = {
        (flow, rule): message
        for flow, rule, path, message in found
        if (flow, rule, path) != (9, ARGUMENTS, ARGUMENTS_AT)
    }
    assert said[4, UNCHECKED] == (
        f"its arguments could not be checked against pattern '^(a+)+$' within {DEADLINE:g} s "
        "(it runs past on these arguments); the rest of its inputSchema was checked"
    )
    assert said[5, UNCHECKED] == (
        f"its arguments could not be checked against pattern '^(a+)+$' (it ran past "
        f"{DEADLINE:g} s on the arguments of flow #4, and is left out since); the rest of its "
        "inputSchema was checked"
    )
    assert "'^(b+)+$' within" in said[10, UNCHECKED]
    assert "'abc' does not match '^[A-Z]{3}$'" in said[6, ARGUMENTS]
    assert "'one' is not of type 'integer'" in said[9, ARGUMENTS]
    (others,) = [message for flow, _, path, message in found if (flow, path) == (9, ARGUMENTS_AT)]
    assert others == "'y' does not match any of the regexes: '^x_[0-9]+$'"
    # The worker does not outlive check.
    assert not _workers_of(process.pid)


def test_the_warning_is_in_checks_table(recording: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "golem_proxy", "check", str(recording)],
        cwd=ROOT, env=environment(COLUMNS="250"), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert f"{UNCHECKED} (3)" in done.stdout
    assert "could not be checked against pattern '^(a+)+$' within" in done.stdout


def test_past_the_overrun_cap_every_pattern_is_left_out() -> None:
    checks = BoundedSchemas(deadline=0.5, max_overruns=1)
    schema = {"properties": {
        "a": {"type": "string", "pattern": "^(a+)+$"},
        "b": {"type": "string", "pattern": "^(b+)+$"},
        "c": {"type": "string", "pattern": "^c$"},
    }}  # fmt: skip
    try:
        first = checks.problems("t", schema, {"a": HOSTILE}, flow=1)
        started = time.monotonic()
        second = checks.problems("t", schema, {"b": "b" * 30 + "!", "c": "d"}, flow=2)
        assert time.monotonic() - started < 0.5  # no deadline waited for
        third = checks.problems("u", {"type": "integer"}, 3, flow=3)
    finally:
        checks.close()
    assert [v.rule for v in first] == [UNCHECKED]
    assert [v.rule for v in second] == [UNCHECKED]
    assert second[0].message == (
        "its arguments could not be checked against its regular expressions (1 pattern ran "
        "past 0.5 s earlier in this recording: every one is left out since); the rest of its "
        "inputSchema was checked"
    )
    assert third == []  # arguments that meet no pattern are checked whole, with no warning


def test_a_benign_pattern_is_checked_whole() -> None:
    checks = BoundedSchemas()
    schema = {"properties": {"id": {"type": "string", "pattern": "^[0-9]+$"}}}
    try:
        assert checks.problems("t", schema, {"id": "42"}, flow=1) == []
        (bad,) = checks.problems("t", schema, {"id": "4x"}, flow=2)
    finally:
        checks.close()
    assert (bad.rule, bad.path) == (ARGUMENTS, "$.params.arguments.id")
    assert bad.message == "'4x' does not match '^[0-9]+$'"


def _workers_of(pid: int) -> list[str]:
    """The schema workers still running that the process ``pid`` started."""
    left = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if f"schema_worker {pid}" in line:
            left.append(line)
    return left
