"""The recorder: writes the event stream to a recording file, flushed at least every 100 ms.

It is a synchronous sink of the event hub rather than a queued subscriber: each event is
encoded as the tap publishes it, so the recording never trails the tap, and the tap's own
catch-up rule bounds how far both trail the wire. A disk error stops the recording, never the
proxy."""

from __future__ import annotations

import sys
from typing import Callable, Optional

import trio

from .events import Event
from .recording import RecordingWriter

__all__ = ["FLUSH_INTERVAL", "Recorder"]

FLUSH_INTERVAL = 0.1


class Recorder:
    """Writes events to a `RecordingWriter`; call it with each event."""

    def __init__(
        self, writer: RecordingWriter, on_error: Optional[Callable[[str], None]] = None
    ) -> None:
        self.writer = writer
        self.error: Optional[Exception] = None
        self.on_error = on_error or (lambda text: print(text, file=sys.stderr))

    def __call__(self, event: Event) -> None:
        if self.error is not None:
            return
        try:
            self.writer.write(event)  # flushes by itself past 1 MiB of queued lines
        except Exception as exc:  # a disk error or a bug here must not take the relay down
            self._fail(exc)

    def flush(self) -> None:
        if self.error is not None:
            return
        try:
            self.writer.flush()
        except Exception as exc:
            self._fail(exc)

    async def flush_periodically(self) -> None:
        """Flush every ``FLUSH_INTERVAL`` seconds until cancelled."""
        while True:
            await trio.sleep(FLUSH_INTERVAL)
            self.flush()

    def close(self) -> None:
        self.flush()
        try:
            self.writer.stream.close()
        except Exception as exc:
            self._fail(exc)

    def _fail(self, exc: Exception) -> None:
        self.error = exc
        self.on_error(f"golem-proxy: recording stopped, the proxy goes on: {exc}")
