"""What bounds ``golem-proxy check``'s worker for schemas with regular expressions costs, and
what it must not cost: a large schema is still checked (preparing it is not a call's second;
one without a pattern never goes to the worker), a backtracking call blames the pattern that
ran and no other, and a pattern slow on every call costs a bounded time in all."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from golem_proxy.analysis.bounded_schema import BUDGET, DEADLINE, BoundedSchemas

from .mcp_helpers import ROOT, Call, environment, listing_server, recorded_listing

UNCHECKED = "mcp.tools-call.arguments-unchecked"
ARGUMENTS = "mcp.tools-call.arguments"
TWO = ("big", {"count": "two"})


def check(record: Path, timeout: float) -> tuple[int, list[tuple[int, str, str, str]], float]:
    """``check --json`` on ``record``: its exit status, (flow, rule, path, message) of each
    tools/call finding in flow order, and the seconds it took."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "golem_proxy", "check", "--json", str(record)],
        cwd=ROOT, env=environment(), capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert done.returncode in (0, 1), done.stderr
    found = sorted(
        (f["flow"], group["rule"], f["path"], f["message"])
        for group in json.loads(done.stdout)["rules"]
        for f in group["findings"]
        if f["method"] == "tools/call" and group["rule"].startswith("mcp.tools-call.")
    )
    return done.returncode, found, elapsed


def large_recording(folder: Path, properties: dict[str, Any], calls: list[Call]) -> Path:
    """A recording of ``calls`` to a tool ``big`` of ``properties``: the listing goes by a
    file, too long for one argument of a command line."""
    source = folder / "server.py"
    tools = [{"name": "big", "inputSchema": {"type": "object", "properties": properties}}]
    source.write_text(listing_server(tools))
    return recorded_listing(folder / "big.jsonl", f"exec(open({str(source)!r}).read())", calls)


def test_a_large_schema_without_a_pattern_is_checked_and_its_errors_said(
    tmp_path: Path,
) -> None:
    # 15,000 properties: past the 10,000 values the live path looks through, and seconds to
    # prepare, which ran past a call's second in the worker: every call went unchecked.
    properties: dict[str, Any] = {f"p{i}": {"type": "string"} for i in range(15_000)}
    properties["count"] = {"type": "integer"}
    record = large_recording(tmp_path, properties, [TWO] * 4)
    status, found, _ = check(record, timeout=120)
    assert status == 1
    assert [(flow, rule, path) for flow, rule, path, _ in found] == [
        (flow, ARGUMENTS, "$.params.arguments.count") for flow in range(4, 8)
    ]


def test_a_large_schema_with_patterns_is_prepared_apart_from_the_calls_deadline(
    tmp_path: Path,
) -> None:
    # 8,000 patterns: preparing them ran past the call's second in the worker, which was
    # killed and prepared them again at the next call; every pattern was blamed, every call
    # left unchecked.
    properties: dict[str, Any] = {
        f"p{i}": {"type": "string", "pattern": f"^x{i}$"} for i in range(8_000)
    }
    properties["count"] = {"type": "integer"}
    calls = [TWO] * 4 + [("big", {"p7": "y"})]
    record = large_recording(tmp_path, properties, calls)
    status, found, _ = check(record, timeout=120)
    assert status == 1
    assert [(flow, rule, path, message) for flow, rule, path, message in found] == [
        *[(flow, ARGUMENTS, "$.params.arguments.count", "'two' is not of type 'integer'")
          for flow in range(4, 8)],
        (8, ARGUMENTS, "$.params.arguments.p7", "'y' does not match '^x7$'"),
    ]  # fmt: skip


def test_preparing_a_schema_past_its_bound_leaves_that_tool_unchecked_once() -> None:
    schema = {"properties": {f"p{i}": {"pattern": f"^x{i}$"} for i in range(8_000)}}
    checks = BoundedSchemas(build_timeout=0.3)
    try:
        first = checks.problems("big", schema, {"p1": "y"}, flow=1)
        started = time.monotonic()
        second = checks.problems("big", schema, {"p1": "y"}, flow=2)
        assert time.monotonic() - started < 0.05  # not tried again
        other = checks.problems("small", {"pattern": "^[0-9]+$"}, "4x", flow=3)
    finally:
        checks.close()
    said = (
        "its arguments could not be checked against its inputSchema (preparing it, once per "
        "tool, ran past 0.3 s at flow #1; it is not tried again)"
    )
    assert [(v.rule, v.message) for v in first] == [(UNCHECKED, said)]
    assert [(v.rule, v.message) for v in second] == [(UNCHECKED, said)]
    assert [(v.rule, v.message) for v in other] == [(ARGUMENTS, "'4x' does not match '^[0-9]+$'")]


