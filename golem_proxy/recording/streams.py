"""Rebuild the exact byte streams of a session from its events.

Per connection and direction, the bytes that crossed are the concatenation, in order, of every
frame (its payload in the profile's framing: the ``!I`` length header for GOLEM, the ``\\n``
terminator for NDJSON), every framing error's raw bytes and every discarded chunk. The decoder
accounts for every byte it is fed with exactly these events, so nothing else is needed.
Redacted frames can only be rebuilt with their redacted payload; such streams are not exact.

A request the proxy withheld on purpose (a fault: ``error``, ``reset`` before it, ``drop``) is
recorded because the client sent it; the fault line after it says so (``withheld``). The
streams the client *sent* keep it; the streams the receiving side *got* (``delivered``) leave it
out. So it is with a frame the proxy read but could not deliver (``undelivered``: its receiver
was gone): the streams sent keep it whole, the ``delivered`` ones keep only its first
``delivered_bytes``, and the proxy's count of what it forwarded has only those.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Optional, Protocol, Union

from golem_core.messages import Notification, Request
from golem_core.profiles import Profile

from ..events import (
    BytesDiscarded,
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    FaultInjected,
    FrameSeen,
    FramingErrorSeen,
    InterceptStep,
)
from .files import check_replaceable

__all__ = ["RebuiltStream", "chunks_by_event", "rebuild_streams", "write_streams"]


class Sink(Protocol):
    """Where a stream's bytes go as they are rebuilt (a file)."""

    def write(self, data: bytes, /) -> object: ...

    def close(self) -> None: ...


@dataclass
class RebuiltStream:
    """The bytes of one direction of one connection, and how they were assembled."""

    conn: int
    route: str
    direction: Direction
    data: bytearray = field(default_factory=bytearray)
    """The bytes (empty when they went to a file instead, see `write_streams`)."""
    size: int = 0
    frames: int = 0
    frame_errors: int = 0
    discarded_bytes: int = 0
    redacted_frames: int = 0
    withheld_frames: int = 0
    """Requests recorded but not forwarded (left out of a ``delivered`` stream)."""
    withheld_bytes: int = 0
    """Their bytes, when they are in the stream (not ``delivered``): the proxy's count of
    what it forwarded leaves them out."""
    undelivered_frames: int = 0
    """Frames read but not (wholly) delivered: their receiver was gone."""
    undelivered_bytes: int = 0
    """Their bytes that never went, when they are in the stream (not ``delivered``): the
    proxy's count of what it forwarded leaves them out."""
    recorded_bytes: Optional[int] = None
    """What the proxy counted for this direction when the connection closed (None: no close)."""
    keep: bool = field(default=True, repr=False)
    sink: Optional[Sink] = field(default=None, repr=False, compare=False)
    _sha256: Any = field(default_factory=hashlib.sha256, repr=False, compare=False)

    def add(self, chunk: bytes) -> None:
        """Append ``chunk``: kept in ``data`` and/or written to ``sink``, and hashed."""
        self.size += len(chunk)
        self._sha256.update(chunk)
        if self.keep:
            self.data += chunk
        if self.sink is not None:
            self.sink.write(chunk)

    @property
    def sha256(self) -> str:
        return str(self._sha256.hexdigest())

    @property
    def filename(self) -> str:
        return f"conn-{self.conn:04d}-{self.direction.value}.bin"

    @property
    def exact(self) -> bool:
        """False when redaction replaced payload bytes."""
        return self.redacted_frames == 0

    @property
    def complete(self) -> Optional[bool]:
        """Whether the rebuilt length equals the proxy's count (None when unknown or when
        redaction makes lengths incomparable)."""
        if self.recorded_bytes is None or not self.exact:
            return None
        forwarded = self.size - self.withheld_bytes - self.undelivered_bytes
        return forwarded == self.recorded_bytes

    def to_json(self) -> dict[str, Any]:
        return {
            "conn": self.conn,
            "route": self.route,
            "direction": self.direction.value,
            "file": self.filename,
            "bytes": self.size,
            "sha256": self.sha256,
            "frames": self.frames,
            "frame_errors": self.frame_errors,
            "discarded_bytes": self.discarded_bytes,
            "redacted_frames": self.redacted_frames,
            "withheld_frames": self.withheld_frames,
            "withheld_bytes": self.withheld_bytes,
            "undelivered_frames": self.undelivered_frames,
            "undelivered_bytes": self.undelivered_bytes,
            "exact": self.exact,
            "recorded_bytes": self.recorded_bytes,
            "complete": self.complete,
        }


