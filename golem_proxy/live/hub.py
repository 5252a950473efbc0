"""Fan-out of events to consumers over bounded channels.

Publishing never blocks: a consumer whose buffer is full misses the event, and the next event it
does get is preceded by an `EventsMissed` telling it how many it lost. The relay therefore never
waits for the log, the recorder or the UI.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable

import trio

from ..events import Event, EventsMissed

__all__ = ["EventHub", "Subscription"]


class Subscription:
    """One consumer's bounded queue of events."""

    def __init__(self, name: str, buffer: float) -> None:
        self.name = name
        self.send_channel, self.receive_channel = trio.open_memory_channel[Event](buffer)
        self.missed = 0
        self.total_missed = 0

    def offer(self, event: Event, now: float) -> None:
        if self.missed:
            try:
                self.send_channel.send_nowait(EventsMissed(self.missed, now, self.name))
            except trio.WouldBlock:
                self.missed += 1
                self.total_missed += 1
                return
            except trio.ClosedResourceError:
                return
            self.missed = 0
        try:
            self.send_channel.send_nowait(event)
        except trio.WouldBlock:
            self.missed += 1
            self.total_missed += 1
        except trio.ClosedResourceError:
            pass  # the consumer is gone; nothing to tell

    async def batches(self) -> AsyncIterator[list[Event]]:
        """Yield every event available at once, as a list, until the hub closes. A consumer
        that drains a batch without yielding between events costs one scheduler round per
        batch instead of one per event."""
        receive = self.receive_channel
        while True:
            try:
                first = await receive.receive()
            except trio.EndOfChannel:
                return
            batch = [first]
            while True:
                try:
                    batch.append(receive.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
            yield batch


class EventHub:
    """Publishes each event to every subscription, in order, without ever blocking."""

    def __init__(self) -> None:
        self._subscriptions: list[Subscription] = []
        self._sinks: list[Callable[[Event], None]] = []
        self.published = 0

    def attach_sink(self, sink: Callable[[Event], None]) -> None:
        """Call ``sink`` with every event as it is published, before any subscription. For a
        consumer that must see every event and is fast (the recorder); it must not raise."""
        self._sinks.append(sink)

    def subscribe(self, name: str, buffer: float = 10_000) -> Subscription:
        """Add a consumer with room for ``buffer`` events (``math.inf`` for unbounded)."""
        subscription = Subscription(name, buffer)
        self._subscriptions.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)

    def publish(self, event: Event, now: float) -> None:
        self.published += 1
        for sink in self._sinks:
            sink(event)
        for subscription in self._subscriptions:
            subscription.offer(event, now)

    def close(self) -> None:
        """End every subscription's stream (consumers see end-of-channel after draining)."""
        for subscription in self._subscriptions:
            subscription.send_channel.close()


UNBOUNDED = math.inf
