"""Intercepting frames (``golem-proxy proxy --intercept FILTER``): hold a matching frame before
it is forwarded until someone decides what becomes of it.

The engine is sans-IO apart from waiting: `ConnectionIntercept.hold` is awaited by the
frame-by-frame pump of `fault_relay` for each frame, and returns at once for a frame the filter
does not select. A selected frame waits there; since its pump waits with it, the later frames
of that connection and direction wait behind it (order is kept), while the other direction and
every other connection go on. Whoever drives the session (the TUI, a test) calls, from the
proxy's trio thread, `InterceptEngine.held`, `decide`, `accept_all` and `set_filter`.

A decision is `Accept`, `Edit` (new payload bytes, validated as JSON before anything is sent),
`Drop` (the peer never sees the frame) or `Answer` (for a request: a response the user wrote
goes back to the client, and the request never reaches the upstream). ``timeout`` accepts a
frame held that long. Every step is an `InterceptStep` event (its `InterceptKind` below), so
it shows in the log, the recording and the TUI.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Awaitable
from typing import Callable, Optional, Union

import trio

from golem_core.framing import Framing
from golem_core.messages import Malformed, Message, Role
from golem_core.profiles import Profile

from ..analysis.filters import And, Filter, Or, Predicate, parse_filter
from ..analysis.flows import Flow
from ..events import Direction, FrameSeen, InterceptKind
from ..recording.reader import check_line
from ..recording.schema import RecordingError
from .frame_redaction import FrameRedaction, RedactedFrame
from .intercept_decisions import (
    Accept,
    Answer,
    Decision,
    Drop,
    Edit,
    HeldFrame,
    InterceptError,
    Ruling,
)
from .redact import Redactor
from .tap_limits import DEFAULT_LIMITS, ObserveLimits
from .tap_pairing import ConnectionPairing, frame_method
from .tap_parse import TooCostly, parse_for_view

__all__ = [
    "ANSWERED",
    "HELD",
    "Accept",
    "Answer",
    "ConnectionIntercept",
    "Decision",
    "Drop",
    "Edit",
    "HeldFrame",
    "InterceptEngine",
    "InterceptError",
    "Ruling",
    "route_scope",
]

HELD = InterceptKind.HELD
"""The step that says a frame is held (published when it is caught)."""
ACCEPTED = InterceptKind.ACCEPTED
EDITED = InterceptKind.EDITED
DROPPED = InterceptKind.DROPPED
ANSWERED = InterceptKind.ANSWERED
RELEASED = InterceptKind.RELEASED
MAX_PENDING = 1024
MAX_PENDING_BYTES = 64 * 1024 * 1024
"""What one connection keeps of requests forwarded, to show a response with its request."""
_PAIRING_LIMITS = ObserveLimits(pending=MAX_PENDING, pending_bytes=MAX_PENDING_BYTES)
LOST = InterceptKind.LOST
"""The connection ended while the frame was held: it was never sent."""
MAX_LOST_REMEMBERED = 4096
"""Lost frames whose numbers a decision still recognises (so that ``accept 7`` says #7 was
lost rather than that it never existed); the oldest are forgotten first."""


class InterceptEngine:
    """The intercept filter, the frames held under it, and the decisions on them (for every
    connection of a proxy). ``routes`` limits which routes forward frame by frame so they can
    be held (None: all, for a filter that can change at run time; see `route_scope`)."""

    def __init__(
        self,
        profile: Profile,
        filter: Optional[Filter] = None,
        *,
        timeout: Optional[float] = None,
        routes: Optional[frozenset[str]] = None,
    ) -> None:
        self.profile = profile
        self.filter = filter
        self.timeout = timeout
        self.routes = routes
        self._held: dict[int, HeldFrame] = {}
        self._lost: dict[int, str] = {}
        self._ids = itertools.count(1)

    def set_filter(self, filter: Union[Filter, str, None]) -> None:
        """Hold what ``filter`` selects from now on (None: nothing). Frames already held stay
        held until decided. Raises FilterError for a text that does not parse."""
        self.filter = parse_filter(filter) if isinstance(filter, str) else filter

    def clear_filter(self) -> None:
        self.set_filter(None)

    def held(self) -> list[HeldFrame]:
        """The frames waiting for a decision, the oldest first."""
        return list(self._held.values())

    def decide(self, held_id: int, decision: Decision) -> None:
        """Decide the fate of held frame ``held_id``; its pump carries it out. Raises
        InterceptError for an unknown (or already decided) frame or a decision that does not
        fit it, before anything is sent."""
        held = self._held.get(held_id)
        if held is None and held_id in self._lost:
            raise InterceptError(f"#{held_id} was lost: {self._lost[held_id]}")
        if held is None or held.decision is not None:
            raise InterceptError(f"no frame #{held_id} is held")
        if isinstance(decision, Edit):
            decision = Edit(self._valid_json(decision.payload, "the edited frame"))
        elif isinstance(decision, Answer):
            if not held.is_request or held.message.role is Role.RESPONSE:
                raise InterceptError(f"frame #{held_id} is a response: only a request is answered")
            if not self.profile.expects_response(held.message):
                # An answer to it would be an orphan to its client: `id` null, or none.
                raise InterceptError(
                    f"frame #{held_id} is a notification: nothing answers one "
                    "(accept, edit or drop it)"
                )
            decision = Answer(self._answer_payload(held, decision.payload))
        held.decision = decision
        held._decided.set()

    def accept_all(self) -> int:
        """Accept every held frame; returns how many."""
        pending = [h for h in self._held.values() if h.decision is None]
        for held in pending:
            self.decide(held.id, Accept())
        return len(pending)

    def applies_to(self, route: str) -> bool:
        """True when frames of ``route`` may be held (its connections forward frame by frame)."""
        return self.routes is None or route in self.routes

    def connection(
        self,
        conn: int,
        route: str,
        parse_limit: int = DEFAULT_LIMITS.parse,
        redactor: Optional[Redactor] = None,
    ) -> ConnectionIntercept:
        """``parse_limit``: the session's ``--observe-parse-limit`` (`ConnectionIntercept.hold`);
        ``redactor``: its ``--redact`` rules, applied to what is shown and recorded of a held
        frame."""
        return ConnectionIntercept(self, conn, route, parse_limit, redactor)

    def _valid_json(self, payload: bytes, what: str) -> bytes:
        try:
            # Judged before parsing, as a recording's line is: JSON nested 100,000 deep would
            # make the parser recurse out of the stack.
            check_line(payload)
        except RecordingError as exc:
            raise InterceptError(f"{what} is refused: {exc}") from None
        try:
            value = json.loads(payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise InterceptError(f"{what} is not JSON: {exc}") from None
        if self.profile.framing is Framing.LINE and b"\n" in payload:
            # One message is one line: an edit laid out over lines is sent compact.
            return self.profile.encode_payload(value)
        return payload

    def _answer_payload(self, held: HeldFrame, payload: bytes) -> bytes:
        payload = self._valid_json(payload, "the answer")
        value = json.loads(payload)
        if not isinstance(value, dict):
            raise InterceptError("the answer must be a JSON object (a response)")
        if "id" not in value:
            return self.profile.encode_payload(self.profile.with_id(value, held.message.id))
        return payload

    def _selects(self, flow: Flow) -> bool:
        chosen = self.filter
        return chosen is not None and chosen.matches(flow, self.profile)

    def _add(self, held: HeldFrame) -> None:
        self._held[held.id] = held

    def _remove(self, held: HeldFrame) -> None:
        self._held.pop(held.id, None)

    def _mark_lost(self, held: HeldFrame, why: str) -> None:
        self._lost[held.id] = why
        if len(self._lost) > MAX_LOST_REMEMBERED:
            del self._lost[next(iter(self._lost))]

    def _next_id(self) -> int:
        return next(self._ids)


class ConnectionIntercept:
    """One connection's view of the engine: its frames as flows for the filter (a response
    with the request it answers, paired by id), and the wait of a held frame."""

    def __init__(
        self,
        engine: InterceptEngine,
        conn: int,
        route: str,
        parse_limit: int = DEFAULT_LIMITS.parse,
        redactor: Optional[Redactor] = None,
    ) -> None:
        self.engine = engine
        self.parse_limit = parse_limit
        self.conn = conn
        self.route = route
        self._index = {Direction.C2S: 0, Direction.S2C: 0}
        self._holding = {Direction.C2S: 0, Direction.S2C: 0}
        self.typed: dict[Direction, Optional[Message]] = {Direction.C2S: None, Direction.S2C: None}
        """The message of the frame of each direction `hold` read last (None: not read, or too
        costly to read): whether it takes a turn where a client pairs answers by their order
        (`answer_turns.takes_turn`)."""
        self.gone: Optional[str] = None
        """Why the connection is ending, when the relay knows (``the client reset the
        connection``): what the `LOST` event of a frame held then says."""
        # The tap's pairing rule, on the frames as they arrive (before the faults act on
        # them, ahead of the observer): bounded, so a peer that never answers cannot grow it.
        self._requests = ConnectionPairing(engine.profile, _PAIRING_LIMITS)
        self._redaction = FrameRedaction(engine.profile, redactor)
        """The tap's redaction, fed with every frame as it arrives (and as it was sent, when
        edited), so that a held frame is hidden as the tap will hide it: by the rules, and
        where it repeats a value the rules replaced in a frame before it."""

    def holding(self, direction: Direction) -> bool:
        """True while a frame of ``direction`` waits for a decision."""
        return self._holding[direction] > 0

    async def hold(
        self,
        direction: Direction,
        payload: bytes,
        size: int,
        t: float,
        announce: Callable[[HeldFrame, InterceptKind, str], None],
        watch: Optional[Callable[[], Awaitable[None]]] = None,
    ) -> Optional[Ruling]:
        """Hold the frame if the filter selects it and wait for its decision (or the
        timeout). Returns None for a frame not selected (forward it as it is), else the
        ruling to carry out. ``announce(held, kind, detail)`` publishes an event: `HELD` once
        the frame is held, and `LOST` when the wait is cancelled (the connection ended)
        before the cancellation goes on. ``watch`` runs while the frame is held (the relay
        watches there for a client that goes away, and cancels the connection if it does)."""
        engine = self.engine
        self.typed[direction] = None
        if engine.filter is None and not self._redaction:
            # Nothing to hold: no parsing on the forwarding path. A response whose request
            # went by now is seen without it if a filter is set later. (With ``--redact``
            # every frame is read: the values it redacts are hidden in those held later.)
            return None
        profile = engine.profile
        role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
        try:
            message, elided = parse_for_view(profile, payload, role, self.parse_limit)
        except TooCostly:
            # Too costly to read here (the tap records it as such, unnumbered): selected by
            # no filter, known to the pairing as a frame not seen.
            self._requests.unobserved(direction)
            return None
        self.typed[direction] = message
        frame = FrameSeen(
            conn=self.conn,
            route=self.route,
            direction=direction,
            index=self._index[direction],
            t=t,
            size=size,
            payload=payload,
            message=message,
            elided=elided,  # its blob's characters are not held: not charged while it waits
        )
        self._index[direction] += 1
        flow = Flow(0, self.conn, self.route)
        answered: Optional[str] = None
        if direction is Direction.C2S:
            flow.request = frame
        else:
            flow.request = self._requests.answer(Direction.C2S, message).request
            flow.response = frame
            request = flow.request.message if flow.request is not None else None
            flow.outcome = profile.outcome(request, message)
            answered = flow.request.method if flow.request is not None else None
        # A server's request (JSON-RPC) answers nothing: its method is its own, as the tap's.
        method = frame_method(message, answered)
        shown = self._redact(direction, payload, message, method, elided)
        if not engine._selects(flow):
            self._forwarded(direction, message, frame)
            return None
        held = HeldFrame(
            engine._next_id(), self.conn, self.route, direction, method, message, payload,
            trio.current_time(), shown,
        )  # fmt: skip
        what = describe(held)
        engine._add(held)
        announce(held, HELD, f"held #{held.id}: {what}")
        decided = False
        self._holding[direction] += 1
        try:
            with trio.move_on_after(engine.timeout if engine.timeout is not None else float("inf")):
                async with trio.open_nursery() as nursery:
                    if watch is not None:
                        nursery.start_soon(watch)
                    await held._decided.wait()
                    nursery.cancel_scope.cancel()
            # A decision may wake this task as the watcher, having read the client's close,
            # records the frame and that end of stream and ends the connection; leaving a nursery
            # whose children are done is no checkpoint, so unseen, that end would have the
            # decision carried out behind it. The frame is lost, as the end makes it.
            await trio.lowlevel.checkpoint_if_cancelled()
            decided = True
        finally:
            self._holding[direction] -= 1
            engine._remove(held)
            if not decided:
                side = "request" if held.is_request else "response"
                why = self.gone or "the connection ended"
                engine._mark_lost(held, f"{why} while it was held")
                announce(
                    held,
                    LOST,
                    f"not sent: {why} while the {side} was held {held.age():.3f} s: {what}",
                )
        ruling = dataclasses.replace(self._ruling(held, what), learned=held.view.learned)
        if not isinstance(ruling.decision, (Drop, Answer)):
            sent = profile.parse(ruling.payload, role)  # whole: nothing elided any more
            self.typed[direction] = sent  # what goes on takes the turn, edited or not
            forwarded = dataclasses.replace(frame, payload=ruling.payload, message=sent, elided=0)
            self._forwarded(direction, sent, forwarded)
            if isinstance(ruling.decision, Edit):  # the tap redacts what was sent
                self._redact(direction, ruling.payload, sent, method)
        elif isinstance(ruling.decision, Answer):  # the tap redacts the answer the client got
            answer = profile.parse(ruling.payload, Role.RESPONSE)
            self._redact(Direction.S2C, ruling.payload, answer, method)
        return ruling

    def _redact(
        self,
        direction: Direction,
        payload: bytes,
        message: Message,
        method: Optional[str],
        elided: int = 0,
    ) -> Optional[RedactedFrame]:
        """The frame redacted as the tap redacts it (``method``: a response's request's), its
        values remembered for the frames after it; None without ``--redact``."""
        if not self._redaction:
            return None
        role = message.role or (Role.REQUEST if direction is Direction.C2S else Role.RESPONSE)
        return self._redaction.frame(payload, message, role, method, elided)

    def _forwarded(self, direction: Direction, message: Message, frame: FrameSeen) -> None:
        if direction is Direction.C2S:  # held until answered, as the tap holds it
            self._requests.hold(direction, message, frame)

    def _ruling(self, held: HeldFrame, what: str) -> Ruling:
        decision = held.decision
        waited = f"after {held.age():.3f} s"
        side = "request" if held.is_request else "response"
        if decision is None:  # the timeout released it
            timeout = self.engine.timeout or 0.0
            return Ruling(
                Accept(),
                held.payload,
                RELEASED,
                f"released after {timeout:g} s (--intercept-timeout), sent as it came: {what}",
                held.method,
            )
        if isinstance(decision, Accept):
            detail = f"accepted {waited}: {what}"
            return Ruling(decision, held.payload, ACCEPTED, detail, held.method)
        if isinstance(decision, Edit):
            sizes = f"{len(held.payload)} → {len(decision.payload)} payload bytes"
            return Ruling(
                decision,
                decision.payload,
                EDITED,
                f"edited {waited} ({sizes}); the original is kept: {what}",
                held.method,
                original=held.view.payload,
                redacted=held.view.redacted,
            )
        # Withheld: the recording's readers leave the request out of what the upstream
        # received (`faults.received_streams`); the word opens the detail for the log.
        if isinstance(decision, Drop):
            detail = f"withheld {side}: dropped {waited}: {what}"
            return Ruling(decision, held.payload, DROPPED, detail, held.method, withheld=True)
        return Ruling(
            decision,
            decision.payload,
            ANSWERED,
            f"withheld {side}: answered by hand {waited} ({len(decision.payload)} bytes): {what}",
            held.method,
            withheld=True,
        )


def describe(held: HeldFrame) -> str:
    """``method id=… (N bytes)``: what a held frame is, for event details (its id as
    redaction leaves it)."""
    message = held.view.message
    ident = "" if message.id is None else f" id={message.id}"
    kind = " (malformed)" if isinstance(message, Malformed) else ""
    return f"{held.method or '?'}{ident}{kind} ({len(held.payload)} bytes)"


def route_scope(filter: Optional[Filter]) -> Optional[frozenset[str]]:
    """The routes a filter can select at all (a ``~route NAME`` every match needs), or None
    when it may select frames on any route."""
    if filter is None:
        return frozenset()
    return _scope(filter)


def _scope(node: Filter) -> Optional[frozenset[str]]:
    if isinstance(node, Predicate):
        return frozenset((node.arg,)) if node.name == "route" and node.arg is not None else None
    if isinstance(node, And):
        scopes = [s for s in (_scope(part) for part in node.parts) if s is not None]
        if not scopes:
            return None
        return frozenset.intersection(*scopes)
    if isinstance(node, Or):
        found: set[str] = set()
        for part in node.parts:
            scope = _scope(part)
            if scope is None:
                return None
            found |= scope
        return frozenset(found)
    return None
