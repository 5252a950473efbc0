"""``golem-proxy mcp-verify`` compares what the model is told, not only the tool results: a
build whose tool lost its description, or whose server says other instructions, differs
though every tool call matches; one that only calls itself by another version matches, the
version told on its row."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli_helpers import run_cli

from .mcp_helpers import ROOT, environment, recorded_session

TOLD = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_told.py")]


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    calls = [("list_layers", {}), ("create_layer", {"name": "A"})]
    return recorded_session(tmp_path_factory.mktemp("told") / "session.jsonl", calls)


def mcp_verify(recording: Path, told: str, *options: str) -> subprocess.CompletedProcess[str]:
    env = environment(COLUMNS="200", GOLEM_TEST_TOLD=told)
    return run_cli("mcp-verify", *options, str(recording), "--", *TOLD, env=env, timeout=120)


def rows(output: str) -> dict[str, str]:
    return {line.split()[0]: line for line in output.splitlines() if line[:1].isalpha()}


def test_the_same_build_matches_every_answer(recording: Path) -> None:
    done = mcp_verify(recording, "")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mcp-verify: all 2 tool calls match" in done.stdout
    assert rows(done.stdout)["tools/list"].split()[1:] == ["match"]


def test_a_tool_that_lost_its_description_differs(recording: Path) -> None:
    # Every tool result is the same: only what the model reads of list_layers changed.
    done = mcp_verify(recording, "undescribed")
    assert done.returncode == 1, done.stdout + done.stderr
    row = rows(done.stdout)["tools/list"]
    assert "differs" in row and "result.tools.list_layers.description" in row
    assert """("The document's layers." vs '')""" in row
    assert "mcp-verify: the 2 tool calls match; tools/list differs" in done.stdout
    assert "differs" not in rows(done.stdout)["initialize"]
    report = json.loads(mcp_verify(recording, "undescribed", "--json").stdout)
    assert (report["ok"], report["differing"], report["differing_requests"]) == (
        False,
        [],
        ["tools/list"],
    )
    # The tools are compared by name: a tool re-registered (now listed last) is no difference.
    listed = next(check for check in report["checks"] if check["method"] == "tools/list")
    assert [d["path"] for d in listed["differences"]] == ["result.tools.list_layers.description"]


def test_new_instructions_differ(recording: Path) -> None:
    done = mcp_verify(recording, "instructed")
    assert done.returncode == 1, done.stdout + done.stderr
    row = rows(done.stdout)["initialize"]
    assert "differs" in row and "result.instructions (absent vs 'Always call" in row


def test_another_server_version_is_told_not_failed(recording: Path) -> None:
    done = mcp_verify(recording, "next-version")
    assert done.returncode == 0, done.stdout + done.stderr
    row = rows(done.stdout)["initialize"]
    assert "match" in row and "told, not failing: result.serverInfo.version" in row
    assert "vs '99.0.0')" in row
    report = json.loads(mcp_verify(recording, "next-version", "--json").stdout)
    initialize = next(check for check in report["checks"] if check["method"] == "initialize")
    assert initialize["ok"] is True
    assert initialize["notes"][0]["path"] == "result.serverInfo.version"
    assert initialize["notes"][0]["live"] == "99.0.0"


def test_ignore_names_a_method_other_than_a_tool(recording: Path) -> None:
    done = mcp_verify(recording, "undescribed", "--ignore", "tools/list:result.tools.*.description")
    assert done.returncode == 0, done.stdout + done.stderr
