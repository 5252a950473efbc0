"""What a recording says the MCP server met on its GOLEM routes during each tool call while
the plugin was down, so that `mcp-verify`'s stand-in can make a new build meet the same.

A plugin outage leaves no exchange to replay, only what the proxy decided and recorded:

* a GOLEM connection the proxy accepted and reset because the upstream refused it (or did
  not answer), nothing crossed: its ``close`` line names the tool call that opened it
  (``tool_calls``, decided by the session's attribution);
* a call made while the route did not listen: its request frame names the route
  (``routes_down``, decided by the session's tracker in wire order with the route's
  ``upstream`` lines; where any call of the recording carries it, a call without it was made
  with every route listening); in a recording with no call marked (made before that member,
  or with no outage at a call's start), the ``upstream`` lines' times (from ``down`` to
  ``back``) say it. The server's connection attempts then were refused
  by the system and never reached the proxy;
* the route's connections opened and closed: a call that began with none open, the route
  down since the call before (the plugin's going away had closed the server's), met a dead
  connection, or none;
* a connection open when a call began that the plugin had closed while it sat idle: the
  proxy held that close until the server wrote again, and refused those bytes with a reset
  (its ``close`` line's ``gone_before_write``, decided by the forwarding side), so the call
  that wrote them (the one the connection's last request frame names alone) met a dead
  connection however long the plugin had been back;
* a connection the plugin ended while it owed a call answers (an ``end`` line, ``s2c``,
  naming the requests it never answered, decided by the tap): the server read the end of
  the stream instead of the answer, and what it wrote on that connection afterwards was
  refused with a reset (the connection's ``close``, abnormal, after request frames later than
  the end) or not (a clean close after them);
* a connection the proxy itself closed once it sat idle for ``--idle-timeout`` (its
  ``close`` line's reason, `closed_by_proxy`): no outage, but the server's next call found it
  closed, so the stand-in closes the route's open connections as the first tool call after
  that close begins.

A request frame counts as having reached the plugin unless the recording says otherwise: one
marked ``undelivered`` (decided by the forwarding side: its write failed, or the plugin had
closed and refused it with a reset), or, in files written before that mark, one
written to a connection the plugin had left (``gone_before_write``: no request waited when it
left, or its ``end`` line would say so, so every one unanswered then was refused), or after
the plugin's ``end`` on a connection whose close says the bytes were refused.

`RouteHistories` follows those lines as the recording is read (`read_script` hands it every
event off the MCP hop, in the one pass that reads the client's side) and turns them into one
`RouteOutage` per tool call and route, keyed by the call's request frame index
(`ClientStep.index`): the stand-in follows it, nothing is guessed again from the bytes of a
new run.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Optional

from ..analysis.proxy_closes import closed_by_proxy
from ..events import (
    UPSTREAM_UNREACHABLE,
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    FrameSeen,
    StreamEnded,
    ToolCallRef,
    UpstreamStatus,
)
from .mcp_script import ClientStep, McpScript

__all__ = ["OutagePlan", "PluginEnd", "RouteHistories", "RouteOutage", "outage_plan"]

CallKey = tuple[int, int]
"""A tool call as a ``tool_calls`` member names it: its MCP connection and request index."""


@dataclass(frozen=True)
class PluginEnd:
    """The plugin ended its side of a connection while it owed a call the answers to
    ``requests`` (an ``end`` line naming them): the server read the end of the stream."""

    requests: tuple[bytes, ...]
    """The recorded payloads of the call's requests it never answered there, in order: the
    stand-in answers none of them, and ends its side once it has received them all."""
    reset_after: bool = True
    """The server's later bytes on that connection are refused with a reset, as the proxy
    refused them (its close abnormal); False only where the recording shows request frames
    written after the end and a clean close (they were taken, never answered)."""


@dataclass(frozen=True)
class RouteOutage:
    """What one GOLEM route did to the server during one tool call, as recorded."""

    drop_open: bool = False
    """No connection of the route was open when the call began and the route went down
    since the call before: the plugin's going away closed the server's, so the stand-in
    closes any it has (never otherwise: a build that keeps its connection is left alone)."""
    resets: int = 0
    """Connections the server opened during the call that the proxy accepted and reset,
    nothing crossed (the upstream refused them): the stand-in resets as many, in order."""
    refused: bool = False
    """The route did not listen for the rest of the call (it was down, from an ``upstream
    down`` line to ``back``, and nothing of the call reached the plugin on it): the stand-in
    stops listening, so the server's connection attempts are refused."""
    reset_open: bool = False
    """A connection the call found open was dead: the plugin had closed it while it sat idle,
    and the call's bytes on it were refused with a reset (its ``close`` line's
    ``gone_before_write``; the connection's last request frame names the call): the stand-in
    resets the route's open connections as the call begins (it cannot tell the server's
    connections apart), so the server's next write meets the same reset."""
    ends: tuple[PluginEnd, ...] = ()
    """Where the plugin went away in the middle of the call, owing it answers (``end``
    lines): the stand-in leaves those requests unanswered and ends its side."""
    idle_closed: int = 0
    """Connections of the route the proxy closed for ``--idle-timeout`` since the call
    before began (no outage: the plugin was there): the stand-in closes the route's open
    connections as the call begins, as the proxy closed them, so the server's next write
    meets a closed connection, as it did."""

    @property
    def is_outage(self) -> bool:
        """The plugin was unreachable on this route during the call."""
        return self.resets > 0 or self.refused or self.reset_open or bool(self.ends)


