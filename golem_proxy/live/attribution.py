"""Which MCP tool call a GOLEM frame belongs to, decided once, as the frames are decoded.

`golem-proxy mcp` observes two layers: the MCP stdio hop (client ↔ MCP server) and the GOLEM
routes (MCP server ↔ Rhino). Both feed the one observer queue in the order their bytes were
forwarded, so decoding follows wire order across the layers: a ``tools/call`` request is
decoded before any GOLEM frame the server sent after reading it, and its response after any
GOLEM frame the server sent before answering.

The MCP tap's events pass through `ToolCallTracker.watch`, which keeps the ``tools/call``
requests in flight: from the request until its response or the end of the MCP connection. A
call the client cancelled (``notifications/cancelled``) stays in flight until its response, or
until the server answers a request the client sent after the cancellation: a server may go on
with a call it cannot interrupt, and the `mcp` SDK's servers answer a cancelled call; by the
time it answers a later request it has read the cancellation, and one that honours it has
stopped (it never answers). Every GOLEM frame passes through
`ToolCallTracker.annotate` and carries the calls in flight at that moment
(`FrameSeen.tool_calls`): exactly one is the call that caused it, none means "no tool call",
several mean "ambiguous" (all are named). A frame the forwarding path may hold before it goes
on (``--intercept``, ``--fault delay``) is marked as it arrives, in order with the MCP bytes
(`ToolCallTracker.at_arrival`), and carries the calls in flight then, when the server sent it;
an answer carries its request's.
A ``tools/call`` made while a GOLEM route is down (its upstream refused a connection and the
route stopped listening: `golem_proxy.live.route_gate`) carries the routes down then
(`FrameSeen.routes_down`): its server's connection attempts were refused by the system and
never reached the proxy, so that call would otherwise show nothing of them. The tracker
follows the routes' `UpstreamStatus` events in wire order with the MCP bytes
(`ToolCallTracker.upstream`; `Proxy.publish` in one process, `HandoffSource` in an observing
process of its own). A route that goes down while a call is in flight (the plugin went away
under it) is carried by the call's answer, the same way: what its server tried there after
that was refused by the system too, and the call's GOLEM rows stop there without a word.
Views read the decision from the event; none re-derives it.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any, Optional

from golem_core.messages import Request, Role
from golem_core.profiles import Profile
from golem_core.profiles.mcp import CANCELLED, TOOLS_CALL, cancelled_id, tool_name
from golem_core.profiles.members import id_key

from ..events import (
    AnswerOf,
    ConnectionClosed,
    Direction,
    Event,
    ExchangeCompleted,
    FrameSeen,
    GapReason,
    ObservationLost,
    RouteDown,
    ToolCallRef,
    UpstreamStatus,
)
from .late_answers import LateAnswers
from .mcp_rules_live import McpRulesLive

__all__ = ["MAX_IN_FLIGHT", "Arrival", "RoutesDown", "ToolCallTracker"]

MAX_IN_FLIGHT = 4096
"""Tool calls kept in flight at most: a client that never sees answers (or a server that
never gives them) must not grow this without bound. Past it the oldest is let go."""


class RoutesDown:
    """The routes whose upstream is down now, each since when, as their `UpstreamStatus`
    events say: the first ``down`` stands (a later one says it is still down) until
    ``back``."""

    def __init__(self) -> None:
        self._since: dict[str, float] = {}

    def __bool__(self) -> bool:
        return bool(self._since)

    def __contains__(self, route: str) -> bool:
        return route in self._since

    def follow(self, event: UpstreamStatus) -> None:
        if event.up:
            self._since.pop(event.route, None)
        else:
            self._since.setdefault(event.route, event.t)

    def now(self) -> tuple[RouteDown, ...]:
        return tuple(RouteDown(route=route, since=t) for route, t in self._since.items())


class ToolCallTracker:
    """The ``tools/call`` requests in flight on the MCP hop; see the module docstring."""

    NOTICES = (CANCELLED,)
    """The notifications, besides a call and its answer, that change what is in flight."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self._in_flight: collections.OrderedDict[tuple[int, Any], ToolCallRef] = (
            collections.OrderedDict()
        )
        self.let_go = 0
        """Calls dropped from the in-flight set because it was full."""
        self._recovered: set[tuple[int, Any]] = set()
        """Calls put in flight from the recording after a restart (`take_over`), until their
        connection's answers go on (`answers_resumed`)."""
        self._sent: dict[int, int] = {}
        """Per connection, the client's requests counted so far (those that want an answer)."""
        self._asked: collections.OrderedDict[tuple[int, Any], int] = collections.OrderedDict()
        """The client's requests waiting for an answer, any method: the count each was sent at."""
        self._cancelled: dict[tuple[int, Any], int] = {}
        """Calls in flight the client cancelled: the count of its requests at the cancellation
        (the answer to one sent after it lets them go)."""
        self._down = RoutesDown()
        """The GOLEM routes not listening now (their upstream refused), each since when."""
        self._marked: collections.OrderedDict[tuple[int, int], FrameSeen] = (
            collections.OrderedDict()
        )
        """Calls marked with the routes down (`watch`), by connection and frame index, until
        their exchange: the tap pairs the frame it decoded, which the mark is not on."""
        self._made: dict[tuple[int, Any], float] = {}
        """When each call in flight was made (its request frame's ``t``)."""
        self._went_down: dict[tuple[int, Any], dict[str, float]] = {}
        """Calls in flight during which a route went down: each route, since when."""
        self._marked_answers: collections.OrderedDict[tuple[int, int], FrameSeen] = (
            collections.OrderedDict()
        )
        """Answers marked with the routes that went down during their call, as `_marked`."""
        self.late = LateAnswers()
        self._held: dict[tuple[int, int], int] = {}
        """Calls in flight (by connection and frame index) with GOLEM frames that arrived
        during them and are not decoded yet (held on their way: `at_arrival`), how many
        arrivals each; dropped as the call ends."""
        self._rules: dict[str, McpRulesLive] = {}
        """The MCP layer's rules, followed on each route of the hop (`follow`)."""
        """GOLEM answers after their call returned, and calls that read one (late_answers.py)."""

    @property
    def in_flight(self) -> tuple[ToolCallRef, ...]:
        """The calls in flight now, oldest first."""
        return tuple(self._in_flight.values())

    def upstream(self, event: UpstreamStatus) -> None:
        """A GOLEM route's upstream went down or came back (in wire order with the MCP hop):
        the calls made until it is back carry it, and so do the answers of the calls in flight
        as it went down (`watch`)."""
        if not event.up and event.route not in self._down:
            for key, made in self._made.items():
                # A call made after it went down (one taken over after a restart, told of a
                # route down since before it) has it on its request, not here.
                if made < event.t:
                    self._went_down.setdefault(key, {}).setdefault(event.route, event.t)
        self._down.follow(event)

    def follow(self, event: Event) -> list[Event]:
        """What to publish for one event of the MCP hop, in order: the event as `watch`
        returns it and the violations of the MCP layer's rules it settles
        (mcp_rules_live.py), those of an exchange before it."""
        watched = self.watch(event)
        if (
            isinstance(watched, ObservationLost)
            and watched.conn != 0  # 0: the session's line (a restart), no connection's
            and watched.reason is not GapReason.EVICTED
        ):
            # The session's `initialize`, or its answer, may have crossed in the gap: as
            # `check` reads it (`McpAuditor`), no rule may then say it was not sent.
            self.rules_of(watched.route).gap(watched.conn)
        if not isinstance(watched, (FrameSeen, ExchangeCompleted)):
            return [watched]
        found: list[Event] = list(self.rules_of(watched.route).follow(watched))
        # Before the exchange, as the tap publishes a pair's own violations: a reader has the
        # row whole when its exchange line comes.
        return [*found, watched] if isinstance(watched, ExchangeCompleted) else [watched, *found]

    def rules_of(self, route: str) -> McpRulesLive:
        """The MCP layer's rules followed on ``route`` (a hop's)."""
        rules = self._rules.get(route)
        if rules is None:
            rules = self._rules[route] = McpRulesLive(route)
        return rules

    def watch(self, event: Event) -> Event:
        """Follow one event of the MCP hop (call it before the event is published); returns
        the event to publish: a ``tools/call`` made while a GOLEM route is down, marked so."""
        if isinstance(event, ExchangeCompleted):
            return self._exchange_marked(event)
        if isinstance(event, ObservationLost):
            self._answered_unseen(event)
            return event
        if isinstance(event, ConnectionClosed):
            tables = (
                self._in_flight,
                self._asked,
                self._cancelled,
                self._marked,
                self._made,
                self._went_down,
                self._marked_answers,
                self._held,
            )
            for table in tables:
                for key in [key for key in table if key[0] == event.conn]:
                    del table[key]
            self._sent.pop(event.conn, None)
            return event
        if not isinstance(event, FrameSeen):
            return event
        went_down, answer_of, held = self._follow(event)
        if went_down or answer_of is not None or held:
            answered = dataclasses.replace(
                event,
                routes_down=went_down or event.routes_down,
                answer_of=answer_of,
                held_under=held,
            )
            _remember(self._marked_answers, (event.conn, event.index), answered)
            return answered
        if self._down and event.direction is Direction.C2S and self._is_call(event):
            marked = dataclasses.replace(event, routes_down=self._down.now())
            _remember(self._marked, (event.conn, event.index), marked)
            return marked
        return event

    def _exchange_marked(self, event: ExchangeCompleted) -> ExchangeCompleted:
        """``event`` with the marked frames `watch` published for its request and answer."""
        # A client's request only: frame indexes count each direction apart, and a server's
        # own request (a ping, roots/list) may have a marked call's index.
        request, response = event.request, event.response
        if request.direction is not Direction.C2S or not (self._marked or self._marked_answers):
            return event
        marked = self._marked.pop((event.conn, request.index), None)
        answered = self._marked_answers.pop((event.conn, response.index), None)
        if marked is None and answered is None:
            return event
        return dataclasses.replace(event, request=marked or request, response=answered or response)

    @staticmethod
    def _is_call(frame: FrameSeen) -> bool:
        message = frame.message
        return isinstance(message, Request) and message.method == TOOLS_CALL

    def _follow(self, event: FrameSeen) -> tuple[tuple[RouteDown, ...], Optional[AnswerOf], bool]:
        """Follow one MCP frame; an answer to a call during which routes went down: those,
        the GOLEM exchange whose answer it is when not its own (`LateAnswers.answer_of`), and
        whether a GOLEM frame of the call was still held on its way (`FrameSeen.held_under`)."""
        message = event.message
        if event.direction is Direction.S2C:
            if message.role is not Role.REQUEST:  # a server's own requests have ids of theirs
                key = self.profile.correlation_key(message)
                call = self._in_flight.get((event.conn, key))
                answer_of = None
                held = False
                if call is not None:
                    self.late.returned(call)
                    answer_of = self.late.answer_of(call, event)
                    held = (call.conn, call.index) in self._held
                return self._answered(event.conn, key), answer_of, held
            return (), None, False
        if self.profile.expects_response(message):
            asked = self.profile.correlation_key(message)
            if asked is not None:
                count = self._sent[event.conn] = self._sent.get(event.conn, 0) + 1
                self._asked[(event.conn, asked)] = count
                if len(self._asked) > MAX_IN_FLIGHT:
                    self._asked.popitem(last=False)
        cancelled = cancelled_id(message)
        if cancelled is not None:
            key = (event.conn, id_key(cancelled))
            if key in self._in_flight:
                self._cancelled[key] = self._sent.get(event.conn, 0)
            return (), None, False
        if isinstance(message, Request) and message.method == TOOLS_CALL:
            called = self.profile.correlation_key(message)
            ident = message.id
            if called is None or not isinstance(ident, (str, int)):
                return (), None, False
            key = (event.conn, called)
            self._in_flight[key] = ToolCallRef(
                conn=event.conn, index=event.index, id=ident, tool=tool_name(message)
            )
            self._made[key] = event.t
            self._went_down.pop(key, None)  # an id used again: a new call, no outage yet
            if len(self._in_flight) > MAX_IN_FLIGHT:
                self._end(next(iter(self._in_flight)))
                self.let_go += 1
        return (), None, False

    def _end(self, key: tuple[int, Any]) -> dict[str, float]:
        """Call ``key`` is no longer in flight; the routes that went down during it."""
        call = self._in_flight.pop(key, None)
        if call is not None and self._held:
            self._held.pop((call.conn, call.index), None)
        self._made.pop(key, None)
        return self._went_down.pop(key, None) or {}

    def _answered(self, conn: int, key: Any) -> tuple[RouteDown, ...]:
        """The server answered the client's request ``key``: a call it was ends, and so do the
        calls cancelled before that request was sent. The routes that went down during that
        call, if any."""
        if key is None:
            return ()
        went_down = self._end((conn, key))
        self._cancelled.pop((conn, key), None)
        sent = self._asked.pop((conn, key), None)
        if sent is not None and self._cancelled:
            for cancelled, before in list(self._cancelled.items()):
                if cancelled[0] == conn and before < sent:
                    del self._cancelled[cancelled]
                    self._end(cancelled)
        return tuple(RouteDown(route=route, since=t) for route, t in went_down.items())

    def _answered_unseen(self, gap: ObservationLost) -> None:
        """A frame too large to observe answered the client's request numbered
        ``gap.answers`` (the tap read its id: `golem_proxy.live.tap_gap_answer`): a call it
        was ends as `_answered` ends one, so that later GOLEM frames are not said to be of it.
        Its answer is not marked with the routes that went down during it: no frame is."""
        if gap.answers is None or gap.direction is not Direction.S2C:
            return
        for key, ref in self._in_flight.items():
            if key[0] == gap.conn and ref.index == gap.answers:
                self._answered(gap.conn, key[1])
                return

    def take_over(self, frame: FrameSeen) -> None:
        """A frame the recording shows in flight when the observing process before this one
        died: followed as `watch` follows one, a call it puts in flight remembered as
        recovered."""
        before = set(self._in_flight)
        self.watch(frame)
        self._recovered.update(key for key in self._in_flight if key not in before)

    def answers_resumed(self, conn: int, *, unseen: bool) -> None:
        """After a restart, the answers of ``conn`` (the server's direction) are decoded again.
        ``unseen``: some may have crossed while no process recorded them; then the calls
        recovered from the recording are let go, since an answer among those bytes would
        never end them and every GOLEM frame after would name a call that is over (a frame
        then names no call rather than a wrong one)."""
        for key in [key for key in self._recovered if key[0] == conn]:
            self._recovered.discard(key)
            if unseen:
                self._end(key)

    def annotate(self, frame: FrameSeen, answers: Optional[FrameSeen] = None) -> FrameSeen:
        """``frame`` (a GOLEM frame) with the tool calls in flight as it was decoded; an
        answer (``answers``: the request frame it answers) with its request's, as its flow
        has them (the call may have ended meanwhile: the server gave up waiting; then it is
        `FrameSeen.late`)."""
        if answers is not None and answers.tool_calls is not None:
            late = self.late.golem_answer(frame, answers)
            return dataclasses.replace(frame, tool_calls=answers.tool_calls, late=late)
        calls = tuple(self._in_flight.values())
        if frame.direction is Direction.C2S:
            self.late.asked(calls)
        return dataclasses.replace(frame, tool_calls=calls)

    def at_arrival(self) -> Arrival:
        """The tool calls in flight now, for a GOLEM frame that arrived now and is decoded
        when it goes on (held by ``--intercept`` or ``--fault delay``): the server sent it
        now (`golem_proxy.live.tap.ConnectionTap.arrived`). Returns what `annotate` would
        do to it now; until it is called, or passed (`Arrival.passed`), those calls hold a
        GOLEM frame not decoded yet, which a call answered meanwhile says
        (`FrameSeen.held_under`)."""
        return Arrival(self, tuple(self._in_flight.values()))

    def held_arrivals(self, calls: tuple[ToolCallRef, ...], more: int) -> None:
        """``more`` (1, or -1) arrivals not decoded yet under each of ``calls``."""
        held = self._held
        for call in calls:
            key = (call.conn, call.index)
            count = held.get(key, 0) + more
            if count > 0:
                held[key] = count
            else:
                held.pop(key, None)


