"""The handoff between producers and the UI: bounded, coalescing, never blocking the
producer; and a real trio producer in a thread feeding a running app."""

from __future__ import annotations

import asyncio
import threading
from typing import Optional

import trio

from golem_core.profiles import GOLEM
from golem_proxy.events import Event, EventsMissed
from golem_proxy.live.hub import EventHub
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.bridge import EventBuffer, TrioThreadSource, hub_sink
from tests.support.sessions import SessionBuilder, bulk_session

from .helpers import run, wait_for


def _pushing(buffer: EventBuffer, events: list[Event]) -> threading.Thread:
    thread = threading.Thread(target=buffer.push_many, args=(events,), daemon=True)
    thread.start()
    return thread


def test_a_file_reader_waits_for_the_ui_over_its_backlog_and_loses_nothing() -> None:
    buffer = EventBuffer(limit=None, wait_over=4)
    first = [EventsMissed(count=0, t=float(i)) for i in range(4)]
    buffer.push_many(first)
    second = [EventsMissed(count=0, t=10.0 + i) for i in range(3)]
    thread = _pushing(buffer, second)
    thread.join(0.05)
    assert thread.is_alive()  # four queued: it waits, nothing dropped
    assert buffer.drain(2).events == first[:2]
    thread.join(10.0)
    assert not thread.is_alive()
    assert buffer.drain().events == first[2:] + second
    assert buffer.total_missed == 0


def test_a_reader_waiting_for_room_stops_waiting_when_the_ui_closes_the_buffer() -> None:
    buffer = EventBuffer(limit=None, wait_over=1)
    buffer.push(EventsMissed(count=0, t=0.0))
    thread = _pushing(buffer, [EventsMissed(count=0, t=1.0)])
    thread.join(0.05)
    assert thread.is_alive()
    buffer.close()
    thread.join(10.0)
    assert not thread.is_alive()


def test_the_buffer_drops_and_counts_past_its_bound() -> None:
    buffer = EventBuffer(limit=3)
    events = [EventsMissed(count=0, t=float(i)) for i in range(5)]
    assert buffer.push_many(events) == 3
    assert not buffer.push(events[0])
    batch = buffer.drain()
    assert batch.events == events[:3]
    assert batch.missed == 3 and buffer.total_missed == 3
    assert buffer.drain().missed == 0  # counted once


def test_the_buffer_nudges_once_until_rearmed() -> None:
    nudges: list[int] = []
    buffer = EventBuffer(limit=None)
    buffer.attach(lambda: nudges.append(1))
    assert nudges == []  # nothing to say yet
    for i in range(100):
        buffer.push(EventsMissed(count=0, t=float(i)))
    assert nudges == [1]
    assert len(buffer.drain(max_events=40).events) == 40
    assert buffer.rearm()  # 60 still queued: drain again now, no nudge comes for them
    assert len(buffer.drain().events) == 60
    assert not buffer.rearm()
    buffer.push(EventsMissed(count=0, t=0.0))
    assert nudges == [1, 1]


def test_a_finish_while_a_drain_is_pending_is_not_lost() -> None:
    nudges: list[int] = []
    buffer = EventBuffer()
    buffer.attach(lambda: nudges.append(1))
    buffer.push(EventsMissed(count=0, t=0.0))
    assert not buffer.drain().finished
    buffer.finish("end")  # arrives between the drain and the re-arm: no nudge now
    assert nudges == [1]
    assert buffer.rearm()
    assert buffer.drain().finished
    assert not buffer.rearm()


def test_attach_after_events_nudges_at_once() -> None:
    nudges: list[int] = []
    buffer = EventBuffer()
    buffer.finish("done")
    buffer.attach(lambda: nudges.append(1))
    assert nudges == [1]
    batch = buffer.drain()
    assert batch.finished and batch.reason == "done" and not batch.events


def test_a_trio_producer_thread_feeds_a_running_app() -> None:
    """The proxy's shape: trio in a worker thread, its event hub publishing straight into
    the app's buffer (`hub_sink`) while the UI runs."""
    events = list(bulk_session(3000))
    done = threading.Event()

    async def proxy_main(sink: EventBuffer) -> None:
        hub = EventHub()
        hub.attach_sink(hub_sink(sink))
        for number, event in enumerate(events):
            hub.publish(event, trio.current_time())
            if number % 500 == 0:
                await trio.sleep(0.01)  # arrive in waves, as live traffic does
        done.set()
        await trio.sleep_forever()  # a proxy keeps serving until the UI stops it

    source = TrioThreadSource(proxy_main, description="127.0.0.1:19876")

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "live")
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 3000, limit=4000)
            assert all(flow.response is not None for flow in app.model.flows)
            assert app.table.selected == 2999  # following the newest
            assert done.is_set()
            status = app.status_bar.text
            assert "● LIVE 127.0.0.1:19876" in status and "3,000 flows" in status
        # Leaving the app stopped the trio thread.
        for _ in range(500):
            if source.done.is_set():
                break
            await asyncio.sleep(0.01)
        assert source.done.is_set() and source.error is None

    run(body())


def test_a_slow_ui_misses_events_and_says_how_many() -> None:
    s = SessionBuilder()
    s.open(1, 0.0)
    for n in range(20):
        request = s.request(1, "ping", {}, n * 0.01)
        s.respond(request, n * 0.01 + 0.001, result={})

    class Flood:
        live = True
        serving = False
        buffer_limit: Optional[int] = 10
        description = "flood"

        def run(self, sink: EventBuffer) -> None:
            sink.push_many(s.events)  # all at once: more than the bound

        def stop(self) -> None:
            pass

    async def body() -> None:
        app = GolemProxyApp(Flood(), GOLEM, "flood")
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: app.buffer.total_missed > 0 and bool(app.model.events))
            await pilot.pause()
            assert len(app.model.events) == 10
            missed = len(s.events) - 10
            assert f"{missed:,} events missed" in app.status_bar.text

    run(body())