def test_preparing_a_schema_again_after_an_overrun_counts_in_the_budget() -> None:
    # A schema slow to prepare and a backtracking pattern: each overrun restarts the worker,
    # which prepares the schema again; unbounded, that is seconds per overrun.
    properties: dict[str, Any] = {f"p{i}": {"pattern": f"^x{i}$"} for i in range(3_000)}
    properties["name"] = {"type": "string", "pattern": "^(a+)+$"}
    schema = {"properties": properties}
    checks = BoundedSchemas(deadline=0.5, budget=0.7)
    try:
        # Runs past (0.5 s), then is checked again without the pattern: prepared again.
        first = checks.problems("big", schema, {"name": "a" * 30 + "!"}, flow=1)
        second = checks.problems("big", schema, {"p1": "y"}, flow=2)
    finally:
        checks.close()
    assert [v.rule for v in first] == [UNCHECKED]
    assert [(v.rule, v.message) for v in second] == [
        (
            UNCHECKED,
            "its arguments could not be checked against its regular expressions (checking "
            "regular expressions took the 0.7 s a check run gives them, by flow #1: every one "
            "is left out since); the rest of its inputSchema was checked",
        )
    ]


TOOLS = [
    {"name": "t", "inputSchema": {"type": "object", "properties": {
        "name": {"type": "string", "pattern": "^(a+)+$"},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
    }}},
    {"name": "u", "inputSchema": {"type": "object", "properties": {
        "word": {"type": "string", "pattern": "^(b+)+$"},
        "tag": {"type": "string", "pattern": "^[a-z]+$"},
    }}},
    {"name": "v", "inputSchema": {"type": "object", "properties": {
        "id": {"type": "string", "pattern": "^[0-9]+$"},
    }}},
]  # fmt: skip
BENIGN_FIRST: list[Call] = [
    ("t", {"name": "aa"}),  # flow 4: the worker runs t's pattern 0 last
    ("t", {"name": "a" * 30 + "!", "code": "ABC"}),  # flow 5: pattern 0 first, runs past
    ("t", {"name": "aa", "code": "abc"}),  # flow 6: breaks the benign pattern
    ("v", {"id": "1"}),  # flow 7: the worker runs v's pattern 0 last
    ("u", {"word": "b" * 30 + "!"}),  # flow 8: u's pattern 0 (another one) runs past
    ("u", {"tag": "X1"}),  # flow 9: breaks u's benign pattern
]


def test_a_backtracking_call_after_a_benign_one_blames_only_its_pattern(tmp_path: Path) -> None:
    record = recorded_listing(tmp_path / "t.jsonl", listing_server(TOOLS), BENIGN_FIRST)
    status, found, _ = check(record, timeout=60)
    assert status == 1
    said = {(flow, rule): message for flow, rule, _, message in found}
    assert sorted(said) == [
        (5, UNCHECKED), (6, ARGUMENTS), (6, UNCHECKED), (8, UNCHECKED), (9, ARGUMENTS),
    ]  # fmt: skip
    assert said[5, UNCHECKED] == (
        f"its arguments could not be checked against pattern '^(a+)+$' within {DEADLINE:g} s "
        "(it runs past on these arguments); the rest of its inputSchema was checked"
    )
    assert said[6, ARGUMENTS] == "'abc' does not match '^[A-Z]{3}$'"
    assert "'^[A-Z]{3}$'" not in said[6, UNCHECKED]
    assert said[8, UNCHECKED].startswith(
        "its arguments could not be checked against pattern '^(b+)+$' within"
    )
    assert "'^[a-z]+$'" not in said[8, UNCHECKED]
    assert said[9, ARGUMENTS] == "'X1' does not match '^[a-z]+$'"


@pytest.mark.slow
def test_a_pattern_slow_on_every_call_costs_a_bounded_time_in_all(tmp_path: Path) -> None:
    # ~0.1 s a call, under the deadline: it never ran past, and 400 calls took 46 s.
    label = [{"name": "label", "inputSchema": {"type": "object", "properties": {
        "name": {"type": "string", "pattern": "^(a+)+$"}}}}]  # fmt: skip
    calls: list[Call] = [("label", {"name": "a" * 21 + "!"})] * 400
    record = recorded_listing(tmp_path / "slow.jsonl", listing_server(label), calls)
    status, found, _ = check(record, timeout=300)
    assert status == 1
    # The bound shows in what is said, not in a wall-clock time: the budget was spent, and
    # every call after the one that spent it was left unchecked, saying so.
    assert len(found) == 400
    rules = {flow: rule for flow, rule, _, _ in found}
    assert sorted(rules) == list(range(4, 404))  # each call: checked, or said not to be
    assert rules[4] == ARGUMENTS
    assert rules[403] == UNCHECKED
    left_out = [(flow, message) for flow, rule, _, message in found if rule == UNCHECKED]
    first = left_out[0][0]
    assert all(rule == UNCHECKED for flow, rule in rules.items() if flow >= first)
    assert left_out[-1][1] == (
        "its arguments could not be checked against its regular expressions (checking "
        f"regular expressions took the {BUDGET:g} s a check run gives them, by flow "
        f"#{first - 1}: every one is left out since); the rest of its inputSchema was checked"
    )
