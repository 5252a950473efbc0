"""A recording read into the TUI (`tui FILE`, following it, or taken over from a dead observing
process) leaves its large payloads in the file (tui/payloads.py `LeftInFile`): each frame of
64 KiB or more comes with its place and a message whose long strings are elided, and every
reader that needs the bytes (the detail pane, the capture preview, `w`) reads them back
exactly; small frames, and lines that do not hold the payload as the writer puts it, are read
as before."""

from __future__ import annotations

import base64
import io
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from golem_proxy.analysis.filter_tree import quote
from golem_proxy.events import Event, ExchangeCompleted, FrameSeen
from golem_proxy.recording.format import RecordingReader, RecordingWriter, read_recording
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.bridge import EventBuffer
from golem_proxy.tui.compact import is_compact
from golem_proxy.tui.export import save_events
from golem_proxy.tui.payloads import RELEASE_OVER, LeftInFile, in_recording, payload_of
from golem_proxy.tui.png import decode_png
from golem_proxy.tui.reloading import read_back
from golem_proxy.tui.sources import RecordingSource, compacting_reader
from golem_proxy.tui.widgets import capture
from rhino_plugin.png import encode_rgb
from tests.support.sessions import SessionBuilder, golem_header, write_recording

from .helpers import recording_app, run, select, wait_for

KIB = 1024
SIZES = (200, 100 * KIB, 3 * KIB * KIB, 70 * KIB, 300, 1200 * KIB)
"""Answer sizes: small ones, ones whose whole exchange the fast reader takes (under 1 MiB),
and ones only the exact reader reads (their lines span its 1 MiB blocks)."""


def noisy_png(side: int = 160) -> str:
    """A PNG that does not compress (random pixels): over 64 KiB of base64."""
    pixels = random.Random(side).randbytes(side * side * 3)
    return base64.b64encode(encode_rgb(side, side, pixels)).decode("ascii")


def write_session(
    path: Path, sizes: tuple[int, ...] = SIZES, image: str = "", image_at: int = -1
) -> list[Event]:
    """A recording of one viewport.capture a size, each answered with that many bytes of
    base64 (but capture ``image_at``, answered with ``image``); returns the events written."""
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    for number, size in enumerate(sizes):
        request = s.request(1, "viewport.capture", {"n": number}, number + 0.1)
        blob = "".join(chr(65 + (i * 7 + number) % 26) for i in range(size))
        result = {"image": image if number == image_at else blob, "n": number}
        s.respond(request, number + 0.2, result=result)
    write_recording(str(path), s.events)
    return s.events


def frames(events: list[Event]) -> list[FrameSeen]:
    return [event for event in events if isinstance(event, FrameSeen)]


def assert_left_in_file(read: list[Event], written: list[Event]) -> None:
    """``read`` holds ``written``'s events, the large payloads left in the file and read back
    exactly, the exchanges naming the frames read."""
    assert len(read) == len(written)
    read_frames = frames(read)
    for frame, original in zip(read_frames, frames(written), strict=True):
        large = len(original.payload) >= RELEASE_OVER
        assert (in_recording(frame) is not None) == large, (frame.index, len(original.payload))
        assert payload_of(frame) == original.payload
        if large:
            assert frame.payload == b""  # nothing of it in memory
            assert frame.elided > 0  # nor in its message: the blob is a placeholder
            assert frame.message.obj["result"]["image"].endswith(" bytes elided>")  # type: ignore[attr-defined]
            assert frame.message.obj["result"]["n"] == original.message.obj["result"]["n"]  # type: ignore[attr-defined]
    exchanges = [event for event in read if isinstance(event, ExchangeCompleted)]
    originals = [event for event in written if isinstance(event, ExchangeCompleted)]
    for exchange, original_exchange in zip(exchanges, originals, strict=True):
        assert any(exchange.response is frame for frame in read_frames)
        assert exchange.outcome == original_exchange.outcome


def test_each_reader_of_the_tui_leaves_large_payloads_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    written = write_session(path)
    with open(path, "rb") as stream:  # the fast reader (`tui FILE`)
        reader = compacting_reader(stream, LeftInFile(str(path), stream.fileno()))
        assert_left_in_file(list(reader), written)
    with open(path, "rb") as stream:  # the exact one (`tui --follow`, each line by itself)
        leave = LeftInFile(str(path))
        assert_left_in_file(list(RecordingReader(stream, leave_payloads=leave)), written)
        assert leave.count == 4  # the answers of 64 KiB and more
    # Read without it, nothing changes: other commands get the bytes.
    assert [f.payload for f in frames(read_recording(str(path)).events)] == [
        f.payload for f in frames(written)
    ]


