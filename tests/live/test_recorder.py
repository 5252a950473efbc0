"""The recorder writes on its own thread: in order, flushed on request, bounded in memory, and a
disk error stops the recording without ever raising into the relay."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import pytest

from golem_proxy.events import ConnectionClosed, ConnectionOpened, Event, EventsMissed
from golem_proxy.live.recorder import Recorder
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo, read_recording

HEADER = Header.new("golem", [RouteInfo("main", "127.0.0.1:19876", "127.0.0.1:9876")])


def opened(conn: int) -> Event:
    return ConnectionOpened(
        conn=conn, route="main", client="127.0.0.1:50000", upstream="127.0.0.1:9876", t=conn / 1000
    )


def test_events_reach_the_file_in_order(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    recorder = Recorder(RecordingWriter.create(str(path), HEADER))
    for conn in range(1, 2001):
        recorder(opened(conn))
        recorder(ConnectionClosed(conn=conn, route="main", reason="client closed", t=conn / 1000))
    recorder.close()
    events = read_recording(str(path)).events
    assert [event.conn for event in events] == [n for n in range(1, 2001) for _ in (0, 1)]
    assert recorder.error is None


def test_flush_makes_events_readable_while_recording(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    recorder = Recorder(RecordingWriter.create(str(path), HEADER))
    recorder(opened(1))
    recorder.flush()
    deadline = time.monotonic() + 5
    while not read_recording(str(path)).events and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [event.conn for event in read_recording(str(path)).events] == [1]
    recorder.close()


class SlowStream(io.BytesIO):
    """A disk that takes a while per write, counting how much was queued at most."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def writelines(self, lines: object) -> None:
        time.sleep(0.01)
        self.writes += 1
        super().writelines(lines)  # type: ignore[arg-type]

    def close(self) -> None:  # keep the content readable after close
        pass


class StuckStream(io.BytesIO):
    """A disk whose writes hang until the test lets them go."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def writelines(self, lines: object) -> None:
        self.gate.wait()
        super().writelines(lines)  # type: ignore[arg-type]

    def close(self) -> None:  # keep the content readable after close
        pass


def test_a_stuck_disk_never_holds_the_caller_back_and_the_gap_is_recorded(
    tmp_path: Path,
) -> None:
    stream = StuckStream()
    recorder = Recorder(RecordingWriter(stream, HEADER), max_queued=4096)

    def record_all() -> None:
        for conn in range(1, 501):
            recorder(opened(conn))
            assert recorder._queued <= 4096

    caller = threading.Thread(target=record_all)
    caller.start()
    caller.join(timeout=60)  # with the disk stuck, a waiting caller would never finish
    assert not caller.is_alive()
    assert recorder.total_missed > 0
    stream.gate.set()
    deadline = time.monotonic() + 30
    while recorder._queued and time.monotonic() < deadline:
        recorder.flush()
        time.sleep(0.005)
    recorder(opened(501))  # room again once the disk moves: a gap line, then this event
    recorder.close()
    path = tmp_path / "r.jsonl"
    path.write_bytes(stream.getvalue())
    events = read_recording(str(path)).events
    conns = [e.conn for e in events if isinstance(e, ConnectionOpened)]
    missed = sum(e.count for e in events if isinstance(e, EventsMissed))
    assert conns == sorted(conns) and conns[-1] == 501
    assert missed + len(conns) == 501


class FailingStream(io.BytesIO):
    def writelines(self, lines: object) -> None:
        raise OSError(28, "No space left on device")


def test_a_disk_error_stops_the_recording_not_the_caller() -> None:
    messages: list[str] = []
    recorder = Recorder(RecordingWriter(FailingStream(), HEADER), on_error=messages.append)
    recorder(opened(1))
    recorder.flush()
    deadline = time.monotonic() + 5
    while recorder.error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    for conn in range(2, 100):  # never raises, never blocks
        recorder(opened(conn))
    recorder.close()
    assert isinstance(recorder.error, OSError)
    assert len(messages) == 1 and "No space left on device" in messages[0]
    assert not any(thread.name == "recorder" for thread in threading.enumerate())


def test_events_after_close_are_ignored_without_blocking() -> None:
    stream = SlowStream()
    recorder = Recorder(RecordingWriter(stream, HEADER), max_queued=64)
    recorder(opened(1))
    recorder.close()
    for conn in range(2, 200):  # would wait forever on a full queue nobody drains
        recorder(opened(conn))
    assert len(stream.getvalue().splitlines()) == 2  # the header and the one event


def test_max_queued_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_queued"):
        Recorder(RecordingWriter(io.BytesIO(), HEADER), max_queued=0)
