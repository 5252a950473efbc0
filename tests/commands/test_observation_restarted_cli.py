"""A recording whose observing process was restarted, as the views read it: the restart is a
row of its own and a note on stderr, once per restart; the recording goes on after it, so a
connection the new observing process recorded and that was never closed still says the file
was cut short, and one left open at the restart with nothing recorded since does not."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from golem_proxy.analysis.reading_notes import RESTARTS_NOTED
from golem_proxy.analysis.trace import open_flows
from golem_proxy.events import Direction, Event
from golem_proxy.recording.line_events import RESTARTS_KEPT
from golem_proxy.recording.shared_file import RecordingFile, end_recording
from tests.support.cli_helpers import run_main
from tests.support.restarts import call, closed, opened, restart_gap, write_observed

WHY = "the observing process was killed by SIGKILL"


def _note(path: Path, t: str, why: str = WHY) -> str:
    return (
        f"note: {path}: observation restarted at {t} s ({why}); what was forwarded while no "
        "observing process recorded it is not in this recording"
    )


def _first() -> list[Event]:
    """Connection 1 open across the restart, 2 open at it and never heard of again."""
    return [opened(1, 0.1), *call(1, 0, 0.2), opened(2, 0.3), *call(2, 0, 0.4)]


def _second(*, close_1: bool = True) -> list[Event]:
    """Connection 1 picked up again (its gap, frames numbered on), 3 opened and closed."""
    events = [restart_gap(1, 1.0, 57), *call(1, 1, 1.1), opened(3, 1.2), *call(3, 0, 1.3)]
    events.append(closed(3, 1.4))
    if close_1:
        events.append(closed(1, 1.5))
    return events


def _statuses(capsys: pytest.CaptureFixture[str], path: Path) -> list[tuple[int, str]]:
    code, out, _ = run_main(capsys, "show", str(path), "--json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    return [(row["conn"], row["status"]) for row in rows]


def test_show_check_and_stats_say_each_restart_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "restarted.jsonl"
    write_observed(path, [_first(), _second()], [(0.95, WHY)])
    code, out, err = run_main(capsys, "show", str(path))
    assert code == 0
    assert out.count("unobserved:restarted") == 2  # the session's row and connection 1's
    # Connection 2 has no line after the restart: not a connection the proxy never closed.
    assert err.strip() == _note(path, "0.950")
    # What no observing process saw was not checked: check passes it only when told to.
    for command, exit_code in (("check", 3), ("check --allow-incomplete", 0), ("stats", 0)):
        code, out, err = run_main(capsys, *command.split(), str(path))
        assert code == exit_code, err
        assert err.strip() == _note(path, "0.950")
        if command.startswith("check"):
            # One restart, one gap: connection 1's row adds the bytes it says went by.
            said = (
                "not inspected: 1 gap in what was observed: 1 unobserved:restarted, at least 57 B"
            )
            assert said in out.splitlines()


def test_the_rows_of_a_restart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "restarted.jsonl"
    write_observed(path, [_first(), _second()], [(0.95, WHY)])
    assert _statuses(capsys, path) == [
        (1, "ok"),
        (2, "ok"),
        (0, "unobserved:restarted"),
        (1, "unobserved:restarted"),
        (1, "ok"),
        (3, "ok"),
    ]


def test_a_connection_recorded_after_the_restart_and_never_closed_is_still_noted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "killed-later.jsonl"
    write_observed(path, [_first(), _second(close_1=False)], [(0.95, WHY)])
    code, _, err = run_main(capsys, "show", str(path))
    assert code == 0
    notes = err.strip().splitlines()
    assert notes[0] == _note(path, "0.950")
    assert notes[1].startswith(f"note: {path}: the proxy stopped without closing this recording")
    assert notes[1].endswith("(1 connection never closed)")
    assert len(notes) == 2


def test_two_restarts_then_a_stop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "restarted-twice.jsonl"
    third = [restart_gap(1, 2.0, 9), *call(1, 2, 2.1)]
    write_observed(path, [_first(), _second(close_1=False), third], [(0.95, WHY), (1.9, "again")])
    record = RecordingFile(os.open(path, os.O_WRONLY), os.open(path, os.O_RDONLY))
    try:
        end_recording(record, 2.5, "restarted too often")
    finally:
        record.close()
    code, out, err = run_main(capsys, "check", str(path))
    assert code == 3, err  # incomplete: what no observing process saw was not checked
    restarts = "2 unobserved:restarted, at least 66 B"  # what the dead ones missed is unknown
    said = f"3 gaps in what was observed: {restarts}; 1 unobserved:stopped"
    assert said in out
    assert err.strip().splitlines() == [
        _note(path, "0.950"),
        _note(path, "1.900", "again"),
        f"note: {path}: observation stopped at 2.500 s: restarted too often; what was forwarded "
        "after it is not in this recording",
    ]
    statuses = [status for _, status in _statuses(capsys, path)]
    assert statuses.count("unobserved:restarted") == 4
    assert statuses.count("unobserved:stopped") == 1
    # The session's rows count no bytes: the rest of the session went by unobserved after the
    # stop, not 0 bytes.
    _, out, _ = run_main(capsys, "show", str(path), "--json")
    sizes = {
        (row["status"], row["conn"] or None, row["request_size"], row.get("size_at_least"))
        for row in map(json.loads, out.splitlines())
        if row["status"].startswith("unobserved:")
    }
    assert sizes == {
        ("unobserved:restarted", None, None, None),
        ("unobserved:stopped", None, None, None),
        ("unobserved:restarted", 1, 57, True),
        ("unobserved:restarted", 1, 9, True),
    }


def test_many_restarts_are_counted_past_the_first_few(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Past the first `RESTARTS_KEPT`, a reader counts them and keeps the last (a hand-made
    file of a million kept them all: 236 MiB)."""
    path = tmp_path / "restarted-often.jsonl"
    count = RESTARTS_KEPT + 3
    restarts = [(1.0 + i, f"death {i}") for i in range(count)]
    write_observed(path, [[opened(1, 0.1)], *([] for _ in restarts)], restarts)
    _, _, err = run_main(capsys, "show", str(path))
    notes = err.strip().splitlines()
    assert notes[:RESTARTS_NOTED] == [
        _note(path, f"{t:.3f}", why) for t, why in restarts[:RESTARTS_NOTED]
    ]
    more = count - RESTARTS_NOTED
    assert notes[RESTARTS_NOTED:] == [
        f"note: {path}: and {more} more restarts of the observing process, the last at "
        f"{count:.3f} s"
    ]
    with open_flows(str(path)) as trace:
        for _ in trace.flows():
            pass
        assert len(trace.restarts) == RESTARTS_KEPT and trace.restart_count == count