def test_a_restarted_tui_reads_the_session_so_far_with_them_left_in_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "session.jsonl"
    written = write_session(path)
    sink = EventBuffer(None)
    fd = os.open(path, os.O_RDONLY)
    try:
        read_back(fd, path.stat().st_size, sink, "killed", threading.Event(), str(path))
    finally:
        os.close(fd)
    assert_left_in_file(sink.drain().events, written)


def test_lines_not_as_the_writer_puts_them_are_kept_whole(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    written = write_session(path, (100 * KIB, 2 * KIB * KIB))
    lines = path.read_bytes().split(b"\n")
    # A line ended by CR LF: the payload is not followed by the writer's `}` and newline.
    answers = [n for n, line in enumerate(lines) if b'"dir":"s2c"' in line]
    for number in answers:
        lines[number] += b"\r"
    path.write_bytes(b"\n".join(lines))
    with open(path, "rb") as stream:
        read = list(compacting_reader(stream, LeftInFile(str(path))))
    read_answers = [frame for frame in frames(read) if not frame.is_request]
    assert [in_recording(frame) for frame in read_answers] == [None, None]
    assert [frame.payload for frame in read_answers] == [
        frame.payload for frame in frames(written) if not frame.is_request
    ]


def test_tui_file_keeps_no_large_payload_and_shows_reads_and_writes_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "session.jsonl"
    image = noisy_png()
    assert len(image) > RELEASE_OVER
    sizes = (150 * KIB,) * 5 + (2 * KIB * KIB,) * 3 + (300,)
    written = write_session(path, sizes, image, image_at=7)
    source = RecordingSource.open(str(path))
    app = GolemProxyApp(source, source.profile, "test")

    async def body() -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: app.source_done and len(app.model.flows) == 9)
            kept = sum(
                len(frame.payload)
                for flow in app.model.flows
                for frame in (flow.request, flow.response)
                if frame is not None
            )
            assert kept < 4 * KIB  # the requests; every answer is in the file
            # Over 1 MiB, the detail pane shows the message with its blob elided, as the
            # live tap has it (a frame under it is shown whole, read back: below).
            await select(pilot, 6)
            assert "bytes elided>" in app.detail.text()
            await select(pilot, 0)
            assert "bytes elided>" not in app.detail.text()
            assert " chars)" in app.detail.text()
            # The file cut under the viewer: the preview says so rather than drawing nothing;
            # whole again, the image is read back from the file and drawn.
            whole = path.read_bytes()
            os.truncate(path, len(whole) // 2)
            await select(pilot, 7)
            await wait_for(pilot, lambda: "(cut short)" in app.detail.text())
            path.write_bytes(whole)
            await select(pilot, 8)
            await select(pilot, 7)
            await wait_for(pilot, lambda: "Image  160x160 PNG" in app.detail.text())
            # `w` writes the view with the exact bytes, read back from the file.
            saved = app.model.view_to_save()
            assert (saved.flows, saved.lost) == (9, 0)
            view = tmp_path / "view.jsonl"
            save_events(str(view), golem_header(), saved.events, "")
            assert [f.payload for f in frames(read_recording(str(view)).events)] == [
                f.payload for f in frames(written)
            ]

    run(body())


def recorded_answer(path: Path, result: dict[str, Any]) -> tuple[FrameSeen, list[FrameSeen]]:
    """A recording of one call answered with ``result``: the answer written, and the frames
    a view's reader read back from it (leaving large payloads in the file)."""
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    request = s.request(1, "mesh.get_vertices", {}, 0.1)
    s.respond(request, 0.2, result=result)
    write_recording(str(path), s.events)
    answer = frames(s.events)[-1]
    assert len(answer.payload) > RELEASE_OVER
    with open(path, "rb") as stream:
        leave = LeftInFile(str(path), stream.fileno())
        read = frames(list(compacting_reader(stream, leave)))
        assert leave.count == (in_recording(read[-1]) is not None)
        if in_recording(read[-1]) is not None:
            assert payload_of(read[-1]) == answer.payload
    return answer, read


def test_a_large_answer_of_numbers_is_left_in_the_file_its_arrays_elided(tmp_path: Path) -> None:
    """A mesh's numbers, not base64: parsed, they cost four times their text, so the message
    keeps a placeholder for each long array (still an array) and the bytes stay in the file;
    the rest of the message, and what the exchange is decided to be, are the whole one's."""
    vertices = [[i * 0.5, i * 0.25, -i] for i in range(5_000)]
    answer, read = recorded_answer(
        tmp_path / "session.jsonl", {"vertices": vertices, "faces": [[0, 1, 2]], "name": "m"}
    )
    kept = read[-1]
    assert in_recording(kept) is not None and not is_compact(kept)
    assert kept.message.obj["result"] == {  # type: ignore[attr-defined]
        "vertices": ["<15000 numbers elided>"],
        "faces": [[0, 1, 2]],
        "name": "m",
    }
    assert 0 < kept.elided < len(answer.payload)


def test_a_large_answer_without_bulk_is_kept_compact(tmp_path: Path) -> None:
    """Names, neither base64 nor numbers: nothing to take out of its message, so the frame is
    left whole and the view keeps it compact (its bytes; the message parsed again when read),
    which costs less than the message kept parsed."""
    names = [f"object {i}: a layer" for i in range(5_000)]
    answer, read = recorded_answer(tmp_path / "session.jsonl", {"names": names})
    assert in_recording(read[-1]) is None and is_compact(read[-1])
    assert read[-1].payload == answer.payload
    assert read[-1].message.obj == answer.message.obj  # type: ignore[attr-defined]


def test_a_followed_file_growing_line_by_line_leaves_them_in_it(tmp_path: Path) -> None:
    """`tui --follow` (the exact reader through `TailStream`) on a file written in pieces: a
    large request left unanswered, requests answered out of order, a blank line, and a last
    line still being written; every large payload read back is its frame's."""
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    lonely = s.request(1, "scene.import", {"mesh": "M" * (90 * KIB)}, 0.1)
    first = s.request(1, "viewport.capture", {}, 0.2)
    second = s.request(1, "viewport.capture", {}, 0.3)
    s.respond(second, 0.4, result={"image": "B" * (1500 * KIB)})
    s.respond(first, 0.5, result={"image": "A" * (200 * KIB)})
    written = s.events
    path = tmp_path / "session.jsonl"
    whole = io_bytes(written)
    lines = whole.split(b"\n")
    lines.insert(3, b"")  # a blank line among them
    data = b"\n".join(lines)
    path.write_bytes(data[: len(data) // 3])
    source = RecordingSource.open(str(path), follow=True, poll=0.01)
    sink = EventBuffer(None)
    runner = threading.Thread(target=source.run, args=(sink,))
    runner.start()
    try:
        with open(path, "ab") as stream:
            for start in range(len(data) // 3, len(data), 50_000):  # pieces cut mid-line
                stream.write(data[start : start + 50_000])
                stream.flush()
        read: list[Event] = []
        deadline = time.monotonic() + 60
        while sum(isinstance(e, ExchangeCompleted) for e in read) < 2:
            assert time.monotonic() < deadline, read
            read += sink.drain().events
            time.sleep(0.01)
    finally:
        source.stop()
        runner.join(10)
    read_frames = {(f.direction, f.index): f for f in frames(read)}
    for original in frames(written):
        frame = read_frames[(original.direction, original.index)]
        assert payload_of(frame) == original.payload
        assert (in_recording(frame) is not None) == (len(original.payload) >= RELEASE_OVER)
    assert in_recording(read_frames[(lonely.direction, lonely.index)]) is not None


def io_bytes(events: list[Event]) -> bytes:
    """The recording of ``events`` as the writer writes it."""
    stream = io.BytesIO()
    writer = RecordingWriter(stream, golem_header())
    for event in events:
        writer.write(event)
    writer.flush()
    return stream.getvalue()


def test_a_body_filter_finds_a_member_of_an_answer_left_in_the_file(tmp_path: Path) -> None:
    """What a body filter searches of a frame left in the file is its message written as the
    profile's peers write a payload (its blob elided): ``"n": 3`` matches as in a frame kept."""
    path = tmp_path / "session.jsonl"
    write_session(path)
    source = RecordingSource.open(str(path))
    app = GolemProxyApp(source, source.profile, "test")

    async def body() -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: app.source_done and len(app.model.flows) == 6)
            assert in_recording(app.model.flows[3].response) is not None  # 70 KiB
            assert in_recording(app.model.flows[4].response) is None  # 300 bytes
            for number in (3, 4):
                app.model.set_filter("~s " + quote(f'"n": {number}}}'))
                assert [app.model.flows[i].number for i in app.model.view] == [number + 1]
            app.model.set_filter("")
            assert app.model.find('"n": 3}', 0) == 3  # the TUI's find, the same way

    run(body())


def test_a_file_renamed_after_it_was_read_is_still_read_back(tmp_path: Path) -> None:
    """Rotated or moved while the TUI shows it: the payloads come from the file it read,
    through the descriptor it opened, not from whatever the path names now."""
    path = tmp_path / "session.jsonl"
    written = write_session(path, (100 * KIB,))
    source = RecordingSource.open(str(path))
    sink = EventBuffer(None)
    source.run(sink)  # to the end; the reader's own descriptor is closed
    read = sink.drain().events
    os.rename(path, tmp_path / "session.1.jsonl")
    path.write_bytes(b"another file now\n")
    answer = frames(read)[-1]
    assert in_recording(answer) is not None
    assert payload_of(answer) == frames(written)[-1].payload


def test_an_answer_read_back_without_a_png_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The preview reads an answer whose image its message holds as a placeholder; one that
    turns out to hold no PNG is remembered, not read (16 MiB, say) each time it is shown."""
    path = tmp_path / "session.jsonl"
    write_session(path, (100 * KIB, 300))  # base64 letters, but not a PNG's
    reads: list[int] = []

    def counted(frame: FrameSeen, **options: Any) -> bytes:
        reads.append(frame.index)
        return payload_of(frame, **options)

    monkeypatch.setattr(capture, "payload_of", counted)

    async def body() -> None:
        async with recording_app(str(path)) as (app, pilot):
            preview = app.detail.query_one(capture.CapturePreview)
            for _ in range(3):
                await select(pilot, 0)
                await wait_for(pilot, lambda: reads and not preview.display)
                await select(pilot, 1)
            assert reads == [0]

    run(body())


def test_a_payload_changed_in_the_file_under_the_viewer_is_said_so(tmp_path: Path) -> None:
    """Read back, a payload is checked at the line's ends only: one whose numbers were changed
    in place (the same length, no longer JSON) is said so, and the pane shows the row's
    message; the app goes on."""
    path = tmp_path / "session.jsonl"
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    for number in range(2):
        request = s.request(1, "mesh.get_vertices", {}, number + 0.1)
        vertices = list(range(number * 100_000, number * 100_000 + 20_000))
        s.respond(request, number + 0.2, result={"vertices": vertices})
    write_recording(str(path), s.events)

    async def body() -> None:
        async with recording_app(str(path)) as (app, pilot):
            await select(pilot, 0)  # the pane has not read the second answer yet
            data = path.read_bytes()
            path.write_bytes(data.replace(b"112345,", b"11234x,"))
            await select(pilot, 1)
            text = " ".join(app.detail.text().split())
            assert "payload read back is not JSON: the file changed" in text
            assert '"vertices": [ "<20000 numbers elided>" ]' in text  # the row's message
            await select(pilot, 0)
            assert app.is_running

    run(body())


def test_a_preview_moved_away_from_stops_before_decoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paging on cancels the preview's worker for the capture left, whether the next one is
    decoded anew or was decoded before: a thread cannot be stopped, so it looks before
    decoding, and the image nobody shows is never decoded."""
    path = tmp_path / "session.jsonl"
    sides = (160, 150, 140)  # each answer over 64 KiB: left in the file
    images = [noisy_png(side) for side in sides]
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    for number, image in enumerate(images):
        request = s.request(1, "viewport.capture", {"n": number}, number + 0.1)
        s.respond(request, number + 0.2, result={"image": image, "n": number})
    write_recording(str(path), s.events)
    reading_first, go_on = threading.Event(), threading.Event()
    decoded: list[int] = []

    def held_back(frame: FrameSeen, **options: Any) -> bytes:
        if frame.index == 0:  # the first capture's answer: read once the pane moved on
            reading_first.set()
            assert go_on.wait(10)
        return payload_of(frame, **options)

    def counted(data: bytes) -> Any:
        image = decode_png(data)
        decoded.append(image.width)
        return image

    monkeypatch.setattr(capture, "payload_of", held_back)
    monkeypatch.setattr(capture, "decode_png", counted)

    async def body() -> None:
        async with recording_app(str(path)) as (app, pilot):
            preview = app.detail.query_one(capture.CapturePreview)
            await wait_for(pilot, lambda: decoded == [140])  # the cursor starts on the last
            for then, side in ((1, 150), (2, 140)):  # decoded anew, then decoded before
                reading_first.clear()
                go_on.clear()
                await select(pilot, 0)
                await wait_for(pilot, reading_first.is_set)
                await select(pilot, then)
                drawn = f"Image  {side}x{side} PNG"
                await wait_for(pilot, lambda drawn=drawn: drawn in app.detail.text())
                go_on.set()
                await wait_for(
                    pilot,
                    lambda: all(w.is_finished for w in app.workers if w.group == "capture"),
                )
            assert decoded == [140, 150]
            assert sorted(preview._decoded) == [2, 3]

    run(body())