NO_OUTAGE = RouteOutage()


@dataclass
class OutagePlan:
    """Per tool call (its request frame index on the MCP hop), per GOLEM route."""

    calls: dict[int, dict[str, RouteOutage]] = field(default_factory=dict)

    def for_step(self, index: int) -> Mapping[str, RouteOutage]:
        """The routes' plan for the call whose request frame is ``index`` (empty: every
        route listens and serves)."""
        return self.calls.get(index, {})

    def outages(self) -> list[tuple[int, str, RouteOutage]]:
        """(call index, route, outage) for every call during which a route was down."""
        return [
            (index, route, outage)
            for index, routes in self.calls.items()
            for route, outage in routes.items()
            if outage.is_outage
        ]


@dataclass
class _Connection:
    """What one GOLEM connection's request frames say until its close."""

    unsettled: list[CallKey] = field(default_factory=list)
    """Calls of the request frames since the plugin last spoke: whether they reached it waits
    on what follows (an answer, the plugin's end, the close)."""
    waiting: dict[int, tuple[bytes, Optional[CallKey]]] = field(default_factory=dict)
    """Requests not answered yet, by frame number: their payload and call."""
    ended: Optional[dict[CallKey, list[bytes]]] = None
    """Once the plugin ended its side (an ``end`` line): the requests it left unanswered,
    by call."""
    after_end: int = 0
    """Request frames the client wrote after that end."""


