"""A recording's requests as the views number them: the row number (`show`'s ``#``) of each
exchange, the requests that never got an answer, and the gaps in what was observed. Read by
`FlowTracker`, the one numbering every view uses, for the commands that take a recording's
exchanges another way (the replay scanner: ``diff``, ``replay``, ``verify``), so that a
``#N`` they print is the row `show`, `check` and ``resend N`` mean.

Only the client's requests of the plugin's layer are kept: replay stands in for the plugin,
and the scanner leaves out a server's own requests and another layer's routes (the MCP hop
of `golem-proxy mcp`)."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Optional

from ..events import Direction, ExchangeCompleted, GapReason, InterceptStep
from ..terminal import safe_text
from .flows import Flow
from .proxy_notes import step_names
from .reading_notes import reading_notes
from .tool_calls import is_tool_call, mcp_routes
from .trace import FlowReader, open_flows
from .two_layers import ToolCall

__all__ = [
    "GAPS_NAMED",
    "RequestGap",
    "RequestRows",
    "UnansweredRequest",
    "gaps_note",
    "read_request_rows",
]

GAPS_NAMED = 5
"""Gaps a note names one by one; it counts the rest."""

# Gaps that may hold a request (in its direction) or the answer to one (in the other): bytes
# forwarded that no one decoded. An eviction's gap is not one: the requests it let go are
# rows of their own (``evicted``).
_HIDING = (
    GapReason.BEHIND,
    GapReason.FRAME_TOO_LARGE,
    GapReason.OBSERVER_FAILED,
    GapReason.RESTARTED,
)
# The session's gaps (connection 0): nothing after them was observed on any connection.
_SESSION = (GapReason.STOPPED, GapReason.RESTARTED)


@dataclass(frozen=True)
class RequestGap:
    """A row of a gap in what was observed (`Flow.gap`)."""

    number: int
    route: str
    conn: int
    direction: Direction
    reason: GapReason
    status: str
    """As `show` says it: ``unobserved:frame-too-large``."""

    @property
    def of_session(self) -> bool:
        """Whether it is the session's (observation stopped or restarted): nothing was observed
        after it on any connection of any route, so it bears on every route."""
        return self.conn == 0 and self.reason in _SESSION

    @property
    def may_hide_requests(self) -> bool:
        """Whether a client's request may have crossed in it, unseen."""
        if self.conn == 0:
            return self.of_session
        return self.reason in _HIDING and self.direction is Direction.C2S

    def may_hide_answer_of(self, request: UnansweredRequest) -> bool:
        """Whether the answer to ``request`` (recorded before it) may have crossed in it."""
        if self.number < request.number:
            return False
        if self.conn == 0:
            # Only for a request still waiting when nothing more was observed: one settled
            # unanswered (its connection closed first) had no answer to hide.
            return self.of_session and request.pending
        # A client's request is answered s2c.
        return (
            self.conn == request.conn and self.reason in _HIDING and self.direction is Direction.S2C
        )


@dataclass
class UnansweredRequest:
    """A client's request that got no answer in the recording."""

    number: int
    route: str
    conn: int
    method: Optional[str]
    status: str
    """As `show` says it: ``unanswered``, ``unanswered (upstream closed)``, ``evicted``,
    ``pending``, …"""
    t: float
    pending: bool = False
    """Still waiting where the recording ends (a file cut short, or still being written)."""
    let_go: bool = False
    """Let go before its answer (``evicted``): any answer it had was not paired with it."""
    gap: Optional[RequestGap] = None
    """A later gap on its connection where its answer may have crossed unobserved."""
    answered_unobserved: bool = False
    """Its answer crossed in a frame too large to observe (`Flow.answered_in`: the tap read
    its id): answered, what it said not known."""
    undelivered: str = ""
    """Why it never reached the plugin (``upstream gone``: `Flow.never_delivered`, as the
    proxy decided where it forwarded it); empty when it did, as far as the proxy knows."""

    @property
    def row(self) -> int:
        return self.number

    @property
    def unobserved(self) -> bool:
        """Whether an answer may have come that the recording does not show."""
        return self.let_go or self.gap is not None


@dataclass
class RequestRows:
    """What `read_request_rows` found: each exchange's row number, in the order the exchanges
    were read (with the route and times that tell which it is), the requests never answered
    and the gaps, each in row order."""

    numbers: array = field(default_factory=lambda: array("q"))  # type: ignore[type-arg]
    routes: list[str] = field(default_factory=list)
    request_times: array = field(default_factory=lambda: array("d"))  # type: ignore[type-arg]
    response_times: array = field(default_factory=lambda: array("d"))  # type: ignore[type-arg]
    unanswered: list[UnansweredRequest] = field(default_factory=list)
    gaps: list[RequestGap] = field(default_factory=list)
    by_proxy: dict[int, str] = field(default_factory=dict)
    """The rows of exchanges the proxy answered itself, by row: a request it withheld and
    answered in the plugin's place (``--fault error``, an intercepted request answered by
    hand), with the step that did it (``fault error:code=TIMEOUT``): the plugin never got
    them, so a replay to a plugin does not send them."""
    acted: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """The rows the proxy itself acted on (`Flow.faults`), by row: the steps it took
    (``--fault error``, ``intercept:edit``: `step_names`), so that a difference there is
    said to be the proxy's doing."""

    def add_exchange(self, number: int, route: str, request_t: float, response_t: float) -> None:
        self.numbers.append(number)
        self.routes.append(route)
        self.request_times.append(request_t)
        self.response_times.append(response_t)

    def answered_after_all(self, request: UnansweredRequest) -> None:
        """``request`` was answered in what was read after it (a file still being written)."""
        self.unanswered.remove(request)


