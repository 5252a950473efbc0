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

The notice of the answer gives the new row's latency, once its answer is folded in: the one
the proxy measured on the wire, as for every row (a request sent as a client of the proxy,
as the TUI of an observing process sends it, took longer from the sender's side: two more
hops). The sender's own measure is said only where no row comes of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from ..analysis.flows import Flow
from ..terminal import format_latency

__all__ = ["AnswerNotice", "ResentRows"]

MOST_AWAITED = 16
"""Requests sent again whose row has not come yet that are looked for: one sent through a
route whose tap failed never comes, and is not looked for forever."""
FARTHEST = 5_000
"""Flows looked through for one request's row before it is given up."""


@dataclass(frozen=True)
class AnswerNotice:
    """What the notice of an answer says after ``flow 5 sent again as #12``: its status and
    a latency, the new row's where it is known, else ``measured``, the sender's."""

    status: str
    measured: float

    def text(self, latency: Optional[float] = None) -> str:
        """``: ok in 3.1 ms (D: the difference)``, in ``latency`` (None: ``measured``)."""
        shown = self.measured if latency is None else latency
        return f": {self.status} in {format_latency(shown)} (D: the difference)"


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
    notice: Optional[AnswerNotice] = None
    """What to say of the answer, after ``flow 5 sent again as #12`` (None: said already,
    without the row, which was long in coming)."""
    key: str = "r"
    """The key it was sent again by: ``r`` as recorded, ``E`` edited."""


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
        self._unsaid: list[tuple[int, Flow, AnswerNotice]] = []
        """Rows found before their answer was folded in, with their origin and the notice
        that waits for the row's latency."""

    @property
    def pending(self) -> bool:
        """Whether a row is looked for, or a notice waits for its row's answer."""
        return bool(self.awaited or self._unsaid)

    def expect(
        self,
        origin: int,
        after: int,
        route: str,
        method: str,
        payload: bytes,
        request_id: Any,
        notice: Optional[AnswerNotice] = None,
        key: str = "r",
    ) -> None:
        """The request of flow ``origin`` was sent again on ``route`` as ``payload`` (its id
        ``request_id``) when the newest flow was numbered ``after``: its row is looked for
        in the flows that come (`link`); ``notice``, what to say of the answer once the row
        is found and answered; ``key``, the key that sent it (``r``, ``E``)."""
        self.awaited.append(
            _Awaited(origin, after, route, method, payload, request_id, 0, notice, key)
        )
        del self.awaited[:-MOST_AWAITED]

    def link(self, flows: Sequence[Flow]) -> list[tuple[int, int, str]]:
        """Look for the awaited rows among the newest of ``flows`` (in number order). Returns
        the links found now, and the rows found before whose answer came now, as (origin,
        row, notice): the notice, with the row's latency, once it is answered ("" before, or
        when it was said already)."""
        found: list[tuple[int, int, str]] = []
        for unsaid in list(self._unsaid):
            origin, flow, notice = unsaid
            if flow.response is not None:
                self._unsaid.remove(unsaid)
                found.append((origin, flow.number, notice.text(flow.latency)))
        if not self.awaited or not flows:
            return found
        newest = flows[-1].number
        for awaited in list(self.awaited):
            row = self._find(awaited, flows)
            if row is not None:
                self.awaited.remove(awaited)
                self.origin[row.number] = awaited.origin
                self.keys[row.number] = awaited.key
                self.copies.setdefault(awaited.origin, []).append(row.number)
                found.append((awaited.origin, row.number, self._notice(awaited, row)))
                continue
            awaited.looked += max(0, newest - awaited.after)
            awaited.after = max(awaited.after, newest)
            if awaited.looked > FARTHEST:
                self.awaited.remove(awaited)
        return found

    def _notice(self, awaited: _Awaited, row: Flow) -> str:
        """The notice of ``awaited``'s answer with ``row``'s latency; "" when said already,
        or until ``row``'s answer is folded in (its events may come in a later batch)."""
        if awaited.notice is None:
            return ""
        if row.response is None:
            self._unsaid.append((awaited.origin, row, awaited.notice))
            del self._unsaid[:-MOST_AWAITED]
            return ""
        return awaited.notice.text(row.latency)

    @staticmethod
    def _find(awaited: _Awaited, flows: Sequence[Flow]) -> Optional[Flow]:
        """The first flow newer than ``awaited.after`` that is its request."""
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
                return flow
            if getattr(request.message, "id", None) == awaited.request_id:
                return flow
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
        """The notice still unsaid of a request of flow ``origin`` whose row, or whose row's
        answer, has not come, to be said now (it is then said), in the sender's latency:
        ``: ok in 3.1 ms …``, `` as #12: ok in …``; None when none waits."""
        for awaited in self.awaited:
            if awaited.origin == origin and awaited.notice is not None:
                notice, awaited.notice = awaited.notice, None
                return notice.text()
        for unsaid in self._unsaid:
            if unsaid[0] == origin:
                self._unsaid.remove(unsaid)
                return f" as #{unsaid[1].number}{unsaid[2].text()}"
        return None
