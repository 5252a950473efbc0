"""Terminal output that never blocks the caller.

The live log runs next to the relay. Writing straight to stdout blocks as soon as the terminal
stops reading (a paused ``| less``, Ctrl-S, a pipe nobody reads): after about 64 KiB the whole
proxy would freeze with it. `TerminalOutput` is the text file the log's rich Console writes
into: the Console renders in the caller as usual, ``write`` encodes and queues the bytes and
returns at once, and a writer thread of its own does the blocking writes. When the queue is full
(in lines or in bytes) new lines are dropped and counted; once the output takes data again the
writer says so once, where the gap is::

    golem-proxy: 1234 log lines dropped (output was blocked for 12.3 s)

A closed output (EPIPE: ``| head`` exited) stops the output quietly; writes are then discarded,
and the caller can see it in `closed` and stop rendering.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import os
import select
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional, TextIO, Union, cast

from rich.console import Console

from ..table_layout import print_line

__all__ = [
    "CLOSE_TIMEOUT",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "MCP_CLOSE_TIMEOUT",
    "TerminalOutput",
    "print_closing",
    "say",
    "stderr_if_room",
]

DEFAULT_MAX_LINES = 10_000
DEFAULT_MAX_BYTES = 4 * 1024 * 1024
# On exit, how long what is still queued may take to be written: an output that stopped
# reading must not keep the process alive.
CLOSE_TIMEOUT = 5.0
# The same for `golem-proxy mcp`'s log, on the stderr of an MCP client that may never read it
# and kills the wrapper 2 s after its SIGTERM (the Python MCP SDK): within that, once the
# session ended (a SIGTERM passed on ends it in about half a second).
MCP_CLOSE_TIMEOUT = 1.0
# One write call carries at most this much, so that the bytes it holds are still counted
# against the bounds while it blocks (and a gap's notice lands where the gap is).
_BATCH_BYTES = 256 * 1024


@dataclass
class _Gap:
    """Lines dropped in a row, and when the output was first seen stuck for them."""

    lines: int
    since: float


@dataclass
class _Chunk:
    data: bytes
    lines: int


class TerminalOutput:
    """A write-only text file whose ``write`` never blocks; see the module docstring.

    ``stream`` is the real output (normally ``sys.stdout``; None, as Python sets it when the
    process started without a stdout, discards everything). Colours are decided as for the
    stream itself: `isatty` reports whether the stream is a terminal."""

    def __init__(
        self,
        stream: Optional[TextIO],
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_lines = max(1, max_lines)
        self.max_bytes = max(1, max_bytes)
        self.encoding: str = getattr(stream, "encoding", None) or "utf-8"
        self.dropped = 0
        """Lines dropped so far because the output was too slow."""
        self._stream = stream
        self._clock = clock
        self._fd = _fileno(stream)
        self._tty = _isatty(stream, self._fd)
        self._queue: collections.deque[Union[_Chunk, _Gap]] = collections.deque()
        self._queued_lines = 0
        self._queued_bytes = 0
        self._writing_since: Optional[float] = None
        self._gap: Optional[_Gap] = None
        """The gap at the end of the queue, until the writer reaches it."""
        self._broken = stream is None
        self._closing = False
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._idle = threading.Condition(self._lock)
        if stream is not None and self._fd is not None:
            # Whatever the stream still buffers goes first, before we write around it.
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        self._thread = threading.Thread(target=self._run, name="terminal-output", daemon=True)
        self._thread.start()

    @property
    def closed(self) -> bool:
        """True once the output is gone (EPIPE or another write error) or `close` was called:
        from then on writes are discarded."""
        return self._broken or self._closing

    def console(self) -> Console:
        """A rich Console that renders in the caller and writes here. It has colours exactly
        when the real stream is a terminal (and NO_COLOR, FORCE_COLOR etc. say so)."""
        # Console wants an IO[str]; it only calls write, flush, isatty and reads encoding.
        return Console(file=cast(TextIO, self), highlight=False)

    def isatty(self) -> bool:
        return self._tty

    @property
    def fd(self) -> Optional[int]:
        """The descriptor of the real stream, None when it has none."""
        return self._fd

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        """Queue ``text`` (encoded now, lone surrogates as ``\\udfff``) for the writer thread,
        or drop and count its lines when the queue is full. Never blocks, never raises."""
        if not text:
            return 0
        data = text.encode(self.encoding, errors="backslashreplace")
        lines = text.count("\n") or 1
        with self._lock:
            if self._broken or self._closing:
                return len(text)
            gap = self._gap
            if gap is None and (
                self._queued_lines + lines > self.max_lines
                or self._queued_bytes + len(data) > self.max_bytes
            ):
                since = self._writing_since
                gap = self._gap = _Gap(0, self._clock() if since is None else since)
                self._queue.append(gap)
            if gap is not None:
                # Once lines were lost, drop until the writer has caught up with the gap: one
                # notice per blocked spell, standing exactly where the lines are missing.
                gap.lines += lines
                self.dropped += lines
                return len(text)
            self._queue.append(_Chunk(data, lines))
            self._queued_lines += lines
            self._queued_bytes += len(data)
            self._wake.notify()
        return len(text)

    def flush(self) -> None:
        """Nothing to do: the writer thread writes as soon as it can (rich calls this after
        every print, so it must not wait)."""

    def drain(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until everything queued is written (or the output
        broke); True when it was."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._queue or self._writing_since is not None:
                if self._broken:
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(min(left, 0.1))
        return True

    def close(self, timeout: float = CLOSE_TIMEOUT) -> bool:
        """Write what is queued (waiting at most ``timeout`` seconds: a blocked output must not
        keep the process from exiting), then stop the writer. True when everything queued
        was written; otherwise stderr says how many lines were not."""
        drained = self.drain(timeout)
        with self._lock:
            lost = 0
            if not drained and not self._broken:
                gaps = sum(item.lines for item in self._queue if isinstance(item, _Gap))
                lost = self._queued_lines + gaps
            self._closing = True
            self._wake.notify()
        if drained:
            self._thread.join(timeout)
        elif lost:
            # Said where the operator may still see it (stdout is the output that is stuck),
            # unless stderr cannot take it now: it may be that output (`mcp`'s log), and a
            # blocked write here would keep the process from exiting.
            _write_if_room(
                2,
                f"golem-proxy: {lost} log lines not written (the output took nothing "
                f"for {timeout:g} s at exit)\n".encode(),
            )
        return drained

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closing:
                    self._wake.wait()
                if not self._queue:
                    return
                batch, gap = self._take()
                self._writing_since = self._clock()
            try:
                if gap is not None:
                    blocked = self._clock() - gap.since
                    self._write(
                        f"golem-proxy: {gap.lines} log lines dropped "
                        f"(output was blocked for {blocked:.1f} s)\n".encode(self.encoding)
                    )
                else:
                    self._write(b"".join(chunk.data for chunk in batch))
            except Exception as exc:  # a stream without a descriptor may raise anything
                self._stop_broken(exc)
                return
            with self._lock:
                self._writing_since = None
                self._queued_lines -= sum(chunk.lines for chunk in batch)
                self._queued_bytes -= sum(len(chunk.data) for chunk in batch)
                self._idle.notify_all()

    def _take(self) -> tuple[list[_Chunk], Optional[_Gap]]:
        """The next gap alone, or the chunks before it (up to a batch). The chunks stay
        counted against the bounds until they are written."""
        head = self._queue[0]
        if isinstance(head, _Gap):
            self._queue.popleft()
            self._gap = None
            return [], head
        batch: list[_Chunk] = []
        size = 0
        while self._queue and size < _BATCH_BYTES:
            item = self._queue[0]
            if isinstance(item, _Gap):
                break
            self._queue.popleft()
            batch.append(item)
            size += len(item.data)
        return batch, None

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            assert self._stream is not None  # without a stream the output starts broken
            self._stream.write(data.decode(self.encoding, errors="replace"))
            self._stream.flush()
            return
        view = memoryview(data)
        while view:
            try:
                written = os.write(self._fd, view)
            except BlockingIOError:
                # A non-blocking descriptor inherited from the parent: wait until it drains.
                select.select([], [self._fd], [], 1.0)
                continue
            view = view[written:]

    def _stop_broken(self, exc: Exception) -> None:
        with self._lock:
            self._broken = True
            self._writing_since = None
            self._queue.clear()
            self._queued_lines = self._queued_bytes = 0
            self._idle.notify_all()
        if getattr(exc, "errno", None) not in (errno.EPIPE, errno.ECONNRESET):
            # Not a reader that went away (a full disk, a terminal that hung up): say why the
            # log stopped, where the operator may still see it. EPIPE stays quiet.
            with contextlib.suppress(OSError):
                os.write(2, f"golem-proxy: log output stopped: {exc}\n".encode(errors="replace"))


def _write_if_room(fd: int, data: bytes) -> None:
    """Write ``data`` (under a pipe's atomic size) to ``fd`` if it takes it now, else drop it:
    a descriptor that polls writable takes that much without blocking."""
    with contextlib.suppress(OSError, ValueError):
        if select.select([], [fd], [], 0)[1]:
            os.write(fd, data)


def stderr_if_room(text: str) -> None:
    """Write ``text`` (a line or two) on stderr if it takes it now, else drop it: a stderr
    nobody reads (``golem-proxy mcp``'s, a pipe its client never drains) must not keep the
    process from ending, as the notice at `TerminalOutput.close` must not. Through
    ``sys.stderr`` (captured, it may have no descriptor)."""
    fd = _fileno(sys.stderr)
    with contextlib.suppress(OSError, ValueError):
        if fd is not None and not select.select([], [fd], [], 0)[1]:
            return
        sys.stderr.write(text)
        sys.stderr.flush()


def say(text: str) -> None:
    """One line on stderr, ``golem-proxy: `` first, if stderr takes it now
    (`stderr_if_room`)."""
    stderr_if_room(f"golem-proxy: {text}\n")


def print_closing(line: str) -> None:
    """A command's closing line on stderr as `print_line` writes it (folded to a terminal's
    width), if stderr takes it now (`stderr_if_room`)."""
    errors = Console(stderr=True, highlight=False)
    with errors.capture() as captured:
        print_line(errors, line)
    stderr_if_room(captured.get())


def _fileno(stream: Optional[TextIO]) -> Optional[int]:
    if stream is None:
        return None
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return None


def _isatty(stream: Optional[TextIO], fd: Optional[int]) -> bool:
    if stream is None:
        return False
    try:
        return os.isatty(fd) if fd is not None else stream.isatty()
    except (AttributeError, OSError, ValueError):
        return False
