"""``golem-proxy diff A B`` of two ``golem-proxy mcp`` sessions compares their tool calls too:
the plugin's layer may be alike while the model called other tools, with other arguments,
and got other results back (diff said ``no difference``, exit 0)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO

import pytest

import golem_proxy.analysis.trace as flow_reading
from golem_proxy.cli import main
from tests.support.cli_helpers import run_cli

from .mcp_helpers import recorded_session

SAME = [("list_layers", {}), ("create_layer", {"name": "A"})]


def test_sessions_that_called_other_tools_differ(tmp_path: Path) -> None:
    a = recorded_session(tmp_path / "a.jsonl", [*SAME, ("big_text", {"size": 3})])
    b = recorded_session(tmp_path / "b.jsonl", [*SAME, ("big_text", {"size": 5}), ("gh_ping", {})])
    done = run_cli("diff", str(a), str(b))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "tools/call big_text changed" in done.stdout
    assert "arguments.size" in done.stdout
    assert "tools/call gh_ping() only in" in done.stdout
    assert "diff: 2 of 4 tool calls differ" in done.stdout
    report = json.loads(run_cli("diff", "--json", str(a), str(b)).stdout)
    differing = report["tool_calls"]["differing"]
    assert [(d["tool"], d["a"] is None) for d in differing] == [
        ("big_text", False),
        ("gh_ping", True),
    ]
    assert differing[0]["differences"][0] == {
        "path": "arguments.size",
        "kind": "changed",
        "recorded": 3,
        "live": 5,
    }


def test_the_same_calls_made_again_are_no_difference(tmp_path: Path) -> None:
    a = recorded_session(tmp_path / "a.jsonl", SAME)
    b = recorded_session(tmp_path / "b.jsonl", SAME)
    done = run_cli("diff", str(a), str(b))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "diff: 2 tool calls, no difference" in done.stdout


def test_each_recording_s_flows_are_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The requests' rows and the tool calls come from one reading of a recording's flows (a
    second one, for the tool calls, took as long again and held every flow of it)."""
    a = recorded_session(tmp_path / "a.jsonl", SAME)
    b = recorded_session(tmp_path / "b.jsonl", [*SAME, ("gh_ping", {})])
    opened: list[str] = []
    open_recording = flow_reading.open_recording

    def counted(path: str) -> IO[bytes]:
        opened.append(path)
        return open_recording(path)

    monkeypatch.setattr(flow_reading, "open_recording", counted)
    assert main(["diff", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "tools/call gh_ping() only in" in out
    assert "diff: 1 of 3 tool calls differ" in out
    assert opened == [str(a), str(b)]


def test_a_call_made_in_one_session_only_leaves_the_others_aligned(tmp_path: Path) -> None:
    """One call more at the start of B and one fewer further on: those two are said, and the
    calls both made are compared with each other (by position, every call after the inserted
    one met the one before it and differed: "4 of 4 tool calls differ")."""
    both = [("list_layers", {}), ("create_layer", {"name": "A"})]
    a = recorded_session(
        tmp_path / "a.jsonl", [*both, ("layer_report", {"name": "B"}), ("big_text", {"size": 3})]
    )
    b = recorded_session(tmp_path / "b.jsonl", [("gh_ping", {}), *both, ("big_text", {"size": 3})])
    done = run_cli("diff", str(a), str(b))
    assert done.returncode == 1, done.stdout + done.stderr
    said = [line for line in done.stdout.splitlines() if "tools/call" in line]
    assert len(said) == 2, done.stdout
    assert said[0].startswith("— B#") and f"tools/call gh_ping() only in {b}" in said[0]
    assert said[1].startswith("A#")
    assert f' — tools/call layer_report(name="B") only in {a}' in said[1]
    assert "diff: 2 of 5 tool calls differ" in done.stdout
    report = json.loads(run_cli("diff", "--json", str(a), str(b)).stdout)["tool_calls"]
    assert report["compared"] == 5
    assert [(d["tool"], d["a"] is None, d["b"] is None) for d in report["differing"]] == [
        ("gh_ping", True, False),
        ("layer_report", False, True),
    ]