@dataclass
class _RouteHistory:
    """What one GOLEM route's lines say, in session time."""

    opened: dict[int, float] = field(default_factory=dict)
    closed: dict[int, float] = field(default_factory=dict)
    unreachable: set[int] = field(default_factory=set)
    """Open connections already counted as refused by what their client's bytes say
    (`UPSTREAM_UNREACHABLE`)."""
    down: list[tuple[float, float]] = field(default_factory=list)
    """[down, back) spans; an outage with no ``back`` runs to the end."""
    _down_since: Optional[float] = None
    _opens: list[float] = field(default_factory=list)
    _spans: list[tuple[float, float]] = field(default_factory=list)
    _went: list[float] = field(default_factory=list)
    _closes: list[float] = field(default_factory=list)
    idle_closes: list[float] = field(default_factory=list)
    """When the proxy closed one of the route's connections for ``--idle-timeout``."""
    last_call: dict[int, Optional[CallKey]] = field(default_factory=dict)
    """Per connection, the call its last request frame names alone (None: none, several)."""
    dead: dict[CallKey, float] = field(default_factory=dict)
    """Calls whose bytes met a connection the plugin had left (``gone_before_write``): when
    that connection was opened."""
    resets: dict[CallKey, int] = field(default_factory=lambda: defaultdict(int))
    """Call → connections accepted and closed with nothing crossed, naming it alone."""
    reached: set[CallKey] = field(default_factory=set)
    """Calls that a request frame on this route names alone, the frame taken by the plugin
    (not refused on a connection it had left): the plugin was reached."""
    ends: dict[CallKey, list[PluginEnd]] = field(default_factory=lambda: defaultdict(list))
    """Call → where the plugin ended a connection owing it answers."""
    live: dict[int, _Connection] = field(default_factory=lambda: defaultdict(_Connection))
    """The connections not closed yet, by number."""

    def request(self, event: FrameSeen, call: Optional[CallKey]) -> None:
        """A frame the client wrote, naming ``call`` alone (or None)."""
        connection = self.live[event.conn]
        if call is not None and not event.undelivered:
            # One the proxy marked never delivered did not reach the plugin, whatever follows.
            connection.unsettled.append(call)
        if event.expects_answer:
            connection.waiting[event.index] = (event.payload, call)
        if connection.ended is not None:
            connection.after_end += 1

    def plugin_spoke(self, event: FrameSeen) -> None:
        """A frame of the plugin's: what the client wrote before it reached the plugin."""
        connection = self.live.get(event.conn)
        if connection is None:
            return
        self.reached.update(connection.unsettled)
        connection.unsettled.clear()
        if event.answers is not None:
            connection.waiting.pop(event.answers, None)

    def plugin_ended(self, event: StreamEnded) -> None:
        """The plugin ended its side owing ``event.unanswered``: what the client wrote before
        reached it (it was there), what it writes after waits on the close."""
        connection = self.live[event.conn]
        self.reached.update(connection.unsettled)
        connection.unsettled.clear()
        named: dict[CallKey, list[bytes]] = defaultdict(list)
        for index in event.unanswered:
            payload, call = connection.waiting.pop(index, (b"", None))
            if call is not None:
                named[call].append(payload)
        connection.ended = dict(named)

    def close(self, conn: int, event: Optional[ConnectionClosed]) -> None:
        """The connection's close (None: the recording ended with it open)."""
        connection = self.live.pop(conn, None)
        if connection is None:
            return
        refused = event is not None and event.abnormal
        if connection.ended is not None:
            # What the client wrote after the plugin's end met a reset (an abnormal close),
            # or was taken and never answered (a clean one); with nothing written after
            # it, the recording cannot say, and a plugin gone away resets.
            reset_after = refused or not connection.after_end
            for call, payloads in connection.ended.items():
                self.ends[call].append(PluginEnd(tuple(payloads), reset_after))
            if refused:
                return  # the requests after the end never reached the plugin
        elif event is not None and event.gone_before_write:
            return  # no request waited when the plugin left: each one unanswered was refused
        self.reached.update(connection.unsettled)

    def finish(self) -> None:
        """Close, as the recording leaves them, the connections still open at its end."""
        for conn in list(self.live):
            self.close(conn, None)

    def open_at(self, t: float) -> int:
        """How many of the route's connections were open at ``t``: opened before it and
        not closed before it. Logarithmic in the connections (`settle` first): a recording of
        many calls and many connections costs no product of the two."""
        opened = bisect.bisect_left(self._opens, t)
        closed = bisect.bisect_left(self._closes, t)
        return opened - closed

    def settle(self) -> None:
        """Sort the times `open_at` searches, once every line is read. A close counts only
        for a connection whose open was read (a restart's take-up may write a close alone),
        and never before that open (a hostile file's close ahead of its open: never open)."""
        self._spans = sorted(self.spans())
        self._went = [went for went, _ in self._spans]
        self._opens = sorted(self.opened.values())
        self._closes = sorted(
            max(t, self.opened[conn]) for conn, t in self.closed.items() if conn in self.opened
        )
        self.idle_closes.sort()

    def idle_closed_within(self, start: float, end: float) -> int:
        """How many of the route's connections the proxy closed for ``--idle-timeout`` after
        ``start`` and at or before ``end`` (`settle` first)."""
        return bisect.bisect_right(self.idle_closes, end) - bisect.bisect_right(
            self.idle_closes, start
        )

    def upstream(self, event: UpstreamStatus) -> None:
        if not event.up and self._down_since is None:
            self._down_since = event.t
        elif event.up and self._down_since is not None:
            self.down.append((self._down_since, event.t))
            self._down_since = None

    def spans(self) -> list[tuple[float, float]]:
        if self._down_since is None:
            return self.down
        return [*self.down, (self._down_since, math.inf)]

    def down_at(self, t: float) -> bool:
        """The route did not listen at ``t`` (the ``upstream`` lines' spans; `settle` first)."""
        at = bisect.bisect_right(self._went, t) - 1
        return at >= 0 and t < self._spans[at][1]

    def down_within(self, start: float, end: float) -> bool:
        """The route was down at some moment between ``start`` and ``end`` (`settle`
        first): the span that began last before ``end`` is the only one that may reach
        ``start``, as the spans follow one another."""
        at = bisect.bisect_right(self._went, end) - 1
        return at >= 0 and self._spans[at][1] >= start

    def went_down_within(self, start: float, end: float) -> bool:
        """The route went down between ``start`` and ``end`` (`settle` first)."""
        at = bisect.bisect_left(self._went, start)
        return at < len(self._went) and self._went[at] <= end


