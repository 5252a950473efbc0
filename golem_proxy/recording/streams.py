"""Rebuild the exact byte streams of a session from its events.

Per connection and direction, the bytes that crossed are the concatenation, in order, of every
frame (its payload in the profile's framing: the ``!I`` length header for GOLEM, the ``\\n``
terminator for NDJSON), every framing error's raw bytes and every discarded chunk. The decoder
accounts for every byte it is fed with exactly these events, so nothing else is needed.
Redacted frames can only be rebuilt with their redacted payload; such streams are not exact.

A request the proxy withheld on purpose (a fault: ``error``, ``reset`` before it, ``drop``) is
recorded because the client sent it; the fault line after it says so (``withheld``). The
streams the client *sent* keep it; the streams the receiving side *got* (``delivered``) leave it
out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Optional

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
)

__all__ = ["RebuiltStream", "rebuild_streams"]


@dataclass
class RebuiltStream:
    """The bytes of one direction of one connection, and how they were assembled."""

    conn: int
    route: str
    direction: Direction
    data: bytearray = field(default_factory=bytearray)
    frames: int = 0
    frame_errors: int = 0
    discarded_bytes: int = 0
    redacted_frames: int = 0
    withheld_frames: int = 0
    """Requests recorded but not forwarded (left out of a ``delivered`` stream)."""
    recorded_bytes: Optional[int] = None
    """What the proxy counted for this direction when the connection closed (None: no close)."""

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
        return len(self.data) == self.recorded_bytes

    def to_json(self) -> dict[str, Any]:
        return {
            "conn": self.conn,
            "route": self.route,
            "direction": self.direction.value,
            "file": self.filename,
            "bytes": len(self.data),
            "sha256": hashlib.sha256(self.data).hexdigest(),
            "frames": self.frames,
            "frame_errors": self.frame_errors,
            "discarded_bytes": self.discarded_bytes,
            "redacted_frames": self.redacted_frames,
            "withheld_frames": self.withheld_frames,
            "exact": self.exact,
            "recorded_bytes": self.recorded_bytes,
            "complete": self.complete,
        }


def rebuild_streams(
    events: Iterable[Event], profile: Profile, *, delivered: bool = False
) -> dict[tuple[int, Direction], RebuiltStream]:
    """Both streams of every connection in ``events``, keyed by ``(conn, direction)`` in the
    order connections appear. A connection that was opened has both, even when empty. With
    ``delivered``, the bytes the receiving side got: withheld requests left out."""
    streams: dict[tuple[int, Direction], RebuiltStream] = {}
    # Where the last request of each connection starts in its c2s stream, and its length.
    last_request: dict[int, tuple[int, int]] = {}

    def stream(conn: int, route: str, direction: Direction) -> RebuiltStream:
        key = (conn, direction)
        found = streams.get(key)
        if found is None:
            found = streams[key] = RebuiltStream(conn, route, direction)
        return found

    for event in events:
        if isinstance(event, ConnectionOpened):
            for direction in Direction:
                stream(event.conn, event.route, direction)
        elif isinstance(event, FrameSeen):
            target = stream(event.conn, event.route, event.direction)
            framed = profile.frame_payload(event.payload)
            if event.direction is Direction.C2S:
                last_request[event.conn] = (len(target.data), len(framed))
            target.data += framed
            target.frames += 1
            target.redacted_frames += bool(event.redacted)
        elif isinstance(event, FramingErrorSeen):
            target = stream(event.conn, event.route, event.direction)
            target.data += event.raw
            target.frame_errors += 1
        elif isinstance(event, BytesDiscarded):
            target = stream(event.conn, event.route, event.direction)
            target.data += event.raw
            target.discarded_bytes += len(event.raw)
        elif isinstance(event, FaultInjected):
            if event.withheld and event.direction is Direction.C2S:
                withheld = last_request.pop(event.conn, None)
                target = stream(event.conn, event.route, Direction.C2S)
                target.withheld_frames += 1
                if delivered and withheld is not None:
                    start, length = withheld
                    del target.data[start : start + length]
                    target.frames -= 1
        elif isinstance(event, ConnectionClosed):
            stream(event.conn, event.route, Direction.C2S).recorded_bytes = event.bytes_c2s
            stream(event.conn, event.route, Direction.S2C).recorded_bytes = event.bytes_s2c
    return streams
