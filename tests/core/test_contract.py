"""Rules are plain values: declared next to their checks, gathered into tables by functions,
never registered as an import side effect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import golem_core.mcp_rules
import golem_core.pairing
import golem_core.rulebook
from golem_core.catalogue import R_UNKNOWN_METHOD, R_UNREAD_PARAM
from golem_core.contract import Rule, Severity, Violation, rule_table, violation
from golem_core.profiles import GOLEM, JSONRPC_NDJSON, Profile

A = Rule("x.a", Severity.ERROR, "A.", "here")
B = Rule("x.b", Severity.WARNING, "B.", "here")
ROOT = Path(__file__).resolve().parents[2]


def test_rule_table_maps_ids_in_order_and_is_read_only() -> None:
    table = rule_table((A,), [B])
    assert list(table) == ["x.a", "x.b"]
    assert table["x.b"] is B
    with pytest.raises(TypeError):
        table["x.c"] = A  # type: ignore[index]


def test_rule_table_accepts_a_rule_listed_twice_but_not_two_rules_with_one_id() -> None:
    assert list(rule_table((A, B), (A,))) == ["x.a", "x.b"]
    clash = Rule("x.a", Severity.WARNING, "Another A.", "there")
    with pytest.raises(ValueError, match=r"duplicate rule id 'x\.a'"):
        rule_table((A,), (clash,))


def test_violation_takes_the_rules_severity() -> None:
    assert violation(B, "m", "$.id", "Out") == Violation(
        "x.b", "m", "$.id", Severity.WARNING, "Out"
    )


def test_reimporting_the_modules_that_declare_rules_is_harmless() -> None:
    # Rules used to register themselves on import: a second import raised "duplicate rule id".
    # In a child interpreter, so the reloaded classes do not leak into the other tests.
    script = (
        "import importlib, golem_core.rulebook as book\n"
        "import golem_core.profiles.golem, golem_core.profiles.jsonrpc_ndjson\n"
        "import golem_core.profiles.scrybe_rules\n"
        "import golem_core.pairing, golem_core.catalogue, golem_core.contract\n"
        "for name in ('contract', 'profiles.golem', 'profiles.scrybe_rules',\n"
        "             'profiles.jsonrpc_ndjson', 'pairing',\n"
        "             'catalogue', 'rulebook'):\n"
        "    importlib.reload(importlib.import_module('golem_core.' + name))\n"
        "print(len(book.all_rules()))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == len(golem_core.rulebook.RULES)


def test_the_rulebook_is_the_profiles_rules_then_pairing_the_catalogue_and_mcp() -> None:
    expected = [*GOLEM.rules, *JSONRPC_NDJSON.rules, *golem_core.pairing.RULES]
    expected += list(golem_core.rulebook.CATALOGUE_RULES)
    expected += list(golem_core.mcp_rules.MCP_RULES)
    assert R_UNKNOWN_METHOD in expected and R_UNREAD_PARAM in expected
    assert [rule.id for rule in golem_core.rulebook.RULES.values()] == [r.id for r in expected]


def test_all_rules_of_one_profile_leaves_the_other_out() -> None:
    only_golem = golem_core.rulebook.all_rules([GOLEM])
    assert "golem.exchange.id-echoed" in only_golem
    assert "pairing.orphan-response" in only_golem
    assert not any(rule_id.startswith("jsonrpc.") for rule_id in only_golem)


@pytest.mark.parametrize("profile", [GOLEM, JSONRPC_NDJSON], ids=lambda p: p.name)
def test_each_profile_declares_its_own_rules_once(profile: Profile) -> None:
    ids = [rule.id for rule in profile.rules]
    assert len(ids) == len(set(ids))
    prefix = "golem." if profile is GOLEM else "jsonrpc."
    assert all(rule_id.startswith(prefix) for rule_id in ids)
