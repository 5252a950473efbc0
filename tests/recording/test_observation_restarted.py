"""The ``observation-restarted`` line (recording/shared_file.py): the forwarding process
writes it when a new observing process takes over the recording, which then appends to the
same file through the same open file description; the readers read it as the session's
gap, the writer writes it back, and the lines after it are read as any others."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

from golem_proxy.events import Direction, Event, GapReason, ObservationLost
from golem_proxy.recording.fast_reader import FastRecordingReader
from golem_proxy.recording.format import RecordingReader, RecordingWriter
from golem_proxy.recording.reader import read_recording
from golem_proxy.recording.shared_file import (
    RESTARTED_KIND,
    RecordingFile,
    cut_unfinished_line,
    end_recording,
    restart_recording,
)
from golem_proxy.replay.merge import append_recording
from tests.support.restarts import (
    HEADER,
    UNFINISHED,
    call,
    closed,
    opened,
    restart_gap,
    write_observed,
)

WHY = "the observing process was killed by SIGKILL; 80 bytes it had been handed not recorded"


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()[1:]]


def _session(t: float, reason: GapReason, detail: str = WHY) -> ObservationLost:
    return ObservationLost(
        conn=0, route="", direction=Direction.C2S, t=t, reason=reason, size=0, detail=detail
    )


def _two_processes(path: Path) -> list[int]:
    """Connection 1 open across a restart (its frame indexes go on), 2 opened after it."""
    first = [opened(1, 0.1), *call(1, 0, 0.2), *call(1, 1, 0.3)]
    second = [
        restart_gap(1, 1.0, 57),
        *call(1, 2, 1.1),
        opened(2, 1.2),
        *call(2, 0, 1.3),
        closed(2, 1.4),
        closed(1, 1.5),
    ]
    return write_observed(path, [first, second], [(0.95, WHY)])


def test_the_next_writer_appends_right_after_the_line_through_the_shared_offset(
    tmp_path: Path,
) -> None:
    path = tmp_path / "restarted.jsonl"
    writer = RecordingWriter.create(str(path), HEADER)
    writer.write(opened(1, 0.1))
    writer.close()
    record = RecordingFile(os.open(path, os.O_WRONLY), os.open(path, os.O_RDONLY))
    try:
        os.lseek(record.write_fd, 0, os.SEEK_END)
        os.write(record.write_fd, UNFINISHED)  # the dead one's offset: past the cut
        seq = restart_recording(record, 1.25, WHY)
        end = os.fstat(record.write_fd).st_size
        assert os.lseek(record.write_fd, 0, os.SEEK_CUR) == end
        resumed = RecordingWriter(os.fdopen(os.dup(record.write_fd), "wb"), HEADER, after_seq=seq)
        resumed.write(closed(1, 1.5))
        resumed.close()
    finally:
        record.close()
    data = path.read_bytes()
    assert b"\0" not in data and UNFINISHED not in data
    lines = _lines(path)
    assert [(line["seq"], line["kind"]) for line in lines] == [
        (1, "open"),
        (2, RESTARTED_KIND),
        (3, "close"),
    ]
    assert lines[1] == {"seq": 2, "t": 1.25, "kind": RESTARTED_KIND, "detail": WHY}
    recording = read_recording(str(path))
    assert not recording.truncated_tail
    assert recording.events[1] == _session(1.25, GapReason.RESTARTED)


def test_the_dead_writers_torn_line_is_cut_before_the_restart_line_is_written(
    tmp_path: Path,
) -> None:
    """What a new observing process reads back before the restart line exists (its TUI's
    rows, what was in flight) ends with the dead one's last whole line."""
    path = tmp_path / "restarted.jsonl"
    writer = RecordingWriter.create(str(path), HEADER)
    writer.write(opened(1, 0.1))
    writer.close()
    whole = path.stat().st_size
    record = RecordingFile(os.open(path, os.O_WRONLY), os.open(path, os.O_RDONLY))
    try:
        os.lseek(record.write_fd, 0, os.SEEK_END)
        os.write(record.write_fd, UNFINISHED)
        assert cut_unfinished_line(record) == whole == path.stat().st_size
        assert cut_unfinished_line(record) == whole  # nothing torn: nothing cut
        restart_recording(record, 1.25, WHY)
    finally:
        record.close()
    assert [line["kind"] for line in _lines(path)] == ["open", RESTARTED_KIND]


