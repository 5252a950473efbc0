"""What a TUI that takes over from a dead observing process shows first: the recording read
back up to where the dead process's lines end, then the live events, in that order."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from golem_proxy.events import Event, ExchangeCompleted, GapReason, ObservationLost
from golem_proxy.recording.format import RecordingWriter
from golem_proxy.recording.shared_file import RecordingFile, cut_unfinished_line, restart_recording
from golem_proxy.tui.bridge import EventBuffer
from golem_proxy.tui.reloading import ReloadGate, read_back
from tests.support.sessions import SessionBuilder, golem_header


def _recording(path: Path, calls: int) -> list[Event]:
    """A recording of ``calls`` pings on one connection; returns the events written."""
    s = SessionBuilder()
    s.open(1, 0.0)
    for n in range(calls):
        request = s.request(1, "ping", {}, 0.1 + n)
        s.respond(request, 0.2 + n, result={})
    writer = RecordingWriter.create(str(path), golem_header())
    for event in s.events:
        writer.write(event)
    writer.flush()
    writer.close()
    return s.events


def _read_whole(path: Path) -> tuple[list[Event], str]:
    """The events ``read_back`` queues for all of ``path``, and its note."""
    sink = EventBuffer(None)
    fd = os.open(path, os.O_RDONLY)
    try:
        note = read_back(fd, path.stat().st_size, sink, "killed", threading.Event())
    finally:
        os.close(fd)
    return sink.drain().events, note


def _exchanges(events: list[Event]) -> int:
    return sum(isinstance(event, ExchangeCompleted) for event in events)


def test_the_recording_is_read_back_up_to_the_end_measured_not_past_it(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    _recording(path, 3)
    end = path.stat().st_size
    with path.open("ab") as more:  # what the new process records after it took over
        more.write(b'{"seq":99,"t":9.0,"kind":"close","conn":1,"route":"main"}\n')
    sink = EventBuffer(None)
    fd = os.open(path, os.O_RDONLY)
    try:
        note = read_back(
            fd, end, sink, "the observing process was killed by SIGKILL", threading.Event()
        )
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0  # read with pread: a shared offset is left
    finally:
        os.close(fd)
    events = sink.drain().events
    assert _exchanges(events) == 3
    assert not any(getattr(event, "t", 0) == 9.0 for event in events)
    assert note == (
        f"observation restarted (the observing process was killed by SIGKILL); "
        f"{len(events)} events before it read back"
    )


def test_a_line_the_dead_process_left_torn_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    _recording(path, 2)
    whole = path.stat().st_size
    with path.open("ab") as torn:
        torn.write(b'{"seq":40,"t":5.0,"kind":"fra')  # killed mid-line
    events, note = _read_whole(path)
    assert _exchanges(events) == 2
    assert note.endswith(f"{len(events)} events before it read back")
    assert whole < path.stat().st_size


def test_after_the_cut_what_is_read_back_stops_where_the_dead_process_stopped(
    tmp_path: Path,
) -> None:
    """As a take-over goes: the torn line cut, the end measured, then the restart line and the
    new process's lines written after it: the restart line is read back (the forwarding
    process wrote it: no live event brings its row), the new process's lines are not (they
    come live)."""
    path = tmp_path / "live.jsonl"
    _recording(path, 2)
    record = RecordingFile(os.open(path, os.O_WRONLY), os.open(path, os.O_RDONLY))
    try:
        os.lseek(record.write_fd, 0, os.SEEK_END)
        os.write(record.write_fd, b'{"seq":40,"t":5.0,"kind":"close","conn":1,"rou')
        cut_unfinished_line(record)
        end = os.fstat(record.read_fd).st_size
        seq = restart_recording(record, 6.0, "killed")
        os.write(record.write_fd, b'{"seq":%d,"t":7.0,"kind":"close","conn":1,"route":"main",'
                 b'"reason":"client closed"}\n' % (seq + 1))  # fmt: skip
        sink = EventBuffer(None)
        read_back(record.read_fd, end, sink, "killed", threading.Event(), None, 5.0)
    finally:
        record.close()
    *before, restarted = sink.drain().events
    assert _exchanges(before) == 2
    assert max(event.t for event in before) < 5.0
    assert isinstance(restarted, ObservationLost)
    assert (restarted.conn, restarted.reason, restarted.t) == (0, GapReason.RESTARTED, 6.0)
    assert restarted.detail == "killed"


def test_the_restart_line_written_a_moment_later_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    _recording(path, 1)
    record = RecordingFile(os.open(path, os.O_WRONLY), os.open(path, os.O_RDONLY))
    try:
        os.lseek(record.write_fd, 0, os.SEEK_END)
        end = os.fstat(record.read_fd).st_size
        sink = EventBuffer(None)
        reading = threading.Thread(
            target=read_back,
            args=(record.read_fd, end, sink, "killed", threading.Event(), None, 30.0),
        )
        reading.start()
        restart_recording(record, 6.0, "killed")  # as the forwarding process: after the start
        reading.join(30)
        assert not reading.is_alive()
    finally:
        record.close()
    assert isinstance(sink.drain().events[-1], ObservationLost)


def test_reading_back_gives_up_once_told_to(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    _recording(path, 3)  # a few events (a recording of large answers has few): still checked
    stop = threading.Event()
    stop.set()
    sink = EventBuffer(None)
    fd = os.open(path, os.O_RDONLY)
    try:
        note = read_back(fd, path.stat().st_size, sink, "killed", stop)
    finally:
        os.close(fd)
    assert note == "observation restarted (killed); reading the rows before it back stopped"
    assert sink.drain().events == []


def test_a_damaged_recording_keeps_what_came_before_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    _recording(path, 2)
    with path.open("ab") as damaged:
        damaged.write(b"this is not a recording line\n")
    events, note = _read_whole(path)
    assert _exchanges(events) == 2
    assert note.startswith("observation restarted (killed); ")
    assert "then the recording could not be read (" in note


def test_live_events_wait_at_the_gate_until_it_opens_then_keep_their_order() -> None:
    delivered: list[int] = []
    gate = ReloadGate(delivered.append, limit=3)  # type: ignore[arg-type]
    for n in range(5):
        gate.push(n)  # type: ignore[arg-type]
    assert delivered == []
    assert gate.dropped == 2  # past the limit: counted, not held
    gate.open()
    gate.push(5)  # type: ignore[arg-type]
    assert delivered == [0, 1, 2, 5]


def test_events_dropped_elsewhere_count_with_the_buffers_own() -> None:
    sink = EventBuffer(limit=1)
    sink.push_many([object(), object()])  # type: ignore[list-item]
    sink.count_missed(3)
    assert sink.drain().missed == 4
    assert sink.total_missed == 4
