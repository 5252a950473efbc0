"""Event sources for the TUI: a recording file, read once or tailed while it is written.

A source runs in a worker thread and pushes batches into an `EventBuffer`; the app drains it
exactly as it drains the live proxy's events, so both take the same path to the screen.
"""

from __future__ import annotations

import datetime
import os
import threading
from typing import IO, Optional

from golem_core.profiles import Profile

from ..analysis.reading_notes import order_notes
from ..events import Event, SessionEnded
from ..recording.fast_reader import FastRecordingReader
from ..recording.format import Header, RecordingError, RecordingReader, open_recording
from .bridge import EventBuffer, Progress, SourceInfo
from .compact import Compactor
from .payloads import LeftInFile

__all__ = ["PUSH_EVERY", "RecordingSource", "TailStream", "compacting_reader", "ended_text"]

FOLLOWING = " (following)"
"""What a followed file's description ends with (the status line drops it once reading
stopped)."""

PUSH_EVERY = 2000
"""Events per push while loading: small enough that the first rows show at once."""


class TailStream:
    """A read-only view of a growing file whose `readline()` returns only complete lines,
    and ``b""`` (end, for now) while the last line is still being written."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self._partial = b""

    def readline(self, limit: int = -1) -> bytes:
        while True:
            line = self.stream.readline(limit)
            if not line:
                return b""
            line = self._partial + line
            if line.endswith(b"\n"):
                self._partial = b""
                return line
            self._partial = line  # the writer is mid-line; keep it for the next poll
            if limit >= 0 and len(line) > limit:
                # Hand the oversized line over so the reader reports it instead of waiting.
                self._partial = b""
                return line


def compacting_reader(stream: IO[bytes], leave: Optional[LeftInFile] = None) -> FastRecordingReader:
    """A fast reader whose whole exchanges are made compact as they are read: their parsed
    messages never wait in a batch, hundreds of thousands of dicts freed later among the
    flows that stay (the model compacts a settled flow's frames anyway, and leaves compact
    ones as they are). With ``leave`` (``stream`` read from the file's first byte), its large
    payloads are left in the file (`payloads.LeftInFile`)."""
    reader = FastRecordingReader(stream, leave_payloads=leave)
    reader.on_exchange = Compactor(reader.profile, reader.route_profiles).compact_flow
    return reader


class RecordingSource:
    """Reads a recording into the UI; with ``follow``, keeps polling it for new lines until
    its ``session-end`` line (the session ended in order: nothing more will come).

    Construct it with `open()`, which reads the header (so the caller knows the profile)."""

    live = False
    serving = False
    buffer_limit: Optional[int] = None  # a file is never dropped from: the reader just waits

    def __init__(
        self, path: str, stream: IO[bytes], reader: RecordingReader, *, follow: bool, poll: float
    ) -> None:
        self.path = path
        self.follow = follow
        self.poll = poll
        self.description = f"{path}{FOLLOWING}" if follow else path
        self.live = follow
        self._stream = stream
        self._reader = reader
        self._stop = threading.Event()
        # What a followed file starts with, and which file it is: a recording written again
        # on the same path (``proxy --record`` again) truncates or replaces it.
        self._identity = _identity(stream.fileno()) if follow else None
        self._order_notes: tuple[str, ...] = ()
        self.header: Header = reader.header
        self.profile: Profile = reader.profile
        self.route_profiles: Optional[dict[str, Profile]] = reader.route_profiles
        """The routes whose frames have a profile of their own: a source that says how each
        route's frames were parsed lets the TUI keep them compact (`golem_proxy.tui.compact`;
        None: keep the frames as read)."""

    @classmethod
    def open(
        cls, path: str, *, follow: bool = False, poll: float = 0.1, exact: bool = False
    ) -> RecordingSource:
        """Open ``path`` and read its header. Raises OSError or RecordingError (a FIFO, a
        device or a socket is refused without blocking on it).

        A file read once is read the fast way (`golem_proxy.recording.fast_reader`: the same
        events); with ``exact``, or ``follow``, line by line by the exact reader."""
        stream = open_recording(path)  # closed by run() or on error below
        try:
            reader: RecordingReader
            # Large payloads stay in the file, read back when wanted (payloads.py).
            leave = LeftInFile(path, stream.fileno())
            if follow:
                tail = TailStream(stream)
                reader = RecordingReader(tail, leave_payloads=leave)  # type: ignore[arg-type]
            elif exact:
                reader = RecordingReader(stream, leave_payloads=leave)
            else:
                reader = compacting_reader(stream, leave)
        except BaseException:
            stream.close()
            raise
        return cls(path, stream, reader, follow=follow, poll=poll)

    def progress(self) -> Progress:
        """How far the file is read, of its size now (a followed file grows)."""
        return Progress(self._stream.tell(), os.fstat(self._stream.fileno()).st_size)

    def run(self, sink: EventBuffer) -> None:
        reason = "stopped" if self.follow else "end of recording"
        failed = False
        batch: list[Event] = []
        ended: Optional[SessionEnded] = None
        try:
            while not self._stop.is_set():
                # Before reading on: lines read from a file written again would be taken
                # for the ones after those shown.
                gone = self._gone() if self.follow else None
                if gone is not None:
                    reason, failed = gone, True
                    break
                for event in self._reader:
                    batch.append(event)
                    if len(batch) >= PUSH_EVERY:
                        sink.push_many(batch, self.progress())
                        batch = []
                        self._note_order(sink)
                        if self._stop.is_set():
                            break
                sink.push_many(batch, self.progress())
                batch = []
                self._note_order(sink)
                ended = self._reader.ended  # the last line read says the session ended
                if not self.follow or ended is not None:
                    break
                self._stop.wait(self.poll)
            if ended is not None:
                reason = ended_text(self.header, ended)
            elif self._reader.truncated_tail and not self.follow:
                reason = "end of recording (incomplete last line ignored)"
        except RecordingError as exc:
            sink.push_many(batch)  # what came before the damaged line is still worth seeing
            # A followed file cut and written again reads as a damaged line: say what it was.
            gone = self._gone() if self.follow else None
            reason, failed = gone or f"recording error: {exc}", True
        except Exception as exc:  # a hostile file must not leave the UI waiting forever
            sink.push_many(batch)
            reason, failed = f"cannot read {self.path}: {type(exc).__name__}: {exc}", True
        finally:
            self._stream.close()
            sink.finish(reason, failed=failed)

    def stop(self) -> None:
        self._stop.set()

    def _note_order(self, sink: EventBuffer) -> None:
        """Say above the table, as `show` says on stderr, where the lines read so far were
        first lost or out of order (their ``seq``, their ``t``); again only when that
        changes (a followed file's count of other places grows)."""
        reader = self._reader
        notes = tuple(order_notes(self.path, reader.seq, reader.times, unheld=reader.unheld))
        if notes != self._order_notes:
            self._order_notes = notes
            sink.describe(SourceInfo(self.description, notes))

    def _gone(self) -> Optional[str]:
        """Why the rows read so far are no longer the followed file's (it was truncated, or
        another file took its path), or None."""
        fd = self._stream.fileno()
        opened = os.fstat(fd)
        read = self._stream.tell()
        first = self._identity or b""
        if opened.st_size < read or os.pread(fd, len(first), 0) != first:
            return (
                f"{self.path} was truncated (now {opened.st_size} bytes; had been read to "
                f"{read}): the rows shown are from before it"
            )
        try:
            same = os.path.samestat(opened, os.stat(self.path))
        except OSError:
            same = False
        if not same:
            return f"{self.path} was replaced or removed: the rows shown are from the file before"
        return None


def ended_text(header: Header, ended: SessionEnded) -> str:
    """What the TUI says of a recording's ``session-end`` line: ``session ended at 2025-01-01
    12:00:03 UTC, 3.141 s in (stopped by SIGINT)`` (the wall time is the header's start
    plus the line's ``t``; left out when the start cannot be read)."""
    when = f"{ended.t:.3f} s in"
    started = header.started
    if started is not None:
        try:
            wall = started + datetime.timedelta(seconds=ended.t)
            when = f"{wall.strftime('%Y-%m-%d %H:%M:%S')} UTC, {when}"
        except (ValueError, OverflowError):
            pass
    return f"session ended at {when} ({ended.reason or 'no reason given'})"


def _identity(fd: int) -> bytes:
    """The first line of the file open at ``fd`` (its header: a new recording's differs in its
    ``started_at``), or as much of it as 64 KiB holds."""
    first = os.pread(fd, 65536, 0)
    end = first.find(b"\n")
    return first if end < 0 else first[: end + 1]
