"""bench/observer_restart.py at a tiny size: the observing process killed twice under two
clients' calls, each kill followed by a take-over, and the recording whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.observer_restart import main


def test_quick_run_restarts_after_each_kill(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], figures: dict[str, Any]
) -> None:
    figures_file = tmp_path / "figures.json"
    status = main(["--quick", "--clients", "2", "--json", str(figures_file)])
    out = capsys.readouterr().out
    found = json.loads(figures_file.read_text())
    figures.update(found)
    assert status == 0, out
    assert "problems: none" in out and "each kill" in out
    assert found["restarted"] == found["stderr_restarted"] == found["stderr_stopped"] == 2
    assert found["client_errors"] == 0 and found["reads_whole"] == "yes"
    assert 0 < found["exchanges_recorded"] < found["calls_completed"]
    for row in found["per_kill"]:
        assert row["taken_up"] == 2 and row["unobserved_lines"] == 4
        assert row["recorded_in_outage"] == 0 and row["calls_in_outage"] > 0
        assert 0 < row["detail_gap_s"] <= row["gap_s"] + 0.002  # the detail: whole ms
