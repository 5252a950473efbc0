"""bench/cpu_budget.py at its quick size: the relay and golem-proxy each move 16 MiB answers,
every process's CPU is read around it, golem-proxy records every answer, and the bulk steps of
observing one answer are timed apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from bench.cpu_budget import main, table


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
    assert ours["faults"] >= 0 and relay["faults"] >= 0


def test_with_the_tui_golem_proxy_is_measured_again_drawing_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figures_file = tmp_path / "figures.json"
    status = main(["--quick", "--tui", "--json", str(figures_file)])
    out = capsys.readouterr().out
    assert status == 0, out
    runs = json.loads(figures_file.read_text())["runs"]
    assert list(runs) == ["relay", "golem-proxy", "golem-proxy --tui"]
    (drawn,) = runs["golem-proxy --tui"]
    assert drawn["recorded"] == 4
    # The TUI draws in the observing process's main thread; the session runs in another,
    # which decodes and records the answers. Drawing four rows may take less than the one
    # clock tick (10 ms) a thread's CPU is counted in: the main thread's column is there, and
    # may read 0.
    assert drawn["observing main"] >= 0 and drawn["observing others"] > 0
    assert "golem-proxy --tui" in out


def test_warm_answers_go_through_first_and_are_neither_timed_nor_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figures_file = tmp_path / "figures.json"
    status = main(["--quick", "--warm", "3", "--json", str(figures_file)])
    out = capsys.readouterr().out
    assert status == 0, out
    (ours,) = json.loads(figures_file.read_text())["runs"]["golem-proxy"]
    # The recording holds 3 + 4 answers (and two hellos): the 4 measured are counted.
    assert ours["recorded"] == 4 and "4 / 4" in out
    assert "each after 3 unmeasured" in out


def test_the_table_s_figures_follow_from_the_runs() -> None:
    """Sums, the bound on 2 cores, the overlap, MB/s and the ratio, from fixed figures."""
    relay = {"client": 10.0, "upstream": 2.0, "relay": 20.0, "wall": 32.0, "faults": 90.4}
    ours = {
        "client": 6.0,
        "upstream": 3.0,
        "forwarding": 25.0,
        "observing main": 30.0,
        "observing others": 8.0,
        "wall": 48.0,
        "faults": 2511.6,
        "recorded": 40.0,
    }
    console = Console(record=True, width=220)
    console.print(table({"relay": [relay], "golem-proxy": [ours]}, 40, 2))
    rows = {
        line.split("│")[1].strip(): line
        for line in console.export_text().splitlines()
        if "│" in line
    }
    relay_cells = [cell.strip() for cell in rows["relay"].split("│")[2:-1]]
    ours_cells = [cell.strip() for cell in rows["golem-proxy"].split("│")[2:-1]]
    # client, upstream, relay, forwarding, observing main/others, sum, wall, sum/cores, overlap
    assert relay_cells[:10] == ["10.0", "2.0", "20.0", "-", "-", "-", "32.0", "32.0", "16.0", "50%"]
    assert ours_cells[:10] == [
        "6.0",
        "3.0",
        "-",
        "25.0",
        "30.0",
        "8.0",
        "72.0",
        "48.0",
        "36.0",
        "75%",
    ]
    assert relay_cells[10] == "524"  # 16 MiB in 32 ms
    assert ours_cells[10] == "350 (0.67x)" and ours_cells[12] == "40 / 40"
    assert (relay_cells[11], ours_cells[11]) == ("90", "2,512")  # page faults an answer


def test_with_pauses_the_answers_go_in_batches_and_every_one_is_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seven answers, in a batch of five and one of two with a pause longer than the idle
    spell after which a process gives freed memory back: each is still measured and recorded."""
    figures_file = tmp_path / "figures.json"
    status = main(
        ["--rounds", "1", "--answers", "7", "--pause", "0.6", "--json", str(figures_file)]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    (ours,) = json.loads(figures_file.read_text())["runs"]["golem-proxy"]
    assert ours["recorded"] == 7
    assert ours["wall"] > 0 and ours["faults"] >= 0
    assert "in batches of 5 with 0.6 s between" in " ".join(out.split())
