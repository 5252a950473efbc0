"""Which row a request sent again (`r`, `E`) came back as, and which row it was sent from.

A request sent again through the live proxy comes back as a new flow of the session, on a
connection of its own, in the order it was sent: the table keeps rows in the order they came
(their numbers), so the new row is at the end, not beside the original. What links the two is
said instead: the new row's detail names the row it was sent from, the original's the rows it
was sent again as, and the notice of the answer names the new row.

The proxy publishes the new flow's events as they cross the wire; the TUI takes them in its
next batch, before or after the sending thread has the answer. So the answer registers what
to look for (`expect`: the route, the method, the payload sent with its fresh id), and each
batch looks for it among the flows that came since the request was sent (`link`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from ..analysis.flows import Flow

__all__ = ["ResentRows"]

MOST_AWAITED = 16
"""Requests sent again whose row has not come yet that are looked for: one sent through a
route whose tap failed never comes, and is not looked for forever."""
FARTHEST = 5_000
"""Flows looked through for one request's row before it is given up."""


@dataclass
class _Awaited:
    origin: int
    after: int
    """The newest flow's number when the request was sent (the row is newer); once looked
    through, the newest flow looked at."""
    route: str
    method: str
    payload: bytes
    """The request as sent, with its fresh id."""
    request_id: Any
    looked: int = 0
    notice: str = ""
    key: str = "r"
    """The key it was sent again by: ``r`` as recorded, ``E`` edited."""
    """The end of what to say of the answer, after ``flow 5 sent again as #12`` ("": said
    already, without the row, which was long in coming)."""


class ResentRows:
    """The links between rows sent again and their originals, by flow number."""

    def __init__(self) -> None:
        self.origin: dict[int, int] = {}
        """By the number of a flow that is a request sent again, the flow it was sent from."""
        self.copies: dict[int, list[int]] = {}
        """By a flow's number, the flows its request was sent again as."""
        self.awaited: list[_Awaited] = []
        self.keys: dict[int, str] = {}
        """By the number of a flow that is a request sent again, the key that sent it."""

    def expect(
        self,
        origin: int,
        after: int,
        route: str,
        method: str,
        payload: bytes,
        request_id: Any,
        notice: str = "",
        key: str = "r",
    ) -> None:
        """The request of flow ``origin`` was sent again on ``route`` as ``payload`` (its id
        ``request_id``) when the newest flow was numbered ``after``: its row is looked for
        in the flows that come (`link`); ``notice``, the end of what to say of the answer once
        the row is found (``: ok in 3.1ms``); ``key``, the key that sent it (``r``, ``E``)."""
        self.awaited.append(
            _Awaited(origin, after, route, method, payload, request_id, 0, notice, key)
        )
        del self.awaited[:-MOST_AWAITED]

    def link(self, flows: Sequence[Flow]) -> list[tuple[int, int, str]]:
        """Look for the awaited rows among the newest of ``flows`` (in number order). Returns
        the links found now as (origin, new row, notice)."""
        found: list[tuple[int, int, str]] = []
        if not self.awaited or not flows:
            return found
        newest = flows[-1].number
        for awaited in list(self.awaited):
            row = self._find(awaited, flows)
            if row is not None:
                self.awaited.remove(awaited)
                self.origin[row] = awaited.origin
                self.keys[row] = awaited.key
                self.copies.setdefault(awaited.origin, []).append(row)
                found.append((awaited.origin, row, awaited.notice))
                continue
            awaited.looked += max(0, newest - awaited.after)
            awaited.after = max(awaited.after, newest)
            if awaited.looked > FARTHEST:
                self.awaited.remove(awaited)
        return found

    @staticmethod
    def _find(awaited: _Awaited, flows: Sequence[Flow]) -> Optional[int]:
        """The number of the first flow newer than ``awaited.after`` that is its request."""
        newer: list[Flow] = []
        for flow in reversed(flows):  # the newest first: only those since it was sent
            if flow.number <= awaited.after:
                break
            newer.append(flow)
        for flow in reversed(newer):
            request = flow.request
            if request is None or flow.route != awaited.route or flow.method != awaited.method:
                continue
            # The bytes sent, as the proxy saw them; or, redacted or let go from memory, the
            # fresh id they carried (a UUID for GOLEM).
            if request.payload == awaited.payload:
                return flow.number
            if getattr(request.message, "id", None) == awaited.request_id:
                return flow.number
        return None

    def note(self, number: int) -> str:
        """What the detail of flow ``number`` says of the links: ``sent again from #5 (r)``,
        ``sent again as #12, #14``; "" for a flow with none."""
        parts = []
        origin = self.origin.get(number)
        if origin is not None:
            parts.append(f"sent again from #{origin} ({self.keys.get(number, 'r')})")
        copies = self.copies.get(number)
        if copies:
            parts.append("sent again as " + ", ".join(f"#{row}" for row in copies))
        return "; ".join(parts)

    def waiting_notice(self, origin: int) -> Optional[str]:
        """The notice still unsaid of a request of flow ``origin`` whose row has not come,
        to be said now without it (it is then said); None when none waits."""
        for awaited in self.awaited:
            if awaited.origin == origin and awaited.notice:
                notice, awaited.notice = awaited.notice, ""
                return notice
        return None
