"""Fan-out of events to consumers over bounded channels.

Publishing never blocks: a consumer whose buffer is full (in events, or in the payload bytes
they keep alive) misses the event, and the next event it does get is preceded by an
`EventsMissed` telling it how many it lost. Nothing waits for the log, the recorder or the UI.
"""

from __future__ import annotations

import collections
import contextlib
import math
from collections.abc import AsyncIterator, Callable
from typing import Optional

import trio

from ..events import Event, EventsMissed, ExchangeCompleted, FrameSeen

__all__ = ["EventHub", "Subscription"]


DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""Payload bytes a consumer's queue may keep alive."""


def _weight(event: Event) -> int:
    if isinstance(event, FrameSeen):
        return len(event.payload)
    if isinstance(event, ExchangeCompleted):
        return len(event.request.payload) + len(event.response.payload)
    return 0


class Subscription:
    """One consumer's bounded queue of events."""

    def __init__(
        self,
        name: str,
        buffer: float,
        max_bytes: int = DEFAULT_MAX_BYTES,
        accepts: Optional[Callable[[Event], bool]] = None,
    ) -> None:
        self.name = name
        self.accepts = accepts
        """Which events the consumer wants at all (None: every one): the others never take
        room in its queue, so a flood it ignores cannot push out an event it shows."""
        # The channel itself is unbounded: `limit` bounds it here, so that a session that
        # stops can let its consumers catch up (`EventHub.widen`).
        self.send_channel, self.receive_channel = trio.open_memory_channel[Event](math.inf)
        self.limit = buffer
        self.max_bytes = max_bytes
        self.queued_bytes = 0
        # The weights of the events in the channel, oldest first: the channel's own count
        # tells how many the consumer took since, whichever way it reads them.
        self._weights: collections.deque[int] = collections.deque()
        self.missed = 0
        """Events missed since the consumer was last told (by an `EventsMissed`)."""
        self.total_missed = 0
        self._last_now = 0.0

    @property
    def waiting(self) -> int:
        """Events in the queue, not taken by the consumer yet."""
        return self.send_channel.statistics().current_buffer_used

    def offer(self, event: Event, now: float) -> None:
        self._last_now = now
        if self.accepts is not None and not self.accepts(event):
            return
        weights = self._weights
        waiting = self.waiting
        while len(weights) > waiting:
            self.queued_bytes -= weights.popleft()
        weight = _weight(event)
        if weight and self.queued_bytes + weight > self.max_bytes:
            self._miss()
            return
        # Room for the event, and for the note of what was missed before it.
        if waiting + (2 if self.missed else 1) > self.limit:
            self._miss()
            return
        try:
            if self.missed:
                self.send_channel.send_nowait(
                    EventsMissed(count=self.missed, t=now, consumer=self.name)
                )
                weights.append(0)
                self.missed = 0
            self.send_channel.send_nowait(event)
        except trio.ClosedResourceError:
            return  # the consumer is gone; nothing to tell
        weights.append(weight)
        self.queued_bytes += weight

    def _miss(self) -> None:
        self.missed += 1
        self.total_missed += 1

    def close(self) -> None:
        """End the stream; what was missed since the last note is told first."""
        if self.missed:
            with contextlib.suppress(trio.ClosedResourceError):
                self.send_channel.send_nowait(
                    EventsMissed(count=self.missed, t=self._last_now, consumer=self.name)
                )
            self.missed = 0
        self.send_channel.close()

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

    def attach_sink(self, sink: Callable[[Event], None], *, first: bool = False) -> None:
        """Call ``sink`` with every event as it is published, before any subscription. For a
        consumer that must see every event and is fast (the recorder); it must not raise.
        With ``first``, before the sinks attached so far: the recorder encodes each event
        before the live TUI's sink hands it to another thread, which makes its frames
        compact (`golem_proxy.tui.compact`) as it pleases."""
        if first:
            self._sinks.insert(0, sink)
        else:
            self._sinks.append(sink)

    def subscribe(
        self,
        name: str,
        buffer: float = 10_000,
        accepts: Optional[Callable[[Event], bool]] = None,
    ) -> Subscription:
        """Add a consumer with room for ``buffer`` events (``math.inf`` for unbounded) and
        `DEFAULT_MAX_BYTES` of their payloads, of those ``accepts`` lets through."""
        subscription = Subscription(name, buffer, accepts=accepts)
        self._subscriptions.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)

    def publish(self, event: Event, now: float) -> None:
        for sink in self._sinks:
            sink(event)
        for subscription in self._subscriptions:
            subscription.offer(event, now)

    def widen(self, limit: float) -> None:
        """Let every subscription queue up to ``limit`` events from now on (their byte bound
        stays). A session that stops publishes the rest of what it decoded in a burst that
        no consumer can follow as it comes; the consumers then get a deadline to catch up."""
        for subscription in self._subscriptions:
            subscription.limit = max(subscription.limit, limit)

    def close(self) -> None:
        """End every subscription's stream (consumers see end-of-channel after draining,
        preceded by an `EventsMissed` when they missed events since the last one)."""
        for subscription in self._subscriptions:
            subscription.close()
