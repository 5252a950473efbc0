"""The recorder: writes the event stream to a recording file, flushed at least every 100 ms."""

from __future__ import annotations

import trio

from .hub import Subscription
from .recording import RecordingWriter

__all__ = ["FLUSH_INTERVAL", "record_events"]

FLUSH_INTERVAL = 0.1


async def record_events(subscription: Subscription, writer: RecordingWriter) -> None:
    """Write events until the subscription's channel closes, then flush and close the file.

    Lines are queued in memory and written by `RecordingWriter.flush`, which runs at least
    every ``FLUSH_INTERVAL`` seconds while events arrive, so a reader (or a ``kill -9``) sees
    everything older than that."""
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_flush_periodically, writer)
            async for batch in subscription.batches():
                for event in batch:
                    writer.write(event)
            nursery.cancel_scope.cancel()
    finally:
        writer.close()


async def _flush_periodically(writer: RecordingWriter) -> None:
    while True:
        await trio.sleep(FLUSH_INTERVAL)
        writer.flush()