def test_a_connections_restart_gap_is_a_gap_in_its_capture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "restarted.jsonl"
    write_observed(path, [_first(), _second()], [(0.95, WHY)])
    capture = tmp_path / "restarted.pcapng"
    code, _, err = run_main(
        capsys, "export", str(path), "--format", "pcapng", "--out", str(capture)
    )
    assert code == 0, err
    said = " ".join(err.split())  # the summary wraps at the console's width
    assert "; 1 gap (at least 57 bytes crossed unobserved)" in said


def test_a_restart_over_an_idle_connection_is_one_gap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The new observing process writes a row of 0 bytes for each direction of a connection
    # it picks up again: with the session's row, three rows of one restart.
    path = tmp_path / "idle.jsonl"
    second = [
        restart_gap(1, 1.0, 0, Direction.C2S),
        restart_gap(1, 1.0, 0, Direction.S2C),
        *call(1, 1, 1.1),
        closed(1, 1.5),
    ]
    write_observed(path, [[opened(1, 0.1), *call(1, 0, 0.2)], second], [(0.95, WHY)])
    assert [s for _, s in _statuses(capsys, path)].count("unobserved:restarted") == 3
    code, out, _ = run_main(capsys, "check", str(path))
    assert code == 3
    assert "not inspected: 1 gap in what was observed: 1 unobserved:restarted" in out.splitlines()
    code, out, _ = run_main(capsys, "check", "--json", str(path))
    unobserved = json.loads(out)["not_inspected"]["unobserved"]
    assert unobserved == {
        "gaps": 1,
        "bytes": 0,
        "bytes_at_least": True,  # what the observing process that died had not recorded
        "by_reason": {"restarted": {"gaps": 1, "bytes": 0, "bytes_at_least": True}},
    }