class RouteHistories:
    """What the recording's GOLEM routes say, followed event by event (`add`), then read
    for a script's tool calls (`plan`)."""

    def __init__(self) -> None:
        self.routes: dict[str, _RouteHistory] = defaultdict(_RouteHistory)

    def add(self, event: Event) -> None:
        """Follow one event of a GOLEM route (any other is passed over)."""
        if isinstance(event, ConnectionOpened):
            self.routes[event.route].opened[event.conn] = event.t
        elif isinstance(event, ConnectionClosed):
            history = self.routes[event.route]
            history.close(event.conn, event)
            history.closed[event.conn] = event.t
            history.unreachable.discard(event.conn)
            if closed_by_proxy(event):
                history.idle_closes.append(event.t)
            opened = history.opened.get(event.conn)
            wrote = history.last_call.pop(event.conn, None)
            if event.gone_before_write and opened is not None and wrote is not None:
                history.dead[wrote] = opened
            call = _the_call(event.tool_calls)
            if call is not None:
                history.resets[call] += 1
        elif isinstance(event, UpstreamStatus):
            self.routes[event.route].upstream(event)
        elif isinstance(event, FrameSeen) and event.direction is Direction.C2S:
            call = _the_call(event.tool_calls)
            history = self.routes[event.route]
            refused = event.undelivered.startswith(UPSTREAM_UNREACHABLE)
            if refused and call is not None and event.conn not in history.unreachable:
                # Accepted while the plugin was down, what the call's server sent recorded:
                # the route refused the call as a connection closed before a byte crossed
                # it does (whose close names the call; this one's names none: bytes came).
                history.unreachable.add(event.conn)
                history.resets[call] += 1
            history.last_call[event.conn] = call
            history.request(event, call)
        elif isinstance(event, FrameSeen):
            self.routes[event.route].plugin_spoke(event)
        elif isinstance(event, StreamEnded) and event.direction is Direction.S2C:
            self.routes[event.route].plugin_ended(event)

    def plan(self, script: McpScript) -> OutagePlan:
        """The plan for ``script``'s tool calls, once every event was added."""
        routes = self.routes
        plan = OutagePlan()
        if script.conn is None:
            return plan  # no MCP frame: no tool call
        for history in routes.values():
            history.finish()
            history.settle()
        # A recording whose calls carry the tracker's decision (some call is marked): a call
        # not marked was made with every route listening, never re-guessed from the times.
        marked = any(step.routes_down is not None for step in script.tool_calls)
        before = -math.inf
        for step in script.tool_calls:
            call = (script.conn, step.index)
            planned = {
                name: _route_outage(history, name, step, call, before, marked)
                for name, history in routes.items()
            }
            before = step.t
            kept = {name: outage for name, outage in planned.items() if outage != NO_OUTAGE}
            if kept:
                plan.calls[step.index] = kept
        return plan


def outage_plan(script: McpScript, events: Iterable[Event]) -> OutagePlan:
    """The plan for ``script``'s tool calls from a recording's GOLEM-route events."""
    histories = RouteHistories()
    for event in events:
        histories.add(event)
    return histories.plan(script)


def _the_call(refs: Optional[tuple[ToolCallRef, ...]]) -> Optional[CallKey]:
    """The one call ``refs`` names; None for none or several (ambiguous: not one call's
    alone)."""
    if refs is None or len(refs) != 1:
        return None
    (ref,) = refs
    return (ref.conn, ref.index)


def _route_outage(
    history: _RouteHistory,
    route: str,
    step: ClientStep,
    call: CallKey,
    before: float,
    marked: bool,
) -> RouteOutage:
    """What ``step`` (``call``, as ``tool_calls`` members name it) met on ``route``;
    ``before``: when the call before it was made; ``marked``: the recording's calls carry
    the routes down (`ClientStep.routes_down`)."""
    start = step.t
    resets = history.resets.get(call, 0)
    down = False
    if call not in history.reached:
        if step.routes_down is not None or marked:  # decided as the call was made
            down = any(found.route == route for found in step.routes_down or ())
        else:  # a recording made before that member (or with no call marked): the times
            down = history.down_at(start)
        # Or gone down under it: its own connection refused (the close names it).
        finish = math.inf if step.answer_t is None else step.answer_t
        down = down or (resets > 0 and history.went_down_within(start, finish))
    # The server's connections are closed before the call only where the recording shows
    # the plugin going away since the call before (the route down meanwhile), and none open
    # when the call began: else a build that keeps its connection is left alone.
    gone = history.open_at(start) == 0 and history.down_within(before, start)
    # Only a connection open before the call began was left by the plugin before it wrote.
    dead = history.dead.get(call, math.inf) < start
    ends = tuple(history.ends.get(call, ()))
    # A close the proxy made while the server sat between calls (or during the call before,
    # on a connection that call left idle) is played as this call begins: the server wrote
    # nothing there since, or the connection would not have been idle.
    idle = history.idle_closed_within(before, start)
    return RouteOutage(
        drop_open=gone,
        resets=resets,
        refused=down,
        reset_open=dead,
        ends=ends,
        idle_closed=idle,
    )
