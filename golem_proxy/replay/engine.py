"""The replay server's decisions, sans-IO: a request payload in, what to do with it out (reply
after a delay, forward, close), plus the tally for the end-of-run report.

The trio server (`server.py`) only moves bytes; every rule about matching, ids, GUIDs, built-ins,
malformed requests and misses lives here and is tested without sockets.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from golem_core.dispatcher import Dispatcher
from golem_core.messages import Malformed, MalformedKind, Request, Role
from golem_core.profiles import Profile

from ..terminal import safe_text
from .call_scope import CallScope, summary_of
from .index import Key, RecordedExchange, ReplayIndex, encode_recorded
from .large_payloads import with_id
from .matching import GuidMap, MatchMode, MissPolicy
from .miss_explain import NEAREST_SCAN, explain_miss, explain_scoped
from .redacted_values import ReplayRedaction, holds_placeholder, wildcard_match
from .state_order import StateOrder, listed

__all__ = [
    "BUILTINS",
    "Close",
    "Decision",
    "Forward",
    "MissRecord",
    "ReplayEngine",
    "ReplayReport",
    "Reply",
    "Unanswered",
    "summary",
]

BUILTINS = ("ping", "list_methods")
"""Answered even when the trace lacks them (when the profile has them as built-ins), so a
client's connect handshake always works."""


@dataclass(frozen=True)
class Reply:
    """Send ``data`` (already framed) after ``delay`` seconds."""

    data: bytes
    delay: float = 0.0
    exchange: Optional[RecordedExchange] = None


@dataclass(frozen=True)
class Forward:
    """Send the request to the live plugin and relay its answer."""

    route: str
    method: str
    key: Key


@dataclass(frozen=True)
class Close:
    """Close the client connection (miss policy ``close``, or what the plugin does)."""

    reason: str


Decision = Union[Reply, Forward, Close]


@dataclass(frozen=True)
class Unanswered:
    """Answer nothing, as the plugin left a request it had taken (an overlay's decision, made
    before the engine is asked: `outage_standin`). With ``end``, end the sending side then
    (the client reads the end of the stream, as from a plugin gone away) and wait for the
    client's: its later bytes are refused with a reset when ``reset_after``, else dropped."""

    end: bool = False
    reset_after: bool = True


@dataclass(frozen=True)
class MissRecord:
    route: str
    method: str
    message: str
    scope: Optional[CallScope] = None
    """Where the engine served one call's exchanges (`ReplayEngine.scope`): the scope the
    request came in."""
    params: Any = None
    """The request's params, kept where ``scope`` is."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"route": self.route, "method": self.method, "message": self.message}
        if self.scope is not None:
            call = self.scope.call
            data["params"] = self.params
            data["tool_call"] = call.to_json() if call is not None else None
        return data

    def describe(self) -> str:
        """What the build did, in the terms of the tool call it did it in: ``#7 create_layer
        {"name": "x"} sent scene.list_layers {}: …``."""
        call = self.scope.call if self.scope is not None else None
        during = call.describe() if call is not None else "outside any tool call"
        sent = f"{self.method} {summary_of(self.params)}" if self.scope else self.method
        return safe_text(f"{during} sent {sent} on {self.route}: {self.message}")

    def describe_sent(self) -> str:
        """What the build sent and why it had no answer, as its call's row says it."""
        return safe_text(f"sent {self.method} {summary_of(self.params)}: {self.message}")


@dataclass
class ReplayReport:
    """What a replay did: served from the trace, built-ins, misses, forwards, malformed."""

    served: int = 0
    builtins: int = 0
    forwarded: int = 0
    malformed: int = 0
    misses: list[MissRecord] = field(default_factory=list)
    recorded_new: int = 0
    redacted_matches: int = 0
    """Requests served from the trace whose params matched a recorded ``«redacted»`` (a
    trace recorded with ``--redact``: the value there was not compared)."""

    @property
    def requests(self) -> int:
        return self.served + self.builtins + self.forwarded + self.malformed + self.unanswered

    @property
    def unanswered(self) -> int:
        """Misses that were not forwarded (answered with an error or closed)."""
        return len(self.misses) - self.forwarded


