"""Loading a large recording: the status bar says how far the file is read, and a request
whose answer is further on in the file shows as ``loading``, not ``pending``."""

from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import Optional

from golem_proxy.events import Event
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.bridge import EventBuffer, Progress, SourceInfo
from golem_proxy.tui.sources import PUSH_EVERY, RecordingSource
from golem_proxy.tui.widgets.flows_table import row_cells
from tests.support.sessions import bulk_session, write_recording

from .helpers import TIMEOUT, loaded, run, wait_for

EXCHANGES = 3000


class GatedSink:
    """Passes the first push of a real `RecordingSource` on, then holds the reader until
    the test opens the gate: the app is caught mid-file."""

    def __init__(self, buffer: EventBuffer) -> None:
        self.buffer = buffer
        self.gate = threading.Event()
        self.pushes = 0

    def push_many(self, events: list[Event], progress: Optional[Progress] = None) -> int:
        if self.pushes:
            self.gate.wait(TIMEOUT)
        self.pushes += 1
        return self.buffer.push_many(events, progress)

    def describe(self, info: SourceInfo) -> None:
        self.buffer.describe(info)

    def finish(self, reason: str = "", *, failed: bool = False) -> None:
        self.buffer.finish(reason, failed=failed)


class GatedSource:
    live = False
    serving = False
    buffer_limit: Optional[int] = None

    def __init__(self, path: str) -> None:
        self.source = RecordingSource.open(path)
        self.description = path
        self.sink: Optional[GatedSink] = None

    def run(self, sink: EventBuffer) -> None:
        self.sink = GatedSink(sink)
        self.source.run(self.sink)  # type: ignore[arg-type]

    def stop(self) -> None:
        self.source.stop()
        if self.sink is not None:
            self.sink.gate.set()


def bulk_path(tmp_path: Path) -> str:
    path = str(tmp_path / "bulk.jsonl")
    write_recording(path, bulk_session(EXCHANGES))
    return path


def test_the_status_bar_says_how_far_a_recording_is_loaded(tmp_path: Path) -> None:
    path = bulk_path(tmp_path)

    async def body() -> None:
        source = GatedSource(path)
        app = GolemProxyApp(source, source.source.profile, "test")
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) > 0)
            await pilot.pause()
            status = app.status_bar.text
            flows = len(app.model.flows)
            assert 0 < flows < EXCHANGES
            assert app.loading is not None
            percent = app.loading.percent
            assert 0 < percent < 100
            assert f"loading {flows:,} flows · {percent}% of the file" in status, status
            # What is loaded so far is kept off the cyclic collector's walks until the end,
            # and the collector runs once a batch, not by itself.
            assert gc.get_freeze_count() > 0
            assert not gc.isenabled()
            # A line longer than the terminal (a long path) wraps rather than losing its end.
            inner = app.status_bar.content_region.width
            assert app.status_bar.size.height == (1 if len(status) <= inner else 2)
            # The first push cut the file after a request: its answer is not read yet.
            last = app.model.flows[-1]
            assert last.pending
            assert row_cells(last, app.model)[6] == "loading"
            assert source.sink is not None
            source.sink.gate.set()
            await loaded(pilot)
            status = app.status_bar.text
            assert "loading" not in status
            assert f"{EXCHANGES:,} flows" in status
            assert gc.get_freeze_count() == 0
            assert gc.isenabled()
            assert not any(row_cells(f, app.model)[6] == "loading" for f in app.model.flows)

    run(body())


def test_a_recording_source_reports_its_progress_up_to_the_whole_file(tmp_path: Path) -> None:
    path = bulk_path(tmp_path)
    source = RecordingSource.open(path)
    buffer = EventBuffer(limit=None)
    source.run(buffer)
    seen: list[Progress] = []
    while True:
        batch = buffer.drain(PUSH_EVERY)
        if batch.progress is not None:
            seen.append(batch.progress)
        if not batch.more:
            break
    assert len(seen) > 2
    assert [p.done for p in seen] == sorted(p.done for p in seen)
    assert seen[0].percent < 100
    assert seen[-1].complete and seen[-1].percent == 100


def test_a_request_left_unanswered_at_the_end_of_the_file_is_pending_as_the_recording_ended(
    demo_path: str,
) -> None:
    async def body() -> None:
        source = RecordingSource.open(demo_path)
        app = GolemProxyApp(source, source.profile, "test")
        async with app.run_test(size=(100, 30)) as pilot:
            await loaded(pilot)
            statuses = [row_cells(app.model.flows[i], app.model)[6] for i in app.model.view]
            assert "pending (recording ended)" in statuses  # as `show` says of it
            assert "loading" not in statuses

    run(body())


def test_quitting_while_a_file_loads_hands_the_objects_back_to_the_collector(
    tmp_path: Path,
) -> None:
    path = bulk_path(tmp_path)

    async def body() -> None:
        source = GatedSource(path)
        app = GolemProxyApp(source, source.source.profile, "test")
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: app.loading is not None and len(app.model.flows) > 0)
            assert gc.get_freeze_count() > 0
            assert not gc.isenabled()
        assert gc.get_freeze_count() == 0
        assert gc.isenabled()

    run(body())
