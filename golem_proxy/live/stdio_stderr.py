"""The MCP server's stderr, relayed to ours by `golem-proxy mcp` (stdio_relay.py) without ever
holding up the end of the session.

Our stderr stays blocking: the live log writes there from a thread of its own, and its open
file may be the client's terminal, whose mode is not ours to change. So each chunk is written
from a worker thread, in pieces that a descriptor polled writable takes without blocking (a
pipe's atomic size), a `SLICE` at most per call, so that a cancellation (the drain gave up, a
signal stopped us) ends the write within a slice, or at once when a write blocked all the same
(a terminal held with Ctrl-S): that thread is abandoned, told to stop before its next piece.
(What moves on stderr does not keep the drain going: a process the server started may write
there for ever.)

While the server runs, a reader that takes nothing holds the server's stderr, as it would
without us. Once the drain gave up, what its reader did not take is counted
(`StderrSink.unwritten`), the close line says so, and so does stderr if it takes the line
then, as the live log's output says what it could not write at exit (log_output.py).
"""

from __future__ import annotations

import os
import select
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

import trio

from .stdio_child import read_pipe

__all__ = ["SLICE", "StderrSink", "relay_stderr"]

SLICE = 0.25
"""How long one worker-thread call may write for before the relay hears of it."""
_PIECE = select.PIPE_BUF
"""A pipe (a socket, a file) polled writable takes this much without blocking."""
_POLL = 0.05
"""How often a waiting write looks whether it was told to stop."""


@dataclass
class _Progress:
    written: int = 0
    error: Optional[OSError] = None


class StderrSink:
    """Our stderr (``fd``) as the server's stderr's destination; see the module docstring."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.unwritten = 0
        """Bytes of the server's stderr read and recorded, never written to ours: the drain
        gave up on them (not those lost when our stderr failed: it is gone)."""
        self.gone = fd < 0

    async def write(self, data: bytes) -> None:
        """Write ``data`` to our stderr. Cancelled, it counts what was not written in
        `unwritten` and re-raises. A stderr that fails (its reader closed it) is given up
        quietly: the server's is still drained."""
        done = 0
        try:
            while done < len(data) and not self.gone:
                progress = _Progress()
                stop = threading.Event()
                try:
                    await trio.to_thread.run_sync(
                        _write_slice,
                        self.fd,
                        memoryview(data)[done:],
                        progress,
                        stop,
                        abandon_on_cancel=True,
                    )
                finally:
                    # An abandoned write may still finish the piece it is in: counted
                    # unwritten, at most one piece.
                    stop.set()
                    done += progress.written
                if progress.error is not None:
                    self.gone = True
        finally:
            if not self.gone:
                self.unwritten += len(data) - done

    def lost(self, size: int) -> None:
        """``size`` bytes of the server's stderr, read once the drain gave up, are not
        written."""
        if not self.gone:
            self.unwritten += size


def _write_slice(fd: int, data: memoryview, progress: _Progress, stop: threading.Event) -> None:
    """In a worker thread: write ``data`` to ``fd`` piece by piece while it polls writable,
    for at most `SLICE` seconds and until ``stop`` is set, counting in ``progress``."""
    deadline = time.monotonic() + SLICE
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    while progress.written < len(data) and not stop.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        if not poller.poll(max(1, round(min(left, _POLL) * 1000))):
            continue
        piece = data[progress.written : progress.written + _PIECE]
        try:
            progress.written += os.write(fd, piece)
        except BlockingIOError:
            # Non-blocking after all (its open file shared with our stdout, 2>&1): less room
            # than a piece. Wait a little rather than spin.
            time.sleep(_POLL)
        except OSError as exc:
            progress.error = exc
            return


async def relay_stderr(source: int, sink: StderrSink, publish: Callable[[bytes], None]) -> None:
    """Relay the server's stderr pipe ``source`` to ``sink`` until its end, each chunk
    published (recorded) before it is written: what the sink cannot take is still recorded."""
    while True:
        chunk = await read_pipe(source)
        if not chunk:
            return
        publish(chunk)
        await sink.write(chunk)
