"""``show -n N`` stops reading once its N rows are out (issue 22 point 8): the first rows of a
trace of any size come at once, and the rest of the file is never read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_helpers import ROOT, run_cli

SAMPLE = ROOT / "recordings" / "modelling-session.jsonl"


@pytest.fixture()
def damaged_tail(tmp_path: Path) -> Path:
    """The modelling session followed by a line no reader accepts: reading the whole file
    fails, so a command that succeeds has stopped before the end."""
    path = tmp_path / "damaged-tail.jsonl"
    path.write_bytes(SAMPLE.read_bytes() + b'{"kind": "exchange", "this": "is not one"}\n' * 3)
    return path


def test_reading_the_whole_file_reaches_the_damage(damaged_tail: Path) -> None:
    done = run_cli("show", str(damaged_tail))
    assert done.returncode == 2
    assert str(damaged_tail) in done.stderr


@pytest.mark.parametrize("json", [False, True])
def test_show_n_stops_reading_once_its_rows_are_out(damaged_tail: Path, json: bool) -> None:
    done = run_cli("show", "-n", "3", *(["--json"] if json else []), str(damaged_tail))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    rows = [line for line in done.stdout.splitlines() if "scene.create_layer" in line]
    assert len(rows) == 1  # flow 3, the last one asked for
    assert "geometry.create_box" not in done.stdout  # flow 4 is not printed
    if not json:
        assert "the first 3 flows (--limit 3; the rest not read)" in done.stdout


def test_show_n_larger_than_the_trace_counts_everything() -> None:
    done = run_cli("show", "-n", "50", str(SAMPLE))
    assert done.returncode == 0
    assert "11 flows (11 in the recording)" in done.stdout