def rebuild_streams(
    events: Iterable[Event],
    profile: Profile,
    *,
    delivered: bool = False,
    route_profiles: Optional[Mapping[str, Profile]] = None,
) -> dict[tuple[int, Direction], RebuiltStream]:
    """Both streams of every connection in ``events``, keyed by ``(conn, direction)`` in the
    order connections appear, with their bytes in ``data``. A connection that was opened has
    both, even when empty. With ``delivered``, the bytes the receiving side got: withheld
    requests left out. ``route_profiles`` frames a route's payloads with its own profile (the
    ``mcp`` route of `golem-proxy mcp`)."""
    return _Rebuilder(profile, delivered=delivered, route_profiles=route_profiles).run(events)


def chunks_by_event(
    events: Iterable[Event],
    profile: Profile,
    route_profiles: Optional[Mapping[str, Profile]] = None,
) -> Iterator[tuple[Event, list[bytes]]]:
    """Each event of ``events`` with the stream bytes it stands for, in order (an empty list
    for an event that carries none): the same bytes `rebuild_streams` assembles, handed on
    as they are read, so no stream is held in memory (nor a closed connection's bookkeeping).
    The list is reused: consume it before taking the next event."""
    chunks: list[bytes] = []

    def opened(stream: RebuiltStream) -> None:
        stream.keep = False

    def added(stream: RebuiltStream, chunk: bytes) -> None:
        chunks.append(chunk)

    def closed(stream: RebuiltStream) -> None:
        # Nothing more comes for it: forget it, so memory follows the open connections only.
        rebuilder.streams.pop((stream.conn, stream.direction), None)
        rebuilder.last_request.pop((stream.conn, stream.direction), None)

    rebuilder = _Rebuilder(
        profile, opened=opened, closed=closed, added=added, route_profiles=route_profiles
    )
    for event in events:
        rebuilder.feed(event)
        yield event, chunks
        chunks.clear()


class _Rebuilder:
    def __init__(
        self,
        profile: Profile,
        *,
        delivered: bool = False,
        opened: Optional[Callable[[RebuiltStream], None]] = None,  # a new stream
        closed: Optional[Callable[[RebuiltStream], None]] = None,  # its connection closed
        route_profiles: Optional[Mapping[str, Profile]] = None,
        added: Optional[Callable[[RebuiltStream, bytes], None]] = None,  # bytes appended
    ) -> None:
        self.profile = profile
        self.route_profiles = dict(route_profiles or {})
        self.delivered = delivered
        self.opened = opened
        self.closed = closed
        self.added = added
        self.streams: dict[tuple[int, Direction], RebuiltStream] = {}
        # Where the last request of each connection starts in its stream, and its length (a
        # server's own, s2c, too: the proxy may withhold one).
        self.last_request: dict[tuple[int, Direction], tuple[int, int]] = {}

    def stream(self, conn: int, route: str, direction: Direction) -> RebuiltStream:
        key = (conn, direction)
        found = self.streams.get(key)
        if found is None:
            found = self.streams[key] = RebuiltStream(conn, route, direction)
            if self.opened is not None:
                self.opened(found)
        return found

    def run(self, events: Iterable[Event]) -> dict[tuple[int, Direction], RebuiltStream]:
        for event in events:
            self.feed(event)
        return self.streams

    def _undelivered_part(
        self,
        target: RebuiltStream,
        event: Union[FrameSeen, FramingErrorSeen, BytesDiscarded],
        data: bytes,
    ) -> bytes:
        """The bytes of ``event`` (``data``) that go to ``target``: all of them, but for the
        ``delivered`` streams only the first ``delivered_bytes`` of bytes the receiver never
        got (`FrameSeen.undelivered`); the rest is then left out of the proxy's count."""
        if not event.undelivered:
            return data
        kept = min(event.delivered_bytes, len(data))
        if self.delivered:
            return data[:kept]
        target.undelivered_bytes += len(data) - kept
        return data

    def feed(self, event: Event) -> None:
        """Apply one event: the bytes it stands for go to its stream (and to ``added``)."""
        stream = self.stream
        if isinstance(event, ConnectionOpened):
            for direction in Direction:
                stream(event.conn, event.route, direction)
        elif isinstance(event, FrameSeen):
            target = stream(event.conn, event.route, event.direction)
            profile = self.route_profiles.get(event.route, self.profile)
            framed = profile.frame_payload(event.payload)
            if event.direction is Direction.C2S or isinstance(
                event.message, (Request, Notification)
            ):
                self.last_request[(event.conn, event.direction)] = (len(target.data), len(framed))
            target.undelivered_frames += bool(event.undelivered)
            self._add(target, self._undelivered_part(target, event, framed))
            target.frames += 1
            target.redacted_frames += bool(event.redacted)
        elif isinstance(event, FramingErrorSeen):
            target = stream(event.conn, event.route, event.direction)
            self._add(target, self._undelivered_part(target, event, event.raw))
            target.frame_errors += 1
        elif isinstance(event, BytesDiscarded):
            target = stream(event.conn, event.route, event.direction)
            self._add(target, self._undelivered_part(target, event, event.raw))
            target.discarded_bytes += len(event.raw)
        elif isinstance(event, (FaultInjected, InterceptStep)):
            if event.withholds_request:
                self._withheld(event)
        elif isinstance(event, ConnectionClosed):
            for direction, count in (
                (Direction.C2S, event.bytes_c2s),
                (Direction.S2C, event.bytes_s2c),
            ):
                target = stream(event.conn, event.route, direction)
                target.recorded_bytes = count
                if self.closed is not None:
                    self.closed(target)  # nothing more comes for this connection

    def _add(self, target: RebuiltStream, chunk: bytes) -> None:
        target.add(chunk)
        if self.added is not None:
            self.added(target, chunk)

    def _withheld(self, event: Union[FaultInjected, InterceptStep]) -> None:
        withheld = self.last_request.pop((event.conn, event.direction), None)
        target = self.stream(event.conn, event.route, event.direction)
        target.withheld_frames += 1
        if withheld is None:
            return
        start, length = withheld
        if not self.delivered:
            target.withheld_bytes += length
            return
        del target.data[start : start + length]
        target.frames -= 1
        target.size -= length
        target._sha256 = hashlib.sha256(target.data)  # kept in memory: hashed again


