"""The ``observation-stopped`` line (recording/shared_file.py) is read as the session's gap:
the readers say where observation stopped and why, not only that the recording was not
closed."""

from __future__ import annotations

import os
from pathlib import Path

from golem_proxy.events import ConnectionOpened, GapReason, ObservationLost
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo
from golem_proxy.recording.reader import read_recording
from golem_proxy.recording.shared_file import RecordingFile, end_recording
from tests.support.cli_helpers import run_cli

WHY = "the observing process was killed by SIGKILL"


def _stopped_recording(path: Path) -> None:
    """A recording whose observing process died with a connection open: the forwarding
    process ended it (`end_recording`)."""
    header = Header.new("golem", [RouteInfo("main", "127.0.0.1:1", "127.0.0.1:2")], ())
    writer = RecordingWriter.create(str(path), header)
    writer.write(
        ConnectionOpened(conn=1, route="main", client="127.0.0.1:3", upstream="127.0.0.1:2", t=0.5)
    )
    writer.close()
    record = RecordingFile(os.open(path, os.O_WRONLY), os.open(path, os.O_RDONLY))
    try:
        end_recording(record, 1.25, WHY)
    finally:
        record.close()


def test_the_stop_is_read_as_a_gap_of_the_whole_session(tmp_path: Path) -> None:
    path = tmp_path / "stopped.jsonl"
    _stopped_recording(path)
    last = read_recording(str(path)).events[-1]
    assert isinstance(last, ObservationLost)
    assert (last.reason, last.t, last.detail) == (GapReason.STOPPED, 1.25, WHY)


def test_show_and_check_name_where_observation_stopped_and_why(tmp_path: Path) -> None:
    path = tmp_path / "stopped.jsonl"
    _stopped_recording(path)
    note = (
        f"note: {path}: observation stopped at 1.250 s: {WHY}; what was forwarded after it "
        "is not in this recording"
    )
    shown = run_cli("show", str(path))
    assert shown.returncode == 0, shown.stderr
    assert "unobserved:stopped" in shown.stdout
    assert shown.stderr.strip() == note
    checked = run_cli("check", str(path))
    assert checked.returncode == 3, checked.stderr  # what was not observed was not checked
    assert checked.stderr.strip() == note
    assert "1 gap in what was observed: 1 unobserved:stopped" in checked.stdout
