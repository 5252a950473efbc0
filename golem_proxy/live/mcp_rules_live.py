"""The MCP layer's rules decided while `golem-proxy mcp` runs, not only by `check` afterwards.

The rules of a recording's MCP layer (`analysis.mcp_audit.McpAuditor`: the session's order, a
``tools/call``'s arguments against the recorded ``tools/list``, arguments a tool does not
declare, a result's content, what the server wrote to stdout that is no JSON-RPC, a call whose
result is another exchange's answer) were `check`'s alone: every other view (the live log,
`show`'s ⚠ column and ``~violation`` filter, ``show --json``, `query`, the TUI, the wrapper's
closing count) said nothing of them. Here the same auditor follows the hop's events as they
are published, and what it finds is published as `ViolationSeen`, on the frame it names, so
the recording carries it like any other violation; `check` finds it again and counts it once
(`audit.audit` matches a re-check with what was recorded).

Only what the hop settles is followed: exchanges as they complete, and frames that will be
part of none (notifications, lines of the server's that are no JSON-RPC). What a rule finds
about an earlier exchange is `check`'s to say: a ``tools/call`` made before the tools were
listed (the Python SDK's client lists them after its first call) is checked once the listing
comes, when the call's row has been read and shown; a violation recorded then would reach no
view that reads the recording as it goes. Neither does a request never answered.

After the observing process is replaced, the new one learns from the recording what the one
that died knew (`take_up`, recording/mcp_session_scan.py: each session's ``initialize`` sent
and answered, the tools of the last ``tools/list``), so that its rules go on where they were.
What the recording does not hold within the scan's bound, or what may have crossed while no
process observed (an ``initialize`` not answered before the restart, a session opened in the
gap), leaves the rules that need it silent for that session (`gap`): ``initialize-first``
until an ``initialize`` is seen, the arguments until the tools are listed. Ids used before
the restart are not known: one used again after it is flagged by `check` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from golem_core.mcp_rules import SessionOrder

from ..analysis.flow import Flow
from ..events import Event, ExchangeCompleted, FrameSeen, ViolationSeen
from ..recording.mcp_session_scan import ANSWERED, NEVER, SENT, McpKnown

if TYPE_CHECKING:
    from ..analysis.mcp_audit import McpAuditor

__all__ = ["McpRulesLive"]


class McpRulesLive:
    """Follows the MCP hop's events (`follow`), returning the violations they show."""

    def __init__(self, route: str) -> None:
        # jsonschema is imported only where there is an MCP layer to check.
        from ..analysis.mcp_audit import McpAuditor

        self.route = route
        self._auditor: McpAuditor = McpAuditor((route,), live=True)
        self._numbers = 0

    def take_up(self, known: McpKnown) -> None:
        """Go on from what the recording holds of the sessions taken over after a restart
        (`mcp_session_scan.mcp_known`): each session's start, the tools listed."""
        for conn, start in known.sessions.items():
            if start.initialize == ANSWERED:
                order = SessionOrder(initialize_sent=True, initialized_at=start.answered_at)
            elif start.initialize in (SENT, NEVER):
                # Its answer (or the request itself) may yet come in flight, or have crossed
                # unseen: `gap` says so when a direction resumes with bytes unobserved.
                order = SessionOrder(initialize_sent=start.initialize == SENT)
            else:
                order = SessionOrder(known=False)
            self._auditor.take_up(conn, order)
        if known.tools is not None:
            self._auditor.knew_tools(known.tools)

    def gap(self, conn: int) -> None:
        """Bytes of ``conn``'s session may have crossed while no process observed: what its
        ``initialize`` did then is not known, unless it was answered before."""
        self._auditor.gap(conn)

    def follow(self, event: Event) -> list[ViolationSeen]:
        """The violations ``event`` (published on the hop, after `ToolCallTracker.watch`)
        settles about its own exchange or frame, each on the frame it names."""
        flow = self._flow_of(event)
        if flow is None:
            return []
        found: list[ViolationSeen] = []
        for finding in self._auditor.feed([flow]):
            seen = _frame_of(flow, finding.direction) if finding.flow == flow.number else None
            if seen is not None:
                found.append(
                    ViolationSeen(
                        conn=seen.conn,
                        route=seen.route,
                        direction=seen.direction,
                        frame_index=seen.index,
                        t=seen.t,
                        violation=finding.violation,
                    )
                )
        return found

    def _flow_of(self, event: Event) -> Optional[Flow]:
        """A flow of what ``event`` settles, numbered in order; None when it settles nothing
        (a request waiting for its answer, an answer that will come in its exchange)."""
        if isinstance(event, ExchangeCompleted):
            request, response = event.request, event.response
        elif isinstance(event, FrameSeen):
            if event.expects_answer or event.answers is not None or event.orphan:
                return None
            request, response = event, None
        else:
            return None
        if request.route != self.route:
            return None
        self._numbers += 1
        return Flow(self._numbers, request.conn, request.route, request, response)


def _frame_of(flow: Flow, direction: Optional[str]) -> Optional[FrameSeen]:
    """The frame of ``flow`` that travelled ``direction``."""
    for frame in (flow.request, flow.response):
        if frame is not None and frame.direction.value == direction:
            return frame
    return None
