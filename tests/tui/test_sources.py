"""Recordings as sources: read once, or tailed while a writer appends to them."""

from __future__ import annotations

import dataclasses
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.analysis.trace import open_flows
from golem_proxy.events import SessionEnded
from golem_proxy.recording.files import open_private
from golem_proxy.recording.format import (
    SESSION_END_PROMISE,
    RecordingError,
    RecordingWriter,
    encode_event,
)
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.bridge import Batch, EventBuffer
from golem_proxy.tui.sources import RecordingSource
from tests.replay.traces import modelling_session
from tests.support.sessions import SessionBuilder, golem_header

from .helpers import run, wait_for


def _followed(path: str) -> tuple[SessionBuilder, RecordingWriter, RecordingSource]:
    """A recording of one ping, its writer left open to write on, and a source following it."""
    s = SessionBuilder()
    s.open(1, 0.0)
    s.respond(s.request(1, "ping", {}, 0.1), 0.2, result={})
    writer = RecordingWriter.create(path, golem_header())
    for event in s.events:
        writer.write(event)
    writer.flush()
    return s, writer, RecordingSource.open(path, follow=True, poll=0.01)


def test_follow_tails_complete_lines_and_waits_for_a_partial_one(tmp_path: Path) -> None:
    s, writer, source = _followed(str(tmp_path / "live.jsonl"))

    async def body() -> None:
        app = GolemProxyApp(source, source.profile, "follow", header=source.header)
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 1)
            s.events = []
            second = s.request(1, "scene.list_layers", {}, 0.5)
            s.respond(second, 0.6, result={"layers": []})
            lines = [encode_event(e, GOLEM, 100 + i) or b"" for i, e in enumerate(s.events)]
            # The request line, then half of the response line: the writer is mid-line.
            data = b"".join(lines[:2]) + lines[2][:10]
            writer.stream.write(data)
            writer.stream.flush()
            await wait_for(pilot, lambda: len(app.model.flows) == 2)
            assert app.model.flows[1].pending
            writer.stream.write(lines[2][10:] + b"".join(lines[3:]))
            writer.stream.flush()
            await wait_for(pilot, lambda: not app.model.flows[1].pending)
            assert app.model.flows[1].status(GOLEM) == "ok"
            assert not app.source_done  # still following
            assert "following" in app.status_bar.text
        writer.close()

    run(body())


def test_follow_stops_at_the_session_end_line_and_says_when(tmp_path: Path) -> None:
    path = str(tmp_path / "live.jsonl")
    s = SessionBuilder()
    s.open(1, 0.0)
    s.respond(s.request(1, "ping", {}, 0.1), 0.2, result={})
    header = dataclasses.replace(golem_header(), extra={SESSION_END_PROMISE: True})
    writer = RecordingWriter.create(path, header)
    for event in s.events:
        writer.write(event)
    writer.flush()
    source = RecordingSource.open(path, follow=True, poll=0.01)

    async def body() -> None:
        app = GolemProxyApp(source, source.profile, "follow", header=source.header)
        async with app.run_test(size=(160, 30)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 1)
            await pilot.pause(0.1)
            assert not app.source_done  # a quiet session: still following
            s.events = []
            s.close(1, 0.3)
            for event in (*s.events, SessionEnded(t=3.25, reason="stopped by SIGINT")):
                writer.write(event)
            writer.flush()
            await wait_for(pilot, lambda: app.source_done)
            said = "session ended at 2025-01-01 12:00:03 UTC, 3.250 s in (stopped by SIGINT)"
            assert app.finished_reason == said
            assert not app.failed
            await wait_for(pilot, lambda: said in app.status_bar.text)
        writer.close()

    run(body())


def test_a_request_waiting_when_following_stops_reads_as_show_reads_the_file_then(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "live.jsonl")
    s, writer, source = _followed(path)
    s.events = []
    s.request(1, "scene.list_layers", {}, 0.5)
    for event in s.events:
        writer.write(event)
    writer.flush()
    as_read = tmp_path / "as-read.jsonl"
    shutil.copyfile(path, as_read)

    async def body() -> None:
        app = GolemProxyApp(source, source.profile, "follow", header=source.header)
        async with app.run_test(size=(160, 30)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 2)
            waiting = app.model.flows[1]
            await wait_for(pilot, lambda: app.detail.flow is waiting)
            # Still followed: its answer may still be written.
            assert not app.source_done and app.model.status(waiting) == "pending"
            assert "Response ← (waiting…)" in app.detail.text()
            os.remove(path)  # another recording takes the path, or none: nothing more is read
            await wait_for(pilot, lambda: app.source_done)
            with open_flows(str(as_read)) as reader:
                shown = [flow.status(GOLEM) for flow in reader.flows()]
            assert shown == ["ok", "pending (recording ended)"]
            assert [app.model.status(flow) for flow in app.model.flows] == shown
            await wait_for(pilot, lambda: "(none: the recording ended first)" in app.detail.text())
            assert (
                f"no answer read before the recording ended ({path} was replaced or removed: "
                "the rows shown are from the file before)"
            ) in app.detail.text()
        writer.close()

    run(body())


