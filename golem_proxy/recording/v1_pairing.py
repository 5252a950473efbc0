"""Version-1 recordings, paired once as they are read.

A version-1 frame line does not say what the tap decided about it (whether a request waits
for an answer, which request a response answers, whether it is an orphan). This adapter
decides it the way the tap did, with the same `golem_core.pairing.Correlator`, as the frames
go by, and returns each frame with its fields filled in: after it, a version-1 file reads
exactly like a version-2 one, and no view pairs anything. Memory is what the tap held: the
requests in flight, forgotten when their connection closes.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from golem_core.pairing import Correlator
from golem_core.profiles import Profile

from ..events import ConnectionClosed, Direction, Event, FrameSeen, GapReason, ObservationLost

__all__ = ["V1Pairing"]

_ConnKey = tuple[int, Direction]


class V1Pairing:
    """Fills the pairing fields of a version-1 recording's frames, in file order."""

    def __init__(self, profile: Profile, routes: Optional[dict[str, Profile]] = None) -> None:
        self.profile = profile
        self.routes = routes or {}
        # One correlator per connection and direction requests travel, as in the tap; the
        # context is the request frame's index.
        self._correlators: dict[_ConnKey, Correlator[int]] = {}
        # Frames too large to observe: the next unpaired answer is theirs, not an orphan.
        self._unseen: dict[_ConnKey, int] = {}

    def __len__(self) -> int:
        """Requests held now, waiting for their answer."""
        return sum(len(c) for c in self._correlators.values())

    def frame(self, frame: FrameSeen) -> FrameSeen:
        """``frame`` with ``expects_answer``, ``answers`` and ``orphan`` as the tap decided."""
        profile = self.routes.get(frame.route, self.profile)
        message = frame.message
        if frame.is_request:
            expects = profile.expects_response(message)
            if expects:
                self._correlator(frame.conn, frame.direction, profile).add_request(
                    message, frame.index
                )
            return dataclasses.replace(frame, expects_answer=expects) if expects else frame
        if not profile.is_reply(message):  # an MCP server's stray line: no reply, no orphan
            return frame
        asker = (frame.conn, frame.direction.reverse)
        correlator = self._correlators.get(asker)
        pending = correlator.match_response(message) if correlator is not None else None
        if pending is not None:
            return dataclasses.replace(frame, answers=pending.context)
        if self._unseen.get(asker):
            self._unseen[asker] -= 1
            return frame
        return dataclasses.replace(frame, orphan=True)

    def other(self, event: Event) -> None:
        """Follow what else changes the pairing: frames too large to observe, requests the
        tap let go, connections closing (their requests are forgotten)."""
        if isinstance(event, ObservationLost):
            key = (event.conn, event.direction)
            if event.reason is GapReason.FRAME_TOO_LARGE:
                profile = self.routes.get(event.route, self.profile)
                if event.direction is Direction.C2S or profile.servers_send_requests:
                    self._unseen[key] = self._unseen.get(key, 0) + 1
            elif event.reason is GapReason.EVICTED and key in self._correlators:
                self._correlators[key].evict_oldest(event.size)
            elif event.reason is GapReason.OBSERVER_FAILED:
                self._forget(event.conn)
        elif isinstance(event, ConnectionClosed):
            self._forget(event.conn)

    def _correlator(self, conn: int, direction: Direction, profile: Profile) -> Correlator[int]:
        key = (conn, direction)
        correlator = self._correlators.get(key)
        if correlator is None:
            correlator = self._correlators[key] = Correlator(profile)
        return correlator

    def _forget(self, conn: int) -> None:
        for direction in Direction:
            self._correlators.pop((conn, direction), None)
            self._unseen.pop((conn, direction), None)
