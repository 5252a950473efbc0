"""Where the recorder writes large payloads (golem_proxy/recording/payload_places.py): the
places it notes read back the exact bytes from the real file, after gap lines and in a
recording another process began; small, redacted or base64-stored payloads get none; and a
file cut, changed or gone is a one-line error, never other bytes."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import threading
from pathlib import Path
from typing import Optional

import pytest

from golem_proxy.events import Event, FrameSeen
from golem_proxy.live.recorder import Recorder
from golem_proxy.recording.format import RecordingWriter, read_recording
from golem_proxy.recording.payload_places import (
    LONGEST_LINE_START,
    PLACE_FROM,
    PayloadNotReadBack,
    PayloadPlace,
    PayloadPlaces,
    not_held,
    place_key,
    read_back,
)
from tests.support.sessions import SessionBuilder, golem_header


def answered_calls(sizes: list[int], conn: int = 1) -> list[Event]:
    """Connection ``conn``'s calls, each answered with a string of about ``size`` bytes of
    printable ASCII (JSON without escapes: the payload is written as it came)."""
    s = SessionBuilder(check=False)
    s.open(conn, 0.0)
    for number, size in enumerate(sizes):
        request = s.request(conn, "viewport.capture", {"n": number}, number + 0.1)
        blob = "".join(chr(33 + (i * 7 + number) % 90) for i in range(size)).replace('"', "'")
        s.respond(request, number + 0.2, result={"image": blob.replace("\\", "/")})
    return s.events


def frames(events: list[Event]) -> list[FrameSeen]:
    return [event for event in events if isinstance(event, FrameSeen)]


def record(path: Path, events: list[Event], places: PayloadPlaces) -> None:
    recorder = Recorder(
        RecordingWriter.create(str(path), golem_header(), from_tap=True), places=places
    )
    for event in events:
        recorder(event)
    recorder.close()
    assert recorder.error is None


def test_each_large_payload_is_read_back_exactly_from_the_recording(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    places = PayloadPlaces(str(path))
    events = answered_calls([100, PLACE_FROM - 200, PLACE_FROM, 300_000, 50, 2_000_000])
    record(path, events, places)
    large = [frame for frame in frames(events) if len(frame.payload) >= PLACE_FROM]
    assert len(large) == 3
    assert len(places) == 3  # and none for the small ones
    for frame in large:
        place = places.take(place_key(frame))
        assert place is not None and place.path == str(path)
        assert read_back(place) == frame.payload
    assert len(places) == 0
    # The file is the recording a reader reads: nothing about places is in it.
    assert [f.payload for f in frames(read_recording(str(path)).events)] == [
        f.payload for f in frames(events)
    ]


def test_payloads_not_written_as_they_came_get_no_place(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    places = PayloadPlaces(str(path), smallest=1)
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    request = s.request(1, "viewport.capture", {}, 0.1)
    s.respond(request, 0.2, result={"image": "B" * 200_000})
    request_frame, answer = frames(s.events)
    # A payload spanning lines is stored base64; a redacted one as its redacted message.
    spanning = dataclasses.replace(answer, payload=answer.payload.replace(b",", b",\n", 1))
    redacted = dataclasses.replace(request_frame, redacted=("params.secret",))
    record(path, [s.events[0], redacted, spanning], places)
    assert len(places) == 0


class GatedStream(io.BytesIO):
    """A disk that takes nothing until `opened` is set (no descriptor: written with
    ``writelines``), so that the recorder misses events and writes a gap line. With
    ``mirror``, what it holds is also that file's content once each write is done."""

    def __init__(self, mirror: Optional[Path] = None) -> None:
        super().__init__()
        self.opened = threading.Event()
        self.mirror = mirror

    def writelines(self, lines: object) -> None:
        self.opened.wait(10)
        super().writelines(lines)  # type: ignore[arg-type]
        if self.mirror is not None:
            self.mirror.write_bytes(self.getvalue())

    def close(self) -> None:
        self.written = self.getvalue()
        super().close()


