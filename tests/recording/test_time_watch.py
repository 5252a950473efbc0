"""Times (``t``) watched as a recording is read: a negative one is refused by every reader in
the same words; a step back within one connection's direction is found once, at its first
place; lines whose times go back as the proxy writes them (frames decoded after lines
published at once) are never taken for one."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Optional

import pytest

from golem_proxy.analysis.trace import open_flows
from golem_proxy.recording.fast_reader import FastRecordingReader
from golem_proxy.recording.format import RecordingError, RecordingReader, read_recording
from golem_proxy.recording.samples import samples
from golem_proxy.recording.time_watch import TimeStep, TimeWatch
from golem_proxy.replay.index import load_exchanges
from tests.replay.traces import modelling_session


def watched(*lines: tuple[float, str, int, Optional[str]]) -> TimeWatch:
    watch = TimeWatch()
    for number, (t, kind, conn, direction) in enumerate(lines, 2):
        watch.see(t, kind, conn, direction, number)
    return watch


def test_times_in_order_are_no_step_back() -> None:
    watch = watched((0.0, "open", 1, None), (0.1, "frame", 1, "c2s"), (0.1, "frame", 1, "s2c"))
    assert (watch.first, watch.count) == (None, 0)


def test_lines_of_different_streams_may_go_back() -> None:
    # Frames are written when the tap decodes them, after lines published at once (another
    # connection opened meanwhile); a held request keeps the time the client sent it.
    watch = watched(
        (0.022, "open", 2, None),
        (0.009, "frame", 1, "s2c"),
        (0.009, "exchange", 1, None),
        (5.0, "frame", 2, "s2c"),
        (1.0, "frame", 1, "c2s"),
        (1.0, "violation", 1, "c2s"),
    )
    assert (watch.first, watch.count) == (None, 0)


def test_the_first_step_back_in_a_stream_is_kept_and_every_one_counted() -> None:
    watch = watched(
        (1.0, "open", 3, None),
        (9.0, "frame", 3, "c2s"),
        (8.5, "frame-error", 3, "c2s"),
        (8.0, "discarded", 3, "c2s"),
        (9.5, "frame", 3, "s2c"),
    )
    assert watch.first == TimeStep(4, 3, "c2s", 9.0, 8.5)
    assert watch.count == 2
    assert watch.first.describe() == (
        "t goes back from 9.000000 to 8.500000 s in connection 3's c2s stream "
        "(lines out of order, or times changed)"
    )


def test_a_connection_closed_is_forgotten() -> None:
    watch = watched((9.0, "frame", 3, "c2s"), (9.1, "close", 3, None), (1.0, "frame", 4, "c2s"))
    assert watch.first is None
    assert watch._latest == {(4, "c2s"): 1.0}  # what is held: the streams still open


def test_recordings_made_through_the_proxy_note_nothing() -> None:
    # Their lines go back in time (frames decoded after an open published at once), their
    # streams never do.
    went_back = False
    for path in samples().values():  # the shipped samples, not a demo's recordings
        times = [event.t for event in read_recording(str(path)).events]
        went_back = went_back or any(b < a for a, b in zip(times, times[1:]))
        with open(path, "rb") as stream:
            reader = FastRecordingReader(stream)
            list(reader)
        assert (reader.times.first, reader.seq.first) == (None, None), path
    assert went_back


def _with_t(path: Path, number: int, t: bytes) -> Path:
    """The recording at ``path`` with the ``t`` of line ``number`` replaced."""
    lines = path.read_bytes().splitlines(keepends=True)
    head, _, rest = lines[number - 1].partition(b',"t":')
    lines[number - 1] = head + b',"t":' + t + rest[rest.index(b',"kind"') :]
    path.write_bytes(b"".join(lines))
    return path


@pytest.mark.parametrize("t", [b"-1.0", b"-0.001", b"-5e-05", b"-3"])
def test_a_negative_t_is_refused_by_every_reader_alike(tmp_path: Path, t: bytes) -> None:
    # Line 3 is a request frame in the writer's layout: the fast readers' own ground.
    path = _with_t(modelling_session(tmp_path / "t.jsonl"), 3, t)
    said = f"line 3: t must be a number of seconds from 0 to 1e12, not {t.decode()}"
    with pytest.raises(RecordingError) as exact:
        read_recording(str(path))
    assert str(exact.value) == f"{path}: {said}"
    with pytest.raises(RecordingError) as scanned:
        load_exchanges(str(path))  # replay, verify, diff, mcp-verify
    assert str(scanned.value) == str(exact.value)
    with open(path, "rb") as stream, pytest.raises(RecordingError) as fast:
        list(FastRecordingReader(stream, path=str(path)))  # the TUI
    assert str(fast.value) == str(exact.value)


def test_a_t_that_goes_back_is_noted_by_every_reader_and_no_latency_goes_negative(
    tmp_path: Path,
) -> None:
    # The answer of the second exchange (line 7) recorded before its request (line 6), and
    # before the first answer (line 4).
    path = _with_t(modelling_session(tmp_path / "t.jsonl"), 7, b"0.0015")
    with open(path, "rb") as stream:
        exact = RecordingReader(stream)
        list(exact)
    assert exact.times.first == TimeStep(7, 1, "s2c", 0.002, 0.0015)
    with open(path, "rb") as stream:
        fast = FastRecordingReader(stream)
        list(fast)
    assert (fast.times.first, fast.times.count) == (exact.times.first, exact.times.count)
    with open_flows(str(path)) as trace:
        latencies = [flow.latency for flow in trace.flows()]
    assert latencies[1] is None  # not measured: the times are out of order
    assert all(latency is None or latency >= 0 for latency in latencies)


def test_a_whole_recording_notes_nothing(tmp_path: Path) -> None:
    data = modelling_session(tmp_path / "t.jsonl").read_bytes()
    reader = FastRecordingReader(io.BytesIO(data))
    list(reader)
    assert (reader.times.first, reader.seq.first) == (None, None)
