"""What the live TUI does to keep its work bounded while events stream, and that it still
shows every exchange: batches at most every `stream_interval` while events keep coming, the
flows kept off the cyclic collector's walks while the app runs."""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.events import Event
from golem_proxy.recording.format import read_recording
from golem_proxy.tui import pace
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.bridge import EventBuffer
from golem_proxy.tui.collector import LIVE_YOUNG
from tests.support.sessions import SessionBuilder

from .helpers import TIMEOUT, ManualSource, run, wait_for

EXCHANGES = 600
STREAM_INTERVAL = 0.3


def pings(count: int) -> list[list[Event]]:
    """``count`` answered pings on one connection, as the events of each exchange."""
    builder = SessionBuilder()
    builder.open(1, 0.0)
    exchanges = [list(builder.events)]
    for n in range(count):
        builder.events = []
        request = builder.request(1, "ping", {"n": n}, n * 0.001)
        builder.respond(request, n * 0.001 + 0.0005, result={})
        exchanges.append(list(builder.events))
    exchanges[1] = exchanges[0] + exchanges[1]
    return exchanges[1:]


class StreamingSource(ManualSource):
    """Pushes each exchange's events a millisecond apart, as a proxy under a steady load
    would; `streamed` is set once the last is pushed."""

    def __init__(self, exchanges: list[list[Event]]) -> None:
        super().__init__()
        self.exchanges = exchanges
        self.streamed = threading.Event()

    def run(self, sink: EventBuffer) -> None:
        for events in self.exchanges:
            if self.stopped.is_set():
                return
            sink.push_many(events)
            time.sleep(0.001)  # the pace of the stream, not a wait for a state
        self.streamed.set()
        self.stopped.wait(TIMEOUT)


def test_a_stream_is_taken_in_spaced_batches_and_every_exchange_shows_once_it_stops() -> None:
    source = StreamingSource(pings(EXCHANGES))

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "test", stream_interval=STREAM_INTERVAL)
        drained_at: list[tuple[float, int]] = []
        drain = app.buffer.drain

        def timed_drain(max_events: int | None = None):  # type: ignore[no-untyped-def]
            batch = drain(max_events)
            drained_at.append((time.monotonic(), len(batch.events)))
            return batch

        app.buffer.drain = timed_drain  # type: ignore[method-assign]
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, source.streamed.is_set, limit=4000)
            await wait_for(pilot, lambda: len(app.model.flows) == EXCHANGES, limit=4000)
            await wait_for(pilot, lambda: app.table.selected == EXCHANGES - 1)
            assert f"{EXCHANGES:,} flows" in app.status_bar.text
            assert "missed" not in app.status_bar.text
            assert [flow.method for flow in app.model.flows] == ["ping"] * EXCHANGES
            assert all(flow.response is not None for flow in app.model.flows)
            await wait_for(pilot, lambda: f"#{EXCHANGES} ping" in app.detail.text())
        # A batch that came within the stream spell of the one before (events kept coming)
        # was followed by the stream interval (a timer never fires early), so the stream took
        # a few batches, not one per millisecond. (On a loaded machine the stream may start
        # more than a spell after the first batch: the batch after that one is not paced.)
        taken = [at for at, events in drained_at if events]
        after_stream = [
            later - at
            for before, at, later in zip(taken, taken[1:], taken[2:])
            if at - before < pace.STREAM_SPELL
        ]
        assert after_stream, drained_at
        assert min(after_stream) >= STREAM_INTERVAL * 0.9, (after_stream, drained_at)

    run(body())


def test_the_first_events_after_a_quiet_spell_are_not_held_for_the_stream_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pace, "STREAM_SPELL", 0.2)
    exchanges = pings(2)
    source = ManualSource(exchanges[0])

    async def body() -> None:
        # A stream interval no wait here could sit out: the second exchange, coming after
        # a quiet spell, is taken at the refresh interval.
        app = GolemProxyApp(source, GOLEM, "test", stream_interval=TIMEOUT * 10)
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 1)
            spell_over = time.monotonic() + 0.3
            await wait_for(pilot, lambda: time.monotonic() > spell_over)
            app.buffer.push_many(exchanges[1])
            await wait_for(pilot, lambda: len(app.model.flows) == 2)

    run(body())


def test_a_live_app_keeps_its_flows_off_the_collector_until_it_ends() -> None:
    thresholds = gc.get_threshold()
    source = ManualSource(pings(3)[0])

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "test")
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 1)
            assert gc.get_freeze_count() > 0
            # The collector still runs by itself, but only past many young objects (once a
            # batch otherwise, when the batch is held).
            assert gc.isenabled()
            assert gc.get_threshold()[0] == LIVE_YOUNG
        assert gc.get_freeze_count() == 0
        assert gc.isenabled()
        assert gc.get_threshold() == thresholds

    run(body())


def test_a_view_written_while_the_stream_holds_an_answer_back_has_that_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`w` writes the session as it reached the app: an answer received while the pace waits
    to draw the next batch is in the view written, not left out as if still awaited."""
    monkeypatch.setattr(pace, "STREAM_SPELL", TIMEOUT)  # every batch after the first streams
    s = SessionBuilder()
    s.open(1, 0.0)
    opened = list(s.events)
    s.events = []
    request = s.request(1, "viewport.capture", {}, 0.1)
    asked = list(s.events)
    s.events = []
    s.respond(request, 0.2, result={"image": "iVBORw0KGgo="})
    answered = list(s.events)
    source = ManualSource(opened)
    monkeypatch.chdir(tmp_path)

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "test", stream_interval=TIMEOUT * 10)
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: len(app.model.tracker.connections) == 1)
            app.buffer.push_many(asked)
            await wait_for(pilot, lambda: len(app.model.flows) == 1)
            app.buffer.push_many(answered)  # held: the next batch is a stream interval away
            assert app.model.flows[0].pending
            await pilot.press("w", "enter")  # to the path offered: view.jsonl here
            await wait_for(
                pilot, lambda: any("Wrote 1 flow (" in n.message for n in app._notifications)
            )
            assert app.model.flows[0].status(GOLEM) == "ok"  # and the table shows it

    run(body())
    recording = read_recording(str(tmp_path / "view.jsonl"))
    assert [exchange.method for exchange in recording.exchanges()] == ["viewport.capture"]