def test_places_count_the_gap_line_written_before_an_event(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    places = PayloadPlaces(str(path))
    opened, request0, answer0, _done0, request1, answer1, _done1, _req2, answer2 = answered_calls(
        [200_000, 200_000, 200_000]
    )[:9]
    stream = GatedStream()
    recorder = Recorder(
        RecordingWriter(stream, golem_header(), from_tap=True), places=places, max_queued=300_000
    )
    for event in (opened, request0, answer0, request1):
        recorder(event)
    recorder(answer1)  # past max_queued while the disk takes nothing: missed
    assert recorder.missed == 1
    stream.opened.set()
    written = threading.Event()
    recorder.after_written(written.set)
    assert written.wait(10)
    recorder(answer2)  # written right after the gap line that says one event was missed
    recorder.close()
    path.write_bytes(stream.written)
    kinds = [json.loads(line)["kind"] for line in path.read_bytes().splitlines()[1:]]
    assert kinds == ["open", "frame", "frame", "frame", "gap", "frame"]
    for answer in (answer0, answer2):
        place = places.take(place_key(answer))
        assert place is not None and read_back(place) == answer.payload
    assert places.take(place_key(answer1)) is None


def test_a_recording_taken_over_is_read_back_where_the_new_lines_go(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    before, after = answered_calls([150_000]), answered_calls([250_000, 90_000], conn=2)
    record(path, before, PayloadPlaces(str(path)))
    lines = len(path.read_bytes().splitlines())
    places = PayloadPlaces(str(path))
    with open(path, "r+b") as stream:  # as the forwarding process hands the file on
        stream.seek(0, os.SEEK_END)
        writer = RecordingWriter(stream, golem_header(), after_seq=lines - 1)
        recorder = Recorder(writer, places=places)
        for event in after[1:]:
            recorder(event)
        recorder.close()
    for frame in frames(after):
        if len(frame.payload) >= PLACE_FROM:
            place = places.take(place_key(frame))
            assert place is not None and read_back(place) == frame.payload


def written_place(tmp_path: Path) -> tuple[Path, PayloadPlace, bytes]:
    path = tmp_path / "r.jsonl"
    places = PayloadPlaces(str(path))
    events = answered_calls([100_000])
    record(path, events, places)
    answer = frames(events)[-1]
    place = places.take(place_key(answer))
    assert place is not None
    return path, place, answer.payload


def not_read_back(place: PayloadPlace) -> Optional[str]:
    with pytest.raises(PayloadNotReadBack) as caught:
        read_back(place)
    text = str(caught.value)
    assert "\n" not in text
    # What a view about to be written checks, without reading the payload, says the same.
    assert not_held(place) == text
    return text


def test_a_recording_cut_short_is_said_not_to_hold_it(tmp_path: Path) -> None:
    path, place, _payload = written_place(tmp_path)
    os.truncate(path, place.places.written_offset(place, 0) + place.size // 2)
    assert "ends before it (cut short)" in (not_read_back(place) or "")


def test_a_recording_changed_around_it_is_said_not_to_hold_it(tmp_path: Path) -> None:
    path, place, _payload = written_place(tmp_path)
    data = bytearray(path.read_bytes())
    # Another line of the same length where the frame's was: its number differs.
    at = place.places.written_offset(place, 0)  # in the file: after the header
    seq_digit = data.index(b'"seq":', at - len(place.line_start)) + len(b'"seq":')
    data[seq_digit] = ord("9") if data[seq_digit] != ord("9") else ord("8")
    path.write_bytes(bytes(data))
    assert "no longer holds it at byte" in (not_read_back(place) or "")
    # Every byte moved by one: the line's end is not where it was.
    path.write_bytes(b" " + path.read_bytes())
    assert "no longer holds it" in (not_read_back(place) or "")


def test_the_start_alone_is_read_back_with_its_line_checked_whole(tmp_path: Path) -> None:
    path, place, payload = written_place(tmp_path)
    assert read_back(place, first=4096) == payload[:4096]
    assert read_back(place, first=10 * len(payload)) == payload
    assert not_held(place) == ""
    # The line's end changed, far past the start read: the start is not shown as the payload's.
    data = bytearray(path.read_bytes())
    end = place.places.written_offset(place, 0) + place.size
    assert data[end : end + 2] == b"}\n"
    data[end] = ord("]")
    path.write_bytes(bytes(data))
    with pytest.raises(PayloadNotReadBack, match="no longer holds it at byte"):
        read_back(place, first=4096)


def test_a_recording_gone_is_said_to_be_gone(tmp_path: Path) -> None:
    path, place, _payload = written_place(tmp_path)
    path.unlink()
    assert "cannot be opened" in (not_read_back(place) or "")


def test_places_no_view_took_are_bounded_oldest_first() -> None:
    places = PayloadPlaces("r.jsonl", most=3)
    for number in range(5):
        places.note(("main", 1, "s2c", number), number * 1000, 10, b"{")
    assert len(places) == 3
    assert places.take(("main", 1, "s2c", 0)) is None
    assert places.take(("main", 1, "s2c", 1)) is None
    taken = places.take(("main", 1, "s2c", 4))
    assert taken is not None and taken.offset == 4000
    assert os.path.isabs(taken.path)
    assert places.take(("main", 1, "s2c", 4)) is None  # taken once


def test_a_line_written_before_the_recorders_first_is_counted(tmp_path: Path) -> None:
    # A restarted observing process makes its recorder, then the forwarding process writes
    # the `observation-restarted` line at the shared offset before any line of the new one.
    path = tmp_path / "r.jsonl"
    places = PayloadPlaces(str(path))
    with open(path, "w+b") as stream:
        writer = RecordingWriter(stream, golem_header(), from_tap=True)
        recorder = Recorder(writer, places=places)
        os.write(stream.fileno(), b'{"seq":1,"kind":"unobserved","note":"another process"}\n')
        events = answered_calls([120_000])
        for event in events:
            recorder(event)
        recorder.close()
    answer = frames(events)[-1]
    place = places.take(place_key(answer))
    assert place is not None and read_back(place) == answer.payload


def test_reading_back_waits_for_a_disk_that_is_behind(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    places = PayloadPlaces(str(path))
    stream = GatedStream(mirror=path)
    recorder = Recorder(RecordingWriter(stream, golem_header(), from_tap=True), places=places)
    events = answered_calls([150_000])
    for event in events:
        recorder(event)
    recorder.flush()
    answer = frames(events)[-1]
    place = places.take(place_key(answer))
    assert place is not None
    with pytest.raises(PayloadNotReadBack) as caught:  # not written yet, after the wait
        read_back(place, wait=0.05)
    assert str(caught.value) == f"the recorder has not written it to {path} yet (after 0.05 s)"
    assert not_held(place) == ""  # not yet, and it still may be: a view keeps it
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(read_back(place, wait=10)))
    reader.start()
    stream.opened.set()
    reader.join(15)
    recorder.close()
    assert got == [answer.payload]
    assert not_held(place) == ""


class FullDisk(io.BytesIO):
    """A disk that takes the header, then fails every write (no descriptor)."""

    def writelines(self, lines: object) -> None:
        raise OSError(28, "No space left on device")


def test_a_line_a_disk_error_kept_from_the_file_is_said_to_be_lost(tmp_path: Path) -> None:
    places = PayloadPlaces(str(tmp_path / "r.jsonl"))
    recorder = Recorder(
        RecordingWriter(FullDisk(), golem_header()), places=places, on_error=lambda _: None
    )
    events = answered_calls([100_000])
    for event in events:
        recorder(event)
    recorder.close()
    place = places.take(place_key(frames(events)[-1]))
    assert place is not None
    assert (not_read_back(place) or "").endswith(
        "stopped before it was written ([Errno 28] No space left on device)"
    )


def test_the_file_moved_under_the_recorder_stops_the_places(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    places = PayloadPlaces(str(path))
    with open(path, "w+b") as stream:
        recorder = Recorder(RecordingWriter(stream, golem_header(), from_tap=True), places=places)
        first, second = answered_calls([100_000]), answered_calls([110_000], conn=2)
        for event in first:
            recorder(event)
        written = threading.Event()
        recorder.after_written(written.set)
        assert written.wait(10)
        os.lseek(stream.fileno(), 0, os.SEEK_END)
        os.write(stream.fileno(), b"\n" * 10)  # not the recorder's
        for event in second:
            recorder(event)
        recorder.close()
    before = places.take(place_key(frames(first)[-1]))
    assert before is not None and read_back(before) == frames(first)[-1].payload
    after = places.take(place_key(frames(second)[-1]))
    assert after is not None
    assert "stopped before it was written (its offset moved under the recorder)" in (
        not_read_back(after) or ""
    )


def test_a_line_start_of_kilobytes_gets_no_place() -> None:
    places = PayloadPlaces("r.jsonl")
    places.note(("main", 1, "s2c", 1), 0, PLACE_FROM, b"{" + b"x" * LONGEST_LINE_START)
    places.note(("main", 1, "s2c", 2), 0, PLACE_FROM, b"{" + b"x" * 100)
    assert len(places) == 1 and places.take(("main", 1, "s2c", 2)) is not None


def test_a_fifo_put_where_the_recording_was_is_refused_not_waited_on(tmp_path: Path) -> None:
    path, place, _payload = written_place(tmp_path)
    path.unlink()
    os.mkfifo(path)  # nobody will ever write to it: opening it to read would wait forever
    assert "a FIFO, not a regular file" in (not_read_back(place) or "")