def read_request_rows(
    path: str, role: Optional[str] = None, *, tool_calls: Optional[list[ToolCall]] = None
) -> tuple[RequestRows, list[str]]:
    """The requests of the recording at ``path`` (`RequestRows`), and what reading it to its
    end noted (`reading_notes`, ``role`` naming the recording). ``tool_calls``, when given,
    gets the recording's MCP tool calls in the same reading (`collect`). Raises TraceError as
    `open_flows` and `FlowReader.flows` do."""
    with open_flows(path, read_once=True) as reader:
        return collect(reader, tool_calls), reading_notes(reader, role)


def collect(reader: FlowReader, tool_calls: Optional[list[ToolCall]] = None) -> RequestRows:
    """Read ``reader`` to its end, folding its events into rows as `FlowReader.flows` does,
    and keep what `RequestRows` holds. ``tool_calls``, when given, gets the MCP tool calls
    (`read_tool_calls`' calls, in its order) without the GOLEM flows each caused: what
    ``diff`` compares of them, so that it reads a recording's flows once (a second reading
    doubled its time) and holds no GOLEM flow of the whole recording."""
    other_layers = reader.header.route_profile_names()
    calls_on = mcp_routes(reader.route_profiles) if tool_calls is not None else frozenset()
    profile = reader.profile
    found = RequestRows()
    tracker = reader.tracker

    def keep(flows: Iterable[Flow]) -> None:
        for flow in flows:
            if flow.route in other_layers:
                if tool_calls is not None and flow.route in calls_on and is_tool_call(flow):
                    tool_calls.append(ToolCall(flow))
                continue
            gap, request = flow.gap, flow.request
            answered_by = _answered_by_proxy(flow)
            if answered_by is not None:
                found.by_proxy[flow.number] = answered_by
            steps = step_names(flow.faults)
            if steps:
                found.acted[flow.number] = tuple(steps)
            if gap is not None:
                status = flow.status(profile)
                found.gaps.append(
                    RequestGap(
                        flow.number, flow.route, flow.conn, gap.direction, gap.reason, status
                    )
                )
            elif (
                request is not None
                and flow.response is None
                and not flow.unanswerable
                and request.direction is Direction.C2S
            ):
                found.unanswered.append(
                    UnansweredRequest(
                        flow.number,
                        flow.route,
                        flow.conn,
                        request.method,
                        flow.status(profile),
                        request.t,
                        flow.pending,
                        flow.let_go,
                        answered_unobserved=flow.answered_in is not None,
                        undelivered=flow.undelivered if flow.never_delivered else "",
                    )
                )

    for event in reader.events():
        flow = tracker.apply(event)
        if (
            isinstance(event, ExchangeCompleted)
            and flow is not None
            and event.request.direction is Direction.C2S
            and event.route not in other_layers
        ):
            found.add_exchange(flow.number, event.route, event.request.t, event.response.t)
        keep(tracker.take_settled(flow))
    keep(tracker.take_rest())
    found.unanswered.sort(key=_row)
    found.gaps.sort(key=_row)
    _place_answer_gaps(found)
    return found


def _answered_by_proxy(flow: Flow) -> Optional[str]:
    """The step of the proxy's that withheld ``flow``'s request when the proxy answered it
    (the flow has an answer the plugin never sent); None otherwise."""
    step = flow.withholding
    if flow.request is None or flow.response is None or step is None:
        return None
    named = step.fault if isinstance(step, InterceptStep) else f"fault {step.fault}"
    return safe_text(named, 80)


def _row(row: UnansweredRequest | RequestGap) -> int:
    return row.number


def _place_answer_gaps(found: RequestRows) -> None:
    """Name, on each request never answered, the first later gap its answer may be in."""
    if not found.gaps:
        return
    numbers = [gap.number for gap in found.gaps]
    for request in found.unanswered:
        after = bisect.bisect_right(numbers, request.number)
        request.gap = next(
            (gap for gap in found.gaps[after:] if gap.may_hide_answer_of(request)), None
        )


def gaps_note(found: RequestRows, path: str, role: Optional[str] = None) -> Optional[str]:
    """One line saying where the recording has gaps in what was observed, so a comparison with
    it is known to be partial; None when it has none."""
    gaps = found.gaps
    if not gaps:
        return None
    named = ", ".join(f"#{gap.number} {safe_text(gap.status)}" for gap in gaps[:GAPS_NAMED])
    more = len(gaps) - GAPS_NAMED
    if more > 0:
        named += f" and {more} more"
    count = "1 gap" if len(gaps) == 1 else f"{len(gaps)} gaps"
    name = f"{role}, {safe_text(path)}" if role else safe_text(path)
    return (
        f"note: {name}: {count} in what was observed ({named}): what crossed there is not "
        "in the recording, so the comparison is partial"
    )
