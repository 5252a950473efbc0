"""Where a large frame's payload lies in the recording being written, so that a live view can
keep no copy of it and read it back when it is asked for (`golem_proxy.tui.payloads`).

A frame's line holds its payload verbatim as its last member in the common case
(`verbatim_line_start`): the line's start, the payload's exact bytes, then ``}`` and a newline.
The recorder alone writes the file, in order, so it knows where each line lands counted from
its first byte; it notes the place of every verbatim payload of `PLACE_FROM` bytes or more
(`PayloadPlaces.note`) and, as it writes, where in the file that first byte went and how much
has reached the kernel (`began_at`, `wrote`; learnt on the writing thread at the first write,
after whatever the forwarding process wrote before a restarted observer's first line). A view
takes a place (`PayloadPlaces.take`) when it lets the bytes go. Reading back (`read_back`)
waits, a bounded while, for the recorder to have written the line, then checks that the file
still holds that very line around the bytes: its start and its end, as written. A recording cut,
replaced, stopped by a disk error or not written that far is a one-line `PayloadNotReadBack`,
never other bytes shown as the payload. `not_held` makes the same check without reading the
payload or waiting: what a view about to be written leaves out.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Protocol

from .files import NotARegularFile, open_regular

if TYPE_CHECKING:  # events.py imports this module: only the types, to check against
    from golem_core.profiles import Profile

    from ..events import FrameSeen

__all__ = [
    "LONGEST_LINE_START",
    "MOST_PLACES",
    "PLACE_FROM",
    "WRITTEN_WAIT",
    "LeavesPayloads",
    "PayloadNotReadBack",
    "PayloadPlace",
    "PayloadPlaces",
    "PlaceKey",
    "not_held",
    "place_key",
    "read_back",
    "verbatim_line_start",
]

PLACE_FROM = 64 * 1024
"""Payloads this large or larger have their place noted: where a live view starts treating a
string as a blob (`golem_proxy.tui.payloads.RELEASE_OVER`). A GOLEM call or its answer is a
few hundred bytes, a viewport capture 1 to 16 MiB."""
LONGEST_LINE_START = 4096
"""A line start longer than this (an id or a method of kilobytes) gets no place: the view
keeps the frame as before rather than a start it would not count against its budget."""
WRITTEN_WAIT = 5.0
"""Seconds `read_back` waits for the recorder to write a line it has queued (a disk behind)."""
MOST_PLACES = 4096
"""Places kept that no view took yet (a view that fell behind and missed the events): the
oldest go first. Each holds its line's start: a few hundred bytes, at most
`LONGEST_LINE_START`."""
LINE_END = b"}\n"
"""What follows a verbatim payload in its line."""

PlaceKey = tuple[str, int, str, int]
"""A frame in a session: its route, connection, direction and number on that connection."""


def place_key(frame: FrameSeen) -> PlaceKey:
    """``frame``'s `PlaceKey`: what the recorder notes a place by and a view takes it by."""
    return (frame.route, frame.conn, frame.direction.value, frame.index)


@dataclass(frozen=True)
class PayloadPlace:
    """A payload of ``size`` bytes, ``offset`` bytes after the first one its recorder wrote
    (``places`` knows where that is in the file, once it wrote), in a line that starts with
    ``line_start`` (which ends right before the payload)."""

    places: PayloadPlaces = field(compare=False, repr=False)
    offset: int
    size: int
    line_start: bytes

    @property
    def path(self) -> str:
        """The recording."""
        return self.places.path

    @property
    def end(self) -> int:
        """Where its line ends, counted as ``offset`` is: the line is written once the
        recorder has written that many bytes."""
        return self.offset + self.size + len(LINE_END)


def verbatim_line_start(payload: bytes, parts: list[bytes]) -> Optional[bytes]:
    """The start of a frame's line up to its payload, when the line's pieces ``parts`` (as
    `writer.encode_event_parts` gives them for the frame of ``payload``) hold the payload
    verbatim: its exact bytes as the last member, followed by ``}`` and a newline (the
    writer's common case); else None (stored base64, or redacted)."""
    if len(parts) == 3 and parts[1] is payload and parts[2] == LINE_END:
        return parts[0]
    return None


