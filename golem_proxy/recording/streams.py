"""Rebuild the exact byte streams of a session from its events.

Per connection and direction, the bytes that crossed are the concatenation, in order, of every
frame (its payload in the profile's framing: the ``!I`` length header for GOLEM, the ``\\n``
terminator for NDJSON), every framing error's raw bytes and every discarded chunk. The decoder
accounts for every byte it is fed with exactly these events, so nothing else is needed.
Redacted frames can only be rebuilt with their redacted payload; such streams are not exact.
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
            "exact": self.exact,
            "recorded_bytes": self.recorded_bytes,
            "complete": self.complete,
        }


def rebuild_streams(
    events: Iterable[Event], profile: Profile
) -> dict[tuple[int, Direction], RebuiltStream]:
    """Both streams of every connection in ``events``, keyed by ``(conn, direction)`` in the
    order connections appear. A connection that was opened has both, even when empty."""
    streams: dict[tuple[int, Direction], RebuiltStream] = {}

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
            target.data += profile.frame_payload(event.payload)
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
        elif isinstance(event, ConnectionClosed):
            stream(event.conn, event.route, Direction.C2S).recorded_bytes = event.bytes_c2s
            stream(event.conn, event.route, Direction.S2C).recorded_bytes = event.bytes_s2c
    return streams