def test_a_damaged_line_stops_the_load_and_says_where(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    with RecordingWriter.create(str(path), golem_header()) as writer:
        s = SessionBuilder()
        s.open(1, 0.0)
        writer.write(s.events[0])
    with open(path, "ab") as stream:
        stream.write(b"{not json\n")
    source = RecordingSource.open(str(path))
    sink = EventBuffer(limit=None)
    source.run(sink)
    batch = sink.drain()
    assert len(batch.events) == 1
    assert batch.finished and batch.reason.startswith("recording error: line 3")


def test_opening_something_that_is_not_a_recording_raises(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    with pytest.raises(RecordingError):
        RecordingSource.open(str(path))


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    import os

    import pytest

    from golem_proxy.recording.format import RecordingError
    from golem_proxy.tui.sources import RecordingSource

    fifo = tmp_path / "x.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(RecordingError, match="FIFO"):
        RecordingSource.open(str(fifo))


def _session(path: Path, calls: int, started_at: str) -> None:
    """A recording of ``calls`` pings on one connection, written anew at ``path``: the same
    file truncated, when there is one (``--overwrite`` would put a new file in its place)."""
    s = SessionBuilder()
    s.open(1, 0.0)
    for n in range(calls):
        s.respond(s.request(1, "ping", {}, 0.1 + n), 0.2 + n, result={})
    header = dataclasses.replace(golem_header(), started_at=started_at)
    with RecordingWriter(open_private(str(path), overwrite=True), header) as writer:
        for event in s.events:
            writer.write(event)


def _follow_until_finished(path: Path, rewrite: Callable[[], None]) -> tuple[int, Batch]:
    """Follow ``path``; once its events are read, ``rewrite`` it; return how many events
    were read before, and the source's last batch."""
    source = RecordingSource.open(str(path), follow=True, poll=0.01)
    sink = EventBuffer(limit=None)
    thread = threading.Thread(target=source.run, args=(sink,))
    thread.start()
    try:
        read = 0
        deadline = time.monotonic() + 10
        while read < 4 and time.monotonic() < deadline:  # open + one whole exchange
            read += len(sink.drain().events)
            time.sleep(0.01)
        rewrite()
        last = sink.drain()
        while not last.finished and time.monotonic() < deadline:
            time.sleep(0.01)
            last = sink.drain()
        return read, last
    finally:
        source.stop()
        thread.join(10)


@pytest.mark.parametrize("calls_after", [1, 200], ids=["shorter", "longer"])
def test_a_followed_file_written_again_says_its_rows_are_from_before(
    tmp_path: Path, calls_after: int
) -> None:
    path = tmp_path / "live.jsonl"
    _session(path, 20, "2025-01-01T12:00:00.000000Z")
    read, last = _follow_until_finished(
        path, lambda: _session(path, calls_after, "2025-01-01T13:00:00.000000Z")
    )
    assert read > 0
    assert last.finished and last.failed
    assert last.reason.startswith(f"{path} was truncated (now ")
    assert last.reason.endswith("): the rows shown are from before it")


def test_a_followed_file_replaced_on_its_path_says_so(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    _session(path, 20, "2025-01-01T12:00:00.000000Z")
    other = tmp_path / "other.jsonl"
    _session(other, 20, "2025-01-01T12:00:00.000000Z")
    _, last = _follow_until_finished(path, lambda: os.replace(other, path))
    assert last.finished and last.failed
    assert last.reason == f"{path} was replaced or removed: the rows shown are from the file before"


def test_lines_lost_from_a_recording_read_the_fast_way_are_noted(tmp_path: Path) -> None:
    path = modelling_session(tmp_path / "lost.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:5] + lines[8:]))  # the second exchange's three lines
    source = RecordingSource.open(str(path))
    sink = EventBuffer(limit=None)
    source.run(sink)
    batch = sink.drain()
    assert batch.info is not None
    assert batch.info.notes == (
        f"note: {path}: line 6: seq jumps from 4 to 8 (3 lines lost or out of order); "
        "flows near it may be wrong",
    )


def test_a_followed_file_whose_lines_jump_says_so_and_keeps_the_count_true(
    tmp_path: Path,
) -> None:
    path = tmp_path / "live.jsonl"
    s = SessionBuilder()
    s.open(1, 0.0)
    first = s.request(1, "ping", {}, 0.1)
    s.respond(first, 0.2, result={})
    writer = RecordingWriter.create(str(path), golem_header())
    for event in s.events:
        writer.write(event)
    writer.flush()
    source = RecordingSource.open(str(path), follow=True, poll=0.01)

    def append(seq: int) -> None:
        s.events = []
        s.respond(s.request(1, "ping", {}, 0.5), 0.6, result={})
        lines = [encode_event(e, GOLEM, seq + i) or b"" for i, e in enumerate(s.events)]
        writer.stream.write(b"".join(lines))
        writer.stream.flush()

    async def body() -> None:
        app = GolemProxyApp(source, source.profile, "follow", header=source.header)
        async with app.run_test(size=(160, 30)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 1)
            assert "seq" not in app.banner.text
            append(10)  # after 4: lines 5 to 9 lost
            await wait_for(pilot, lambda: "seq jumps" in app.banner.text)
            assert "line 6: seq jumps from 4 to 10 (5 lines lost" in app.banner.text
            append(20)
            await wait_for(pilot, lambda: "and 1 other place" in app.banner.text)
            assert app.banner.text.count("seq jumps") == 1
        writer.close()

    run(body())


def test_a_followed_file_that_cannot_be_read_on_is_no_longer_said_live(tmp_path: Path) -> None:
    """A damaged line stops the reading: the status line says so, not "● LIVE … (following)"."""
    _, writer, source = _followed(str(tmp_path / "followed.jsonl"))

    async def body() -> None:
        app = GolemProxyApp(source, source.profile, "follow", header=source.header)
        async with app.run_test(size=(160, 30)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 1)
            assert app.status_bar.text.startswith("● LIVE ")
            writer.stream.write(b"garbage line here\n")
            writer.stream.flush()
            await wait_for(pilot, lambda: "failed" in app.status_bar.text)
            status = app.status_bar.text
            assert status.startswith("ENDED ") and "(following)" not in status

    run(body())
    writer.close()