OPEN_FILES = 128
"""Stream files `write_streams` keeps open at once, whatever the number of connections open
together (each has two streams; a process may open only so many files)."""


class _OpenFiles:
    """The files being written, at most ``limit`` of them open: writing to one that is not
    opens it again to append, and lets the one written to longest ago go."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: OrderedDict[str, IO[bytes]] = OrderedDict()

    def write(self, path: str, data: bytes) -> None:
        handle = self._open.get(path)
        if handle is None:
            if len(self._open) >= self.limit:
                self._open.popitem(last=False)[1].close()
            handle = self._open[path] = open(path, "ab")  # noqa: SIM115 (the pool closes it)
        else:
            self._open.move_to_end(path)
        handle.write(data)

    def close(self, path: str) -> None:
        handle = self._open.pop(path, None)
        if handle is not None:
            handle.close()

    def close_all(self) -> None:
        while self._open:
            self._open.popitem()[1].close()


@dataclass
class _PooledFile:
    """A stream's file as `RebuiltStream.sink` sees it, open only while `_OpenFiles` keeps it."""

    files: _OpenFiles
    path: str

    def write(self, data: bytes) -> None:
        self.files.write(self.path, data)

    def close(self) -> None:
        self.files.close(self.path)


def write_streams(
    events: Iterable[Event],
    profile: Profile,
    directory: str,
    route_profiles: Optional[Mapping[str, Profile]] = None,
) -> list[RebuiltStream]:
    """Rebuild the streams of ``events`` straight into private files in ``directory``
    (`RebuiltStream.filename`, mode 0600), holding no stream in memory. Each is written to a
    temporary file, and all are renamed into place once every event was read: a damaged line
    leaves no file behind. At most `OPEN_FILES` are open at once, so any number of connections
    may be open together. An existing file is replaced only when it is a regular file the user
    owns. Raises OSError, and whatever reading ``events`` raises."""
    temps: dict[str, str] = {}
    files = _OpenFiles(OPEN_FILES)

    def opened(stream: RebuiltStream) -> None:
        stream.keep = False
        final = os.path.join(directory, stream.filename)
        check_replaceable(final)
        fd, temps[final] = tempfile.mkstemp(dir=directory, prefix=f".{stream.filename}.")
        os.close(fd)  # opened again when written to (`_OpenFiles`)
        stream.sink = _PooledFile(files, temps[final])

    def closed(stream: RebuiltStream) -> None:
        if stream.sink is not None:
            stream.sink.close()
            stream.sink = None

    rebuilder = _Rebuilder(profile, opened=opened, closed=closed, route_profiles=route_profiles)
    try:
        streams = rebuilder.run(events)
        files.close_all()
        for final, temp in temps.items():
            check_replaceable(final)
            os.replace(temp, final)
        return list(streams.values())
    except BaseException:
        with contextlib.suppress(OSError):
            files.close_all()
        for temp in temps.values():
            with contextlib.suppress(OSError):
                os.unlink(temp)
        raise