class ReplayEngine:
    """Decides the answer to each request of a replay session (all connections share it, as
    they share the trace's queues)."""

    def __init__(
        self,
        index: ReplayIndex,
        *,
        profile: Optional[Profile] = None,
        on_miss: MissPolicy = MissPolicy.ERROR,
        timing: Optional[float] = None,
        builtins: Optional[bool] = None,
        reuse_hint: Optional[str] = None,
        redaction: Optional[ReplayRedaction] = None,
    ) -> None:
        self.index = index
        self.redaction = redaction or ReplayRedaction(index.trace.profile, ())
        """The trace's ``--redact`` rules: its placeholders match any live value, and the
        live values they stood for are kept out of what the replay says and records."""
        self.reuse_hint = reuse_hint
        """Said after a miss on answers used up (how to repeat them), when there is a way."""
        self.profile = profile or index.trace.profile
        self.on_miss = MissPolicy(on_miss)  # ValueError for anything else
        self.timing = timing
        """None: answer at once; otherwise multiply recorded latencies by this factor."""
        if builtins is None:
            builtins = any(name in self.profile.builtin_methods for name in BUILTINS)
        self.builtins = builtins
        self.guids = GuidMap()
        self.report = ReplayReport()
        self.scope: Optional[CallScope] = None
        """The recorded tool call being played again (`mcp-verify`): while set, only its
        exchanges (and those of no call) are served, and a miss is that call's
        (`call_scope`). None: any exchange is served, first come first served (``replay``).
        Ignored in sequence mode."""
        self._dispatcher = Dispatcher(profile=self.profile)
        self.order = StateOrder(self.profile, index.trace.exchanges)
        """The answers served ahead of a request recorded before them that changes state,
        not sent yet (`state_order`): a warning, not a miss."""

    def decide(self, route: str, payload: bytes) -> Decision:
        """What to do with one request payload that arrived on ``route``. Never raises: a
        request the engine cannot answer (an id that cannot be encoded, a bug) is answered
        with the server loop's internal error, as the plugin would."""
        try:
            return self._decide(route, payload)
        except Exception as exc:
            self.report.malformed += 1
            reply = self.profile.internal_error(None, exc)
            return Reply(self.profile.encode(reply))

    def _decide(self, route: str, payload: bytes) -> Decision:
        message = self.profile.parse(payload, Role.REQUEST)
        if not isinstance(message, (Request, Malformed)):
            # A notification, or a reply: nothing a client asks a stand-in server. The Scrybe
            # app (whose contract has neither) answers it as a request it cannot serve.
            kind = MalformedKind.MISSING_ID if message.id is None else MalformedKind.MISSING_METHOD
            detail = "request has no `id`" if message.id is None else "request has no `method`"
            message = Malformed(kind, detail, message.obj, message.id, Role.REQUEST)
        if isinstance(message, Malformed):
            self.report.malformed += 1
            reply = self.profile.unparseable_request(message)
            if reply is None:
                return Close(f"unparseable request: {message.detail}")
            return Reply(self.profile.encode(reply))
        assert isinstance(message, Request)
        method = message.method
        params = message.params if isinstance(message.params, dict) else {}
        redacted = False
        plain = params
        if self.redaction:
            # Keyed as the recorder wrote it: a value its rules replace is «redacted» here too.
            params, plain, redacted = self.redaction.live_params(message.obj, method)
        key = self.index.key(route, method, params, self.guids)
        scope = self.scope if self.index.mode is not MatchMode.SEQUENCE else None
        if scope is None:
            exchange = self.index.take(route, method, key)
        else:
            exchange = self.index.take_chosen(route, method, key, scope.choose)
        if exchange is None and self.redaction and self.index.mode is MatchMode.METHOD_PARAMS:
            # A recorded «redacted» stands for whatever the live request has there.
            exchange = self._take_redacted(route, method, plain, scope)
            redacted = exchange is not None
        if exchange is not None:
            self.report.served += 1
            self.order.served(exchange, self.index.used)
            if redacted and holds_placeholder(exchange.request):
                self.report.redacted_matches += 1
            return Reply(self._answer(exchange, message.id), self._delay(exchange), exchange)
        if self.builtins and method in BUILTINS:
            self.report.builtins += 1
            return Reply(self.profile.encode(self._builtin(message)))
        if scope is None:
            explanation = self.redaction.text(self.explain_miss(route, method, params, key))
            self.report.misses.append(MissRecord(route, method, explanation))
        else:
            explanation = explain_scoped(self, scope, route, method, params, key)
            explanation = self.redaction.text(explanation)
            self.report.misses.append(MissRecord(route, method, explanation, scope, params))
        if self.on_miss is MissPolicy.FORWARD:
            self.report.forwarded += 1
            return Forward(route, method, key)
        if self.on_miss is MissPolicy.CLOSE:
            return Close(explanation)
        return Reply(self.profile.encode(self.profile.miss_error(message.id, method, explanation)))

    def _take_redacted(
        self, route: str, method: str, params: Any, scope: Optional[CallScope]
    ) -> Optional[RecordedExchange]:
        """The first unused recorded request of ``method`` whose ``«redacted»`` values stand
        where ``params`` has any (`wildcard_match`), taken; the values they stood for are
        secrets from now on. With ``scope``, one of the call in flight's first, then one of
        no call; never another call's (`CallScope.ordered`, as an exact match is chosen).
        None when there is none."""
        keyer = self.index.keyer
        live = keyer.comparable_params(method, params, self.guids)
        left = self.index.unused_of(route, method)[:NEAREST_SCAN]
        for exchange in scope.ordered(left) if scope is not None else left:
            if exchange.too_large(response=False) or not holds_placeholder(exchange.request):
                continue
            try:
                recorded = exchange.request_obj().get("params") or {}
            except (ValueError, AttributeError):
                continue
            found = wildcard_match(keyer.comparable_params(method, recorded), live)
            if found is not None and self.index.take_exchange(exchange):
                self.redaction.learn(found)
                return exchange
        return None

    def _answer(self, exchange: RecordedExchange, request_id: Any) -> bytes:
        if exchange.too_large(response=True):
            # Not parsed (a reader's budget): its bytes, the live id and GUIDs spliced in.
            live = with_id(exchange.response, request_id, self.guids.to_live_map)
            return self.profile.frame_payload(live)
        try:
            recorded = exchange.response_obj()
        except ValueError:
            recorded = None
        if not isinstance(recorded, dict):
            # The plugin answered something unreadable: replay it byte for byte.
            return self.profile.frame_payload(exchange.response)
        answer = self.profile.with_id(self.guids.to_live(recorded), request_id)
        return encode_recorded(self.profile, answer)

    def _delay(self, exchange: RecordedExchange) -> float:
        if self.timing is None:
            return 0.0
        return max(0.0, exchange.latency * self.timing)

    def _builtin(self, request: Request) -> dict[str, Any]:
        if request.method == "list_methods":
            methods = sorted(set(self.index.trace.methods()) | set(BUILTINS))
            return self.profile.success(request.id, {"methods": methods})
        return self._dispatcher.dispatch(request)

    def explain_miss(self, route: str, method: str, params: Any, key: Key) -> str:
        """Why nothing matched (`miss_explain.explain_miss`)."""
        return explain_miss(self, route, method, params, key)

    def misses(self) -> list[MissRecord]:
        """The misses so far, as a report, a summary or a test's failure writes them: every
        secret known by now hidden, those learned since a miss was made too (a placeholder
        matched later in the run says what an earlier miss quoted was)."""
        hide = self.redaction.scrub
        return [
            dataclasses.replace(miss, message=hide(miss.message), params=hide(miss.params))
            for miss in self.report.misses
        ]

    def learn_from_forward(self, forward: Forward, live_response: bytes) -> None:
        """A forwarded request had a recorded twin already used up: its recorded response and
        the live one stand for the same objects, so learn their GUID pairs."""
        recorded = self.index.last_for(forward.key)
        if recorded is None:
            return
        if recorded.too_large(response=True):
            return  # not parsed: its GUIDs are not learned
        with contextlib.suppress(ValueError):
            self.guids.learn(recorded.response_obj(), json.loads(live_response))


def summary(engine: ReplayEngine) -> dict[str, Any]:
    """The end-of-run report as JSON: counts, misses, and the recorded exchanges never used
    (built-ins left out: how often a client pings is not part of a session's meaning)."""
    report = engine.report
    unused = engine.index.unused(exclude=BUILTINS if engine.builtins else ())
    return {
        "requests": report.requests,
        "served": report.served,
        "builtins": report.builtins,
        "forwarded": report.forwarded,
        "malformed": report.malformed,
        "recorded_new": report.recorded_new,
        "redacted_matches": report.redacted_matches,
        "misses": [miss.to_json() for miss in engine.misses()],
        "unused": [listed(e) for e in unused],
        "ahead": engine.order.notes(),
        "exchanges": len(engine.index.trace.exchanges),
    }
