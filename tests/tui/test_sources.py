"""Recordings as sources: read once, or tailed while a writer appends to them."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.recording.format import RecordingError, RecordingWriter, encode_event
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.bridge import EventBuffer
from golem_proxy.tui.sources import RecordingSource
from tests.support.sessions import SessionBuilder, golem_header

from .helpers import run, wait_for


def test_follow_tails_complete_lines_and_waits_for_a_partial_one(tmp_path: Path) -> None:
    path = str(tmp_path / "live.jsonl")
    s = SessionBuilder()
    s.open(1, 0.0)
    first = s.request(1, "ping", {}, 0.1)
    s.respond(first, 0.2, result={})
    writer = RecordingWriter.create(path, golem_header())
    for event in s.events:
        writer.write(event)
    writer.flush()
    source = RecordingSource.open(path, follow=True, poll=0.01)

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
