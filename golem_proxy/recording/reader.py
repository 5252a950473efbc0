"""Reading a recording (docs/recording-format.md), treating it as untrusted input.

A recording may come from anyone (a bug report, a colleague, CI), so the reader assumes
nothing: before a line is parsed, its nesting depth and the memory parsing it would take are
estimated from its structural characters (a line of ``[[],…]`` costs ~25 times its bytes
once parsed); after, every member an event is built from is checked for type and range
(finite numbers, whole numbers within `MAX_INT`, strings as strings). Every problem is a
`RecordingError` naming the line and what is wrong, never another exception.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Optional, TypeVar

from golem_core.profiles import Profile, get_profile

from ..events import (
    Event,
    ExchangeCompleted,
    FrameSeen,
    ObservationLost,
    SessionEnded,
    SpoolFull,
)
from ..terminal import safe_text
from .files import open_recording
from .held_frames import IN_FLIGHT_BYTES, HeldFrames
from .line_events import LineDecoder
from .line_guard import check_line, decode_json
from .payload_places import LeavesPayloads
from .schema import DEFAULT_MAX_LINE, Header, RecordingError
from .seq_watch import SeqWatch
from .time_watch import TimeWatch
from .unheld_exchanges import UnheldExchanges
from .writer_lock import WRITER_LOCK, WRITER_LOCK_KIND, writer_holds_lock

__all__ = [
    "OpenedRecording",
    "Recording",
    "RecordingReader",
    "check_line",
    "decode_json",
    "parse_header",
    "read_recording",
    "route_profiles",
]


@dataclass
class Recording:
    """A recording read into memory: its header, its events, and what was skipped."""

    header: Header
    profile: Profile
    events: list[Event]
    truncated_tail: bool = False
    """The last line was incomplete (a killed writer); it was ignored."""
    route_profiles: dict[str, Profile] = field(default_factory=dict)
    """Routes whose frames have a profile of their own (`golem-proxy mcp`'s ``mcp`` route)."""

    def profile_for(self, route: str) -> Profile:
        """The profile of ``route``'s frames."""
        return self.route_profiles.get(route, self.profile)

    def exchanges(self) -> list[ExchangeCompleted]:
        return [e for e in self.events if isinstance(e, ExchangeCompleted)]


def parse_header(first: bytes) -> tuple[Header, Profile]:
    """The header and profile of a recording's first line (with its newline). Raises
    RecordingError saying what is wrong."""
    if not first:
        raise RecordingError("empty file: no recording header")
    if not first.endswith(b"\n"):
        raise RecordingError("incomplete or oversized recording header line")
    try:
        check_line(first)
        data = decode_json(first)
    except RecordingError as exc:
        if exc.what.startswith("not "):
            # Some other file (a README, a log): what the parser says of it would not help.
            kind = exc.what.partition(":")[0].partition(" (")[0]
            raise RecordingError(
                f"not a golem-proxy recording (its first line is {kind})"
            ) from None
        raise RecordingError(f"bad recording header: {exc.what}", line=1) from None
    header = Header.from_json(data)
    try:
        return header, get_profile(header.profile)
    except KeyError:
        raise RecordingError(
            f"unknown profile {safe_text(header.profile, 60)!r} in the header", line=1
        ) from None


def route_profiles(header: Header) -> dict[str, Profile]:
    """The routes whose frames have a profile of their own (``"profile"`` in the header's
    route entry: `golem-proxy mcp`'s ``mcp`` route). Raises RecordingError for a profile this
    version does not know."""
    found: dict[str, Profile] = {}
    for route, name in header.route_profile_names().items():
        try:
            found[route] = get_profile(name)
        except KeyError:
            raise RecordingError(
                f"unknown profile {safe_text(name, 60)!r} for route "
                f"{safe_text(route, 60)!r} in the header",
                line=1,
            ) from None
    return found


class RecordingReader:
    """Reads an open recording: the header at construction, then events by iteration.

    A last line without its newline (the writer was killed) is ignored and noted in
    ``truncated_tail``; a damaged line in the middle raises RecordingError naming its number
    (and the file, given ``path``). A line over ``max_line`` bytes, or one whose parse would
    cost more than ``budget`` bytes, is refused, so an untrusted trace cannot make the reader
    allocate without bound; nor can its requests that are never answered: past ``in_flight``
    bytes held, the oldest are let go (`HeldFrames`). Iterating again after the end picks up
    lines written since (a followed file).

    With ``leave_payloads`` (a view's reader), each frame of its ``smallest`` bytes or more is
    handed to it with the line that holds it and where that line is in the file, before
    anything holds the frame; the reader goes on with the frame it returns."""

    def __init__(
        self,
        stream: IO[bytes],
        *,
        max_line: int = DEFAULT_MAX_LINE,
        path: Optional[str] = None,
        in_flight: int = IN_FLIGHT_BYTES,
        leave_payloads: Optional[LeavesPayloads] = None,
    ) -> None:
        self.stream = stream
        self.max_line = max_line
        self.path = path
        self.truncated_tail = False
        self.line_number = 1
        try:
            first = stream.readline(max_line + 1)
            self.header, self.profile = parse_header(first)
        except RecordingError as exc:
            raise self._named(exc) from None
        self.offset = len(first)
        """Where the next line starts in the file (the stream read from its first byte)."""
        self.header_digest = hashlib.sha256(first.rstrip(b"\r\n")).hexdigest()
        """The SHA-256 of the header line, newline left out (hex): every copy of a session's
        recording has it, another session's has another (its start to the microsecond)."""
        self.leave_payloads = leave_payloads
        self._line = b""
        self._line_at = 0
        try:
            self.route_profiles = route_profiles(self.header)
        except RecordingError as exc:
            raise self._named(exc) from None
        """The routes whose frames have a profile of their own, by name."""
        self._decoder = LineDecoder(
            self.profile, self.route_profiles, self.header.version, in_flight, self.header
        )
        if leave_payloads is not None:
            self._decoder.on_frame = self._leave_payload

    @property
    def stopped(self) -> Optional[ObservationLost]:
        """Where observation stopped (the recording says so), once read that far; else None."""
        return self._decoder.stopped

    @property
    def restarts(self) -> list[ObservationLost]:
        """Where a new observing process took over the recording (the recording says so), in
        order, as far as it was read: the first `RESTARTS_KEPT`."""
        return self._decoder.restarts

    @property
    def restart_count(self) -> int:
        """How many times a new observing process took over, as far as read."""
        return self._decoder.restart_count

    @property
    def last_restart(self) -> Optional[ObservationLost]:
        """The last time a new observing process took over, as far as read (None: none did)."""
        return self._decoder.last_restart

    @property
    def spool_full(self) -> Optional[SpoolFull]:
        """Where the spool reached ``--spool-limit`` (the recording says so), once read that
        far; else None."""
        return self._decoder.spool_full

    @property
    def ended(self) -> Optional[SessionEnded]:
        """The ``session-end`` line when it is the last event read so far (the session
        ended in order there), else None."""
        return self._decoder.ended

    @property
    def held(self) -> HeldFrames:
        """The frames held until a later line names them, and the requests let go past the
        bound, as far as read."""
        return self._decoder.frames

    @property
    def unheld(self) -> UnheldExchanges:
        """The exchange lines naming frames the lines before them do not hold, as far as
        read."""
        return self._decoder.unheld

    @property
    def seq(self) -> SeqWatch:
        """Where the lines' numbering broke (lines lost or out of order), as far as read."""
        return self._decoder.seq

    @property
    def times(self) -> TimeWatch:
        """Where the lines' times went back (lines out of order), as far as read."""
        return self._decoder.times

    def _named(self, exc: RecordingError) -> RecordingError:
        return exc if self.path is None else exc.at(self.path)

    def _leave_payload(self, frame: FrameSeen) -> FrameSeen:
        """The frame of the line being decoded, as ``leave_payloads`` makes it."""
        leave = self.leave_payloads
        if leave is None or len(frame.payload) < leave.smallest:
            return frame
        line = self._line
        profile = self.route_profiles.get(frame.route, self.profile)
        return leave(frame, profile, line, 0, len(line) - 2, self._line_at)

    def __iter__(self) -> Iterator[Event]:
        decode = self._decoder.decode
        while True:
            line = self.stream.readline(self.max_line + 1)
            if not line:
                return
            self.line_number += 1
            line_at = self.offset
            self.offset += len(line)
            if not line.endswith(b"\n"):
                if len(line) > self.max_line:
                    raise self._named(
                        RecordingError(f"longer than {self.max_line} bytes", line=self.line_number)
                    )
                self.truncated_tail = True
                return  # an incomplete last line: the writer stopped mid-line
            if not line.strip():
                continue
            self._line, self._line_at = line, line_at
            try:
                event = decode(line, self.line_number)
            except RecordingError as exc:
                raise self._named(RecordingError(exc.what, line=self.line_number)) from None
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
                # A profile's parse of a valid line never raises; this is a last net so that
                # an untrusted line never escapes as something other than a RecordingError.
                what = f"{type(exc).__name__}: {safe_text(str(exc), 120)}"
                raise self._named(RecordingError(what, line=self.line_number)) from None
            finally:
                self._line = b""
            if self._decoder.said_first:
                yield from self._decoder.take_said_first()
            if event is not None:
                yield event
            if self._decoder.said:
                yield from self._decoder.take_said()


_Opened = TypeVar("_Opened", bound="OpenedRecording")


class OpenedRecording:
    """A recording file open with its header read: what a view reading it one event at a
    time keeps, and what it shows before the first event. Close it when done (it is a context
    manager); ``stream`` is the file ``reader`` reads, whatever wraps it."""

    def __init__(self, path: str, stream: IO[bytes], reader: RecordingReader) -> None:
        self.path = path
        self._stream = stream
        self._reader = reader
        # What the header says is read once, with it: the reader never changes it.
        self.header: Header = reader.header
        self.profile: Profile = reader.profile
        self.route_profiles: dict[str, Profile] = reader.route_profiles
        """Routes whose frames have a profile of their own (`golem-proxy mcp`'s ``mcp``)."""
        self.header_digest: str = reader.header_digest
        """The SHA-256 of the header line (`RecordingReader.header_digest`)."""

    def profile_for(self, route: str) -> Profile:
        """The profile of ``route``'s frames."""
        return self.route_profiles.get(route, self.profile)

    @property
    def truncated_tail(self) -> bool:
        """The last line was incomplete (the writer stopped) and was ignored."""
        return self._reader.truncated_tail

    def fileno(self) -> int:
        """The descriptor of the file being read (a progress bar follows its offset)."""
        return self._stream.fileno()

    def being_written(self) -> Optional[bool]:
        """Whether the file is still being written, asked once it was read to its end: True
        while its writer holds the file's lock (`writer_lock`), or when the file grew past
        what was read (its writer went on, or held no lock); False when its header says the
        writer held that lock and no one does (the writer is gone: closed, or killed) and
        nothing was added; None when it cannot be told (a file whose writer held no lock,
        nothing added since it was read)."""
        try:
            fd = self._stream.fileno()
        except (OSError, ValueError):  # an in-memory stream: no file to ask about
            return None
        held = writer_holds_lock(fd)
        if held:
            return True
        try:
            if os.fstat(fd).st_size > self._stream.tell():
                return True
        except (OSError, ValueError):  # a stream that cannot say where it is
            pass
        if held is False and self.header.extra.get(WRITER_LOCK) == WRITER_LOCK_KIND:
            return False
        return None

    def close(self) -> None:
        self._stream.close()

    def __enter__(self: _Opened) -> _Opened:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def read_recording(path: str, *, max_line: int = DEFAULT_MAX_LINE) -> Recording:
    """Read a whole recording. Raises OSError, or RecordingError naming the file, the line
    and what is wrong."""
    with open_recording(path) as stream:
        reader = RecordingReader(stream, max_line=max_line, path=path)
        events = list(reader)
        return Recording(
            reader.header,
            reader.profile,
            events,
            reader.truncated_tail,
            route_profiles=reader.route_profiles,
        )