def test_a_resumed_writer_numbers_on_from_the_restart_line_and_writes_no_header(
    tmp_path: Path,
) -> None:
    path = tmp_path / "restarted.jsonl"
    seqs = _two_processes(path)
    lines = _lines(path)
    # Lines 1..7 by the first process, the restart line 8, the second process's from 9.
    assert seqs == [8]
    assert [line["seq"] for line in lines] == list(range(1, len(lines) + 1))
    assert lines[7]["kind"] == RESTARTED_KIND
    assert path.read_bytes().count(b'"format":"golem-proxy-recording"') == 1
    with path.open("rb") as stream:
        reader = RecordingReader(stream, path=str(path))
        events = list(reader)
    assert not reader.truncated_tail
    assert reader.restarts == [_session(0.95, GapReason.RESTARTED)]
    assert reader.stopped is None
    gap = events[8]
    assert isinstance(gap, ObservationLost)
    assert (gap.conn, gap.reason, gap.size) == (1, GapReason.RESTARTED, 57)
    # Frame indexes go on across the restart, and the exchange after it pairs its frames.
    assert [type(e).__name__ for e in events[9:12]] == [
        "FrameSeen",
        "FrameSeen",
        "ExchangeCompleted",
    ]


def test_the_fast_reader_reads_the_same_events(tmp_path: Path) -> None:
    path = tmp_path / "restarted.jsonl"
    _two_processes(path)
    with path.open("rb") as stream:
        exact = list(RecordingReader(stream))
    with path.open("rb") as stream:
        fast_reader = FastRecordingReader(stream)
        fast = list(fast_reader)
    assert fast == exact
    assert fast_reader.restarts == [_session(0.95, GapReason.RESTARTED)]


def _read(data: bytes) -> tuple[list[Event], RecordingReader]:
    reader = RecordingReader(io.BytesIO(data))
    return list(reader), reader


def test_a_copy_written_by_the_writer_keeps_the_session_lines(tmp_path: Path) -> None:
    """What a command that copies events writes (the TUI's save, replay's merge) says the
    same: the restart and the stop as their own lines, a connection's gap as ``unobserved``."""
    path = tmp_path / "restarted.jsonl"
    _two_processes(path)
    record = RecordingFile(os.open(path, os.O_WRONLY), os.open(path, os.O_RDONLY))
    try:
        end_recording(record, 2.0, "the observing process was stopped")
    finally:
        record.close()
    events, reader = _read(path.read_bytes())
    copy = io.BytesIO()
    writer = RecordingWriter(copy, reader.header)
    for event in events:
        writer.write(event)
    writer.flush()
    assert copy.getvalue() == path.read_bytes()  # byte for byte
    again, copied = _read(copy.getvalue())
    assert again == events
    assert copied.restarts == reader.restarts and copied.stopped == reader.stopped
    assert copied.stopped == _session(2.0, GapReason.STOPPED, "the observing process was stopped")


def test_a_session_gap_copied_as_an_unobserved_line_is_still_the_sessions() -> None:
    """Before the writer wrote the session's lines back as such, a copy had them as
    ``unobserved`` lines of connection 0: still read as the stop or the restart."""
    lines = [
        {"seq": 1, "t": 1.0, "kind": "unobserved", "conn": 0, "route": "", "dir": "c2s"}
        | {"reason": reason, "size": 0, "detail": WHY}
        for reason in ("restarted", "stopped")
    ]
    header = io.BytesIO()
    RecordingWriter(header, HEADER)
    data = header.getvalue() + b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    _, reader = _read(data)
    assert reader.restarts == [_session(1.0, GapReason.RESTARTED)]
    assert reader.stopped == _session(1.0, GapReason.STOPPED)


def test_appending_a_recording_keeps_its_session_lines_on_connection_0(tmp_path: Path) -> None:
    base, extra = tmp_path / "base.jsonl", tmp_path / "extra.jsonl"
    write_observed(base, [[opened(1, 0.1), *call(1, 0, 0.2), closed(1, 0.3)]], [])
    _two_processes(extra)
    append_recording(str(base), str(extra))
    recording = read_recording(str(base))
    sessions = [e for e in recording.events if isinstance(e, ObservationLost) and e.conn == 0]
    assert [(e.reason, e.t) for e in sessions] == [(GapReason.RESTARTED, 0.95 + 0.3)]
    kinds = [line["kind"] for line in _lines(base)]
    assert kinds.count(RESTARTED_KIND) == 1


def test_a_reader_that_does_not_know_the_line_skips_it(tmp_path: Path) -> None:
    """An older reader skips any kind it does not know: the same file with the line's kind
    renamed reads as the events around it."""
    path = tmp_path / "restarted.jsonl"
    _two_processes(path)
    events, _ = _read(path.read_bytes())
    unknown = path.read_bytes().replace(RESTARTED_KIND.encode(), b"observation-someday")
    older, reader = _read(unknown)
    assert older == [e for e in events if not (isinstance(e, ObservationLost) and e.conn == 0)]
    assert reader.restarts == []