class PayloadNotReadBack(Exception):
    """The recording no longer holds the payload where it was written (or not yet); the
    message says why, in a few words."""


def read_back(
    place: PayloadPlace, wait: float = WRITTEN_WAIT, first: Optional[int] = None
) -> bytes:
    """The payload's bytes (its ``first`` bytes only, when given), read from its recording once
    the recorder wrote them (waiting at most ``wait`` seconds); the line's start and end are
    checked either way. Raises PayloadNotReadBack."""
    return _read_line(place, place.places.written_offset(place, wait), first)


def not_held(place: PayloadPlace) -> str:
    """Why the recording does not hold ``place``'s payload as it was written (its line's start
    and end checked, the payload not read), without waiting; "" when it does, or when the
    recorder has not written it yet and still may."""
    why = place.places.never_written(place)
    if why:
        return why
    try:
        offset = place.places.written_offset(place, 0.0)
    except PayloadNotReadBack:  # not written yet
        return ""
    try:
        _read_line(place, offset, 0)
    except PayloadNotReadBack as exc:
        return str(exc)
    return ""


def _read_line(place: PayloadPlace, offset: int, first: Optional[int]) -> bytes:
    """Read ``place``'s line from its recording, where its payload starts at ``offset``: the
    payload's ``first`` bytes (all when None), checked to lie between the line's start and end
    as written. Raises PayloadNotReadBack."""
    size = place.size if first is None else min(first, place.size)
    head = len(place.line_start)
    descriptor = place.places.descriptor
    if descriptor is not None:  # the file a view read, wherever its path points now
        data, end = _pread_line(place, descriptor, offset, size)
    else:
        try:
            # Never blocks: a FIFO or a device put where the recording was is refused.
            recording = open_regular(place.path)
        except NotARegularFile as exc:
            raise PayloadNotReadBack(f"the recording cannot be read back: {exc.args[0]}") from None
        except OSError as exc:
            raise PayloadNotReadBack(
                f"the recording {place.path} cannot be opened ({exc.strerror or exc})"
            ) from None
        with recording:
            data, end = _pread_line(place, recording.fileno(), offset, size)
    if len(data) < head + size or len(end) < len(LINE_END):
        raise PayloadNotReadBack(f"the recording {place.path} ends before it (cut short)")
    if data[:head] != place.line_start or end != LINE_END:
        raise PayloadNotReadBack(
            f"the recording {place.path} no longer holds it at byte {offset:,} "
            "(the file was changed)"
        )
    return data[head:]


def _pread_line(
    place: PayloadPlace, descriptor: int, offset: int, size: int
) -> tuple[bytes, bytes]:
    """The line's start with the payload's first ``size`` bytes, and what follows the
    payload where the line's end was written. Raises PayloadNotReadBack."""
    head = len(place.line_start)
    try:
        data = _pread_whole(descriptor, offset - head, head + size)
        end = _pread_whole(descriptor, offset + place.size, len(LINE_END))
    except OSError as exc:
        raise PayloadNotReadBack(
            f"reading the recording {place.path} failed ({exc.strerror or exc})"
        ) from None
    return data, end


