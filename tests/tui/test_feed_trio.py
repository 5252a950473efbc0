"""`feed_from_channel` on its own, under trio."""

from __future__ import annotations

import pytest
import trio

from golem_proxy.events import Event, EventsMissed
from golem_proxy.tui.bridge import EventBuffer, feed_from_channel

pytestmark = pytest.mark.trio


async def test_feed_moves_every_event_in_order_and_finishes_the_sink() -> None:
    sink = EventBuffer(limit=None)
    send, receive = trio.open_memory_channel[Event](100)
    events = [EventsMissed(count=i, t=float(i)) for i in range(250)]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(feed_from_channel, receive, sink)
        async with send:
            for event in events:
                await send.send(event)
    batch = sink.drain()
    assert batch.events == events
    assert batch.finished and batch.reason == "event stream ended"


async def test_cancelling_the_feed_finishes_the_sink_as_stopped() -> None:
    sink = EventBuffer()
    send, receive = trio.open_memory_channel[Event](10)
    with trio.move_on_after(0.05):
        await feed_from_channel(receive, sink)
    assert sink.drain().reason == "stopped"
    send.close()
