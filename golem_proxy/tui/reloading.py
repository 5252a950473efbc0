"""The rows an observing process's TUI shows when it took over from one that died
(``proxy --tui``, docs/architecture.md "A dead observing process is replaced"): the session so
far, read back from the recording the dead process wrote, then the live events, in that order.

The reading back runs in a thread of its own while the session already decodes what crosses:
taking over stays a handshake, not a read of the whole file. Until every recorded event is
queued, the live ones wait at the gate (`ReloadGate`), so an answer never reaches the TUI
before the request it answers (read back). What the gate holds is bounded: past its limit
live events are dropped and counted, as the TUI's own buffer counts what it drops.
"""

from __future__ import annotations

import io
import json
import os
import threading
import time
from typing import Callable, Optional, Union

from ..events import Event
from ..recording.format import RecordingError
from ..recording.shared_file import RESTARTED_KIND
from .bridge import EventBuffer, Progress
from .payloads import LeftInFile
from .sources import PUSH_EVERY, compacting_reader

__all__ = ["GATE_LIMIT", "READ_BACK_WAIT_OVER", "RESTART_LINE_WAIT", "ReloadGate", "read_back"]

GATE_LIMIT = 150_000
"""Live events held at the gate while the recording is read back, before the next are dropped
(and counted): with what the reading back may have queued (`READ_BACK_WAIT_OVER` and a
batch), they fit the TUI's buffer (`DEFAULT_LIVE_LIMIT`) when the gate opens."""
READ_BACK_WAIT_OVER = 20_000
"""Events queued in the TUI's buffer over which the reading back waits for the TUI to drain
(its memory stays that of the rows, not of the file's events parsed ahead of the screen)."""
READ_BLOCK = 1 << 20
RESTART_LINE_MOST = 64 * 1024
"""The longest ``observation-restarted`` line read back (its detail is a sentence)."""
RESTART_LINE_WAIT = 5.0
"""How long the reading back waits for the forwarding process to write that line, which it
does right after the new observing process took over (nothing live is shown meanwhile)."""


class _Upto(io.RawIOBase):
    """A read-only view of the first ``end`` bytes of the file open as ``fd``, read with
    `os.pread` (the descriptor's offset, which others may use, is never moved)."""

    def __init__(self, fd: int, end: int) -> None:
        self._fd = fd
        self._end = end
        self._at = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Union[bytearray, memoryview]) -> int:  # type: ignore[override]
        size = min(len(buffer), self._end - self._at)
        if size <= 0:
            return 0
        data = os.pread(self._fd, size, self._at)
        buffer[: len(data)] = data
        self._at += len(data)
        return len(data)

    def tell(self) -> int:
        return self._at


def read_back(
    fd: int,
    end: int,
    sink: EventBuffer,
    why: str,
    stop: threading.Event,
    path: Optional[str] = None,
    restart_line_wait: float = 0.0,
) -> str:
    """Queue into ``sink`` the events of the recording open as ``fd``, up to byte ``end``
    (where the dead process's last whole line ends; a torn one after it is left out); its
    large payloads left in the file (`payloads.LeftInFile`: read back through ``fd``), when its
    ``path`` is given. And the ``observation-restarted`` line right after ``end``, waited for
    up to ``restart_line_wait`` seconds first: the forwarding process writes it, not this
    session, so no live event brings it, and without its row every row after it would be
    numbered one short of the recording's.
    Blocking: run it in a thread; it gives up once ``stop`` is set or the UI is gone.
    Returns what the TUI shows about it (one line; ``why`` the process before stopped)."""
    end = _through_restart_line(fd, end, stop, restart_line_wait)
    raw = _Upto(fd, end)
    read = queued = 0
    batch: list[Event] = []

    def push(progress: Optional[Progress]) -> None:
        nonlocal queued, batch
        queued += sink.push_many(batch, progress, wait_over=READ_BACK_WAIT_OVER)
        batch = []

    try:
        leave = LeftInFile(path, fd) if path is not None else None
        for event in compacting_reader(io.BufferedReader(raw, READ_BLOCK), leave):
            # Each event, not each batch: a recording of large answers has few events, each
            # a long read.
            if stop.is_set() or sink.closed:
                return f"observation restarted ({why}); reading the rows before it back stopped"
            batch.append(event)
            read += 1
            if len(batch) >= PUSH_EVERY:
                push(Progress(raw.tell(), end))
        push(Progress(end, end))
    except Exception as exc:  # a damaged file, or a bug here: never the live session's end
        push(None)  # what came before the damage is still worth seeing
        said = str(exc) if isinstance(exc, (RecordingError, OSError)) else repr(exc)
        return (
            f"observation restarted ({why}); {queued} events before it read back, then the "
            f"recording could not be read ({said})"
        )
    shown = f"{queued} events before it read back"
    if queued < read:
        shown += f" ({read - queued} more dropped: the TUI's buffer was full)"
    return f"observation restarted ({why}); {shown}"


def _through_restart_line(fd: int, end: int, stop: threading.Event, wait: float) -> int:
    """Where the ``observation-restarted`` line that follows byte ``end`` ends, once it is
    whole (within ``wait`` seconds), so that it is read back with the lines before it;
    ``end`` when the line there is another or none comes."""
    deadline = time.monotonic() + wait
    while True:
        line, newline, _ = os.pread(fd, RESTART_LINE_MOST, end).partition(b"\n")
        if newline:
            break
        if time.monotonic() >= deadline or stop.is_set() or len(line) >= RESTART_LINE_MOST:
            return end
        time.sleep(0.02)
    try:
        data = json.loads(line)
    except ValueError:
        return end
    restarted = isinstance(data, dict) and data.get("kind") == RESTARTED_KIND
    return end + len(line) + 1 if restarted else end


class ReloadGate:
    """Between the live session's hub and the TUI while the recording is read back: live
    events wait here (`push`) until `open`, which hands them on in order. Called from the
    session's thread only."""

    def __init__(self, push: Callable[[Event], None], limit: int = GATE_LIMIT) -> None:
        self._push = push
        self._limit = limit
        self._held: Optional[list[Event]] = []
        self.dropped = 0
        """Live events dropped because the gate held `GATE_LIMIT` already."""

    def push(self, event: Event) -> None:
        held = self._held
        if held is None:
            self._push(event)
        elif len(held) < self._limit:
            held.append(event)
        else:
            self.dropped += 1

    def open(self) -> None:
        """Every recorded event is queued: hand on what waited, then let events through."""
        held, self._held = self._held, None
        for event in held or ():
            self._push(event)
