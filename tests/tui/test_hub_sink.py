"""`hub_sink`: the live session's hub feeding the UI's one queue directly."""

from __future__ import annotations

from golem_proxy.events import Event, EventsMissed
from golem_proxy.live.hub import EventHub
from golem_proxy.tui.bridge import EventBuffer, hub_sink


def _published(buffer: EventBuffer, count: int) -> list[Event]:
    hub = EventHub()
    hub.attach_sink(hub_sink(buffer))
    events: list[Event] = [EventsMissed(count=i, t=float(i)) for i in range(count)]
    for event in events:
        hub.publish(event, 0.0)
    return events


def test_every_event_reaches_the_buffer_in_order() -> None:
    buffer = EventBuffer(limit=None)
    events = _published(buffer, 250)
    assert buffer.drain().events == events


def test_a_full_buffer_counts_what_it_drops_once() -> None:
    """One queue, one loss counter: what the UI could not take is the buffer's own count."""
    buffer = EventBuffer(limit=100)
    events = _published(buffer, 250)
    batch = buffer.drain()
    assert batch.events == events[:100]
    assert batch.missed == 150 and buffer.total_missed == 150


def test_a_failing_ui_stops_its_feed_and_never_the_hub() -> None:
    buffer = EventBuffer(limit=None)

    def broken() -> None:
        raise RuntimeError("the app is gone")

    buffer.attach(broken)
    hub = EventHub()
    hub.attach_sink(hub_sink(buffer))
    seen: list[Event] = []
    hub.attach_sink(seen.append)
    for i in range(3):
        hub.publish(EventsMissed(count=i, t=0.0), 0.0)  # never raises
    assert len(seen) == 3
    batch = buffer.drain()
    assert batch.failed and "the UI stopped taking events" in batch.reason


def test_a_sink_attached_first_sees_each_event_before_the_others() -> None:
    """The recorder is attached first: it has encoded a frame before the UI's sink hands it
    to the UI's thread, which may make it compact (`golem_proxy.tui.compact`)."""
    buffer = EventBuffer(limit=None)
    hub = EventHub()
    hub.attach_sink(hub_sink(buffer))
    queued_when_recorded: list[bool] = []

    def recorder(event: Event) -> None:
        queued_when_recorded.append(event in buffer.drain().events)

    hub.attach_sink(recorder, first=True)
    for i in range(3):
        hub.publish(EventsMissed(count=i, t=0.0), 0.0)
    assert queued_when_recorded == [False, False, False]
    assert len(buffer.drain().events) == 1  # the last one, queued after the recorder saw it