class Arrival:
    """The session's decision on the frames one read completed, made as they arrived
    (`ToolCallTracker.at_arrival`): the tool calls in flight then. Called on each of those
    frames as it is decoded; until the first is, or the mark is passed (the read completed
    no frame, or its frames went on: `passed`), those calls hold a frame not decoded yet."""

    __slots__ = ("_tracker", "_waiting", "calls")

    def __init__(self, tracker: ToolCallTracker, calls: tuple[ToolCallRef, ...]) -> None:
        self._tracker = tracker
        self.calls = calls
        self._waiting = bool(calls)
        if calls:
            tracker.held_arrivals(calls, 1)

    def __call__(self, frame: FrameSeen) -> FrameSeen:
        self.passed()
        if frame.direction is Direction.C2S:
            self._tracker.late.asked(self.calls)
        return dataclasses.replace(frame, tool_calls=self.calls)

    def passed(self) -> None:
        """No frame of this read waits to be decoded any more."""
        if self._waiting:
            self._waiting = False
            self._tracker.held_arrivals(self.calls, -1)


def _remember(
    marked: collections.OrderedDict[tuple[int, int], FrameSeen],
    key: tuple[int, int],
    frame: FrameSeen,
) -> None:
    """Keep ``frame`` until its exchange, bounded: past `MAX_IN_FLIGHT` the oldest's exchange is
    published unmarked (the live log's line lacks it); its recorded frame keeps the mark."""
    marked[key] = frame
    if len(marked) > MAX_IN_FLIGHT:
        marked.popitem(last=False)
