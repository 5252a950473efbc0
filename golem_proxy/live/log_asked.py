"""The MCP requests the live log has seen asked and not yet answered, by frame: an answer too
large to observe is a gap (`ObservationLost`) that the tap paired with the request it answers
by the request's frame number (``answers``), and its log line names that call, as the
recording and `show` do. Only the tool layer's requests are followed (a client's calls, few);
what is held is bounded whatever the session."""

from __future__ import annotations

from collections import OrderedDict
from typing import Optional

from golem_core.profiles import Profile
from golem_core.profiles.mcp import TOOLS_CALL, tool_name

from ..events import Direction, FrameSeen, ObservationLost

__all__ = ["ASKED_KEPT", "AskedCalls"]

ASKED_KEPT = 1024
"""The most requests held waiting: past that the oldest are forgotten (their gap, if one
comes, is then logged without the call)."""

_Key = tuple[int, Direction, int]


class AskedCalls:
    """Requests of the tool layer waiting for their answer: their method (and tool) by frame."""

    def __init__(self) -> None:
        self._asked: OrderedDict[_Key, str] = OrderedDict()

    @staticmethod
    def wants(frame: FrameSeen, profile: Profile) -> bool:
        """Whether ``frame`` is a request of the tool layer that waits for an answer."""
        return profile.tool_layer and frame.is_request and frame.expects_answer

    def note(self, frame: FrameSeen) -> None:
        """Hold ``frame`` (one `wants` took) until its answer, its connection's close, or the
        bound."""
        method = frame.method or "?"
        if method == TOOLS_CALL:
            method = f"{method} {tool_name(frame.message)}"
        self._asked[(frame.conn, frame.direction, frame.index)] = method
        if len(self._asked) > ASKED_KEPT:
            self._asked.popitem(last=False)

    def answered(self, conn: int, direction: Direction, index: int) -> None:
        """The request sent ``direction`` as frame ``index`` of ``conn`` has its answer."""
        self._asked.pop((conn, direction, index), None)

    def closed(self, conn: int) -> None:
        """``conn`` closed: none of its requests will be answered now."""
        for key in [key for key in self._asked if key[0] == conn]:
            del self._asked[key]

    def answering(self, gap: ObservationLost) -> Optional[str]:
        """The method (and tool) of the request ``gap`` answers, None when not known here."""
        if gap.answers is None:
            return None
        return self._asked.pop((gap.conn, gap.direction.reverse, gap.answers), None)