def _pread_whole(descriptor: int, start: int, wanted: int) -> bytes:
    """Up to ``wanted`` bytes from ``start``: fewer only where the file ends."""
    parts = []
    got = 0
    while got < wanted:
        part = os.pread(descriptor, wanted - got, start + got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


class LeavesPayloads(Protocol):
    """What a reader for a view is given to leave large payloads in the file it reads
    (`golem_proxy.tui.payloads.LeftInFile`): called for each frame of ``smallest`` bytes or
    more whose line it took from ``buffer`` (its first byte at ``line_start``; the payload, as
    the line holds it, ends at ``payload_end``; ``buffer[0]`` is at ``offset`` in the file),
    before anything holds the frame; returns the frame to use (the same one: left as read)."""

    smallest: int

    def __call__(
        self,
        frame: FrameSeen,
        profile: Profile,
        buffer: bytes,
        line_start: int,
        payload_end: int,
        offset: int,
    ) -> FrameSeen: ...


class PayloadPlaces:
    """The places of the large payloads of a recording being written, noted by the recorder
    (its thread) and taken by a view (another): safe across threads."""

    @classmethod
    def in_file(cls, path: str, descriptor: Optional[int] = None) -> PayloadPlaces:
        """The places in a recording already written, one a view reads: its lines are all in
        the file, from its first byte. Given the ``descriptor`` the view reads it through,
        payloads are read back through a copy of it (`pread`: its offset is never moved;
        closed with these places): from that file, renamed or replaced since, not from
        whatever ``path`` names then."""
        places = cls(path)
        places.began_at(0)
        places.wrote(sys.maxsize)
        if descriptor is not None:
            places.descriptor = os.dup(descriptor)
            weakref.finalize(places, os.close, places.descriptor)
        return places

    def __init__(self, path: str, *, smallest: int = PLACE_FROM, most: int = MOST_PLACES) -> None:
        self.path = os.path.abspath(path)
        """The recording (absolute: the view reads it back from wherever it runs)."""
        self.descriptor: Optional[int] = None
        """The file to read back through, when a view gave it (`in_file`), else ``path``."""
        self.smallest = smallest
        self.most = most
        self._places: dict[PlaceKey, PayloadPlace] = {}
        self._began_at: Optional[int] = None
        self._written = 0
        self._failed = ""
        self._changed = threading.Condition()

    def note(self, key: PlaceKey, offset: int, size: int, line_start: bytes) -> None:
        """The payload of frame ``key``, ``size`` bytes, will be ``offset`` bytes after the
        recorder's first byte once written, after ``line_start`` (too long a start: not
        noted)."""
        if len(line_start) > LONGEST_LINE_START:
            return
        place = PayloadPlace(self, offset, size, line_start)
        with self._changed:
            self._places[key] = place
            while len(self._places) > self.most:
                del self._places[next(iter(self._places))]

    def began_at(self, position: int) -> None:
        """The recorder's first byte is at ``position`` in the file (learnt at its first
        write)."""
        with self._changed:
            self._began_at = position
            self._changed.notify_all()

    def wrote(self, total: int) -> None:
        """The recorder's first ``total`` bytes have reached the kernel."""
        with self._changed:
            self._written = total
            self._changed.notify_all()

    def failed(self, why: str) -> None:
        """The recorder stopped writing (a disk error, or the file moved under it): what it
        had not written is not in the file."""
        with self._changed:
            self._failed = self._failed or why
            self._changed.notify_all()

    def lost(self, place: PayloadPlace) -> str:
        """Why ``place``'s payload never reached the file (the recorder stopped before it
        wrote that line), without waiting; "" when it did or still may."""
        with self._changed:
            return "" if self._written_through(place) else self._failed

    def never_written(self, place: PayloadPlace) -> str:
        """What reading ``place``'s payload back says when the recorder stopped before it
        wrote that line (`lost`, said as `PayloadNotReadBack` says it), without waiting or
        reading the file; "" when it did or still may."""
        why = self.lost(place)
        return self._stopped_before(why) if why else ""

    def _stopped_before(self, why: str) -> str:
        return f"the recording {self.path} stopped before it was written ({why})"

    def written_offset(self, place: PayloadPlace, wait: float) -> int:
        """Where ``place``'s payload is in the file, once the line holding it is written
        (waiting at most ``wait`` seconds for that). Raises PayloadNotReadBack."""
        with self._changed:
            self._changed.wait_for(lambda: bool(self._failed) or self._written_through(place), wait)
            if self._began_at is not None and self._written_through(place):
                return self._began_at + place.offset
            if self._failed:
                raise PayloadNotReadBack(self._stopped_before(self._failed))
        raise PayloadNotReadBack(
            f"the recorder has not written it to {self.path} yet (after {wait:g} s)"
        )

    def _written_through(self, place: PayloadPlace) -> bool:
        """Whether ``place``'s line has reached the kernel (under the lock)."""
        return self._began_at is not None and self._written >= place.end

    def take(self, key: PlaceKey) -> Optional[PayloadPlace]:
        """The place of frame ``key``'s payload, forgotten here (None: not noted, or the
        oldest let go)."""
        with self._changed:
            return self._places.pop(key, None)

    def __len__(self) -> int:
        with self._changed:
            return len(self._places)
