"""bench/cpu_budget.py at its quick size: the relay and golem-proxy each move 16 MiB answers,
every process's CPU is read around it, golem-proxy records every answer, and the bulk steps of
observing one answer are timed apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cpu_budget import main


def test_quick_run_accounts_each_process_and_records_every_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figures_file = tmp_path / "figures.json"
    status = main(["--quick", "--json", str(figures_file)])
    out = capsys.readouterr().out
    assert status == 0, out
    found = json.loads(figures_file.read_text())
    (relay,), (ours,) = found["runs"]["relay"], found["runs"]["golem-proxy"]
    assert ours["recorded"] == 4 and "4 / 4" in out
    # Forwarding and observing each did work of their own; the relay's row has neither.
    assert ours["forwarding"] > 0 and ours["observing main"] > 0
    assert relay["relay"] > 0 and "forwarding" not in relay
    assert ours["wall"] > 0 and relay["wall"] > 0
    assert set(found["floor"]) == {"read", "join", "elide", "append"}
    assert all(ms >= 0 for ms in found["floor"].values()) and sum(found["floor"].values()) > 0
    assert "observing took" in out and found["cores"] >= 1
