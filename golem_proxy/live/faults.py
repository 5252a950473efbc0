"""Message-aware fault injection (``golem-proxy proxy --fault SPEC``), sans-IO.

A spec is ``KIND[:key=value,...]`` (docs/faults.md), parsed into `FaultRule`s by
`fault_spec` (its names are re-exported here). This module decides, frame by frame, what to do
with a message; `fault_relay` carries the decisions out on the sockets. Decisions are
reproducible: each connection and direction draws from its own generator seeded with ``(seed,
conn, direction)``, so a run with the same ``--fault-seed`` and the same traffic on each
connection injects the same faults.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from golem_core.framing import Framing
from golem_core.messages import (
    JsonId,
    Malformed,
    Message,
    Notification,
    Request,
    Role,
)
from golem_core.pairing import Correlator
from golem_core.profiles import GOLEM, Profile

from ..events import Direction, Event
from ..recording.streams import rebuild_streams
from .answer_turns import takes_turn
from .fault_spec import MAX_COUNT, MAX_MS, FaultKind, FaultRule, FaultSpecError, parse_fault
from .frame_id import ID_WITHIN, UNKNOWN, id_of_bytes
from .frame_redaction import values_replaced
from .redact import Redactor
from .tap_limits import DEFAULT_LIMITS
from .tap_pairing import frame_method
from .tap_parse import TooCostly, parse_for_view

__all__ = [
    "MAX_COUNT",
    "MAX_MS",
    "WITHHELD",
    "ConnectionFaults",
    "FaultKind",
    "FaultPlan",
    "FaultRule",
    "FaultSpecError",
    "FrameAction",
    "parse_fault",
    "received_streams",
]

WITHHELD = "withheld"
"""First word of a fault event's detail when the proxy did not forward the message (the event
says so in ``withheld``; the word is for people reading the log)."""


class FaultPlan:
    """Every ``--fault`` rule of a run, its seed, and how often each rule fired so far
    (``times=`` counts across connections)."""

    def __init__(self, rules: Sequence[FaultRule], seed: int) -> None:
        self.rules = tuple(rules)
        self.seed = seed
        self.fired = [0] * len(self.rules)

    @classmethod
    def parse(
        cls, specs: Iterable[str], seed: Optional[int] = None, profile: Profile = GOLEM
    ) -> FaultPlan:
        """Parse specs (`parse_fault`, codes from ``profile``); a missing seed is drawn at
        random (print `seed` so it can be reused). Raises FaultSpecError."""
        rules = [parse_fault(spec, profile) for spec in specs]
        if seed is None:
            seed = random.SystemRandom().randrange(2**31)
        return cls(rules, seed)

    def applies_to(self, route: str) -> bool:
        """True when some rule can act on ``route`` (only those routes leave the fast path)."""
        return any(rule.route in (None, route) for rule in self.rules)

    def connection(
        self,
        conn: int,
        route: str,
        profile: Profile,
        parse_limit: int = DEFAULT_LIMITS.parse,
        redactor: Optional[Redactor] = None,
    ) -> ConnectionFaults:
        """``parse_limit``: the session's ``--observe-parse-limit`` (`inspect`); ``redactor``:
        its ``--redact`` rules (`FrameAction.learned`)."""
        return ConnectionFaults(self, conn, route, profile, parse_limit, redactor)


@dataclass
class FrameAction:
    """What to do with one frame. ``data`` is what to send (maybe corrupted); ``events`` the
    fault events to publish, as ``(fault, detail)``, before the frame goes out."""

    data: bytes
    method: Optional[str] = None
    delay: float = 0.0
    withhold: Optional[FaultRule] = None
    """error / reset / drop: the frame is not forwarded."""
    truncate_at: Optional[int] = None
    """Send only this many bytes, then close the connection."""
    slice_size: Optional[int] = None
    gap: float = 0.0
    reply: Optional[bytes] = None
    """For ``error``: the synthesised error frame to send back to the client."""
    answer: str = ""
    """For ``error``: the answer ``reply`` carries, as the fault's event says it."""
    turn: bool = False
    """The frame takes a turn where a client pairs answers by their order (`AnswerTurns`):
    a request its server answers (one too costly to parse counts), or a server's answer (any
    frame of the server's but a request or notification of its own)."""
    events: list[tuple[str, str]] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)
    """The seconds each ``delay`` of ``events`` decided on, in their order (summing to
    ``delay``)."""
    held: float = 0.0
    """The seconds the relay held the frame for ``delay``, as it measured the hold."""
    ident: JsonId = None
    """The message's id as read here (an answer's: its request's); None when it has none
    or it was not found."""
    among: int = 1
    """Of an answer: how many requests waited with its id (`ProxyAction.among`)."""
    server_request: bool = False
    """A request or notification of the server's own (`ProxyAction.server_request`)."""
    learned: tuple[str, ...] = ()
    """With ``--redact``, for a frame the fault keeps from the recording as it came (an
    answer withheld, a frame corrupted): the values the rules replace in it
    (`frame_redaction.values_replaced`), which the tap is handed to hide where they come
    back (`Connection.unrecorded`)."""

    def answer_waits(self, earlier: int) -> None:
        """``reply`` is held behind ``earlier`` answers (`AnswerTurns.hold`): the withholding
        rule's event, said last, says so rather than that it answered, which it has not."""
        fault, detail = self.events[-1]
        answered = f"; answered {self.answer}"
        assert detail.endswith(answered)
        plural = "" if earlier == 1 else "s"
        waits = f"; its answer {self.answer} waits for {earlier:,} earlier answer{plural}"
        self.events[-1] = (fault, detail[: -len(answered)] + waits)


class ConnectionFaults:
    """Fault decisions for one connection. Requests are paired with their responses by id
    (the connection's own pairing), so a rule scoped by method acts on the method's responses
    too; a request the proxy withholds is never paired."""

    def __init__(
        self,
        plan: FaultPlan,
        conn: int,
        route: str,
        profile: Profile,
        parse_limit: int = DEFAULT_LIMITS.parse,
        redactor: Optional[Redactor] = None,
    ) -> None:
        self.plan = plan
        self.parse_limit = parse_limit
        self.redactor = redactor
        """``--redact``'s rules (`FrameAction.learned`)."""
        self.conn = conn
        self.route = route
        self.profile = profile
        self._rng = {d: random.Random(f"{plan.seed}/{conn}/{d.value}") for d in Direction}
        self._methods: Correlator[Optional[str]] = Correlator(profile)

    def inspect(
        self, direction: Direction, payload: bytes
    ) -> tuple[Optional[Message], Optional[str]]:
        """Type a frame's payload and find its method (a response's is its request's). A
        frame whose parse would cost too much (`TooCostly`) is no message, of no method:
        only the rules that name none act on it. A server's such frame may have answered any
        request waiting: they are forgotten, so that none lends its method to the answer of
        another (a later request with the same id), which is of no method then."""
        message, _, method, _ = self._typed(direction, payload)
        return message, method

    def _typed(
        self, direction: Direction, payload: bytes
    ) -> tuple[Optional[Message], int, Optional[str], int]:
        """`inspect`, how many characters of long strings the message leaves out, and of an
        answer, how many requests waited with its id (`FrameAction.among`): the oldest of
        them lends it its method, as the tap pairs it, but over 1 the wire does not say."""
        role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
        try:
            message, elided = parse_for_view(self.profile, payload, role, self.parse_limit)
        except TooCostly:
            if direction is Direction.S2C or self.profile.servers_send_requests:
                self._methods.clear()
            return None, 0, None, 1
        if direction is Direction.C2S:
            return message, elided, frame_method(message, None), 1
        among = len(self._methods.sharing_id(message)) if message.role is Role.RESPONSE else 1
        pending = self._methods.match_response(message)  # none for a server's request
        answered = pending.context if pending is not None else None
        return message, elided, frame_method(message, answered), max(among, 1)

    def takes_turn(self, direction: Direction, payload: bytes) -> bool:
        """`FrameAction.turn` of a frame no fault decides on (``--intercept`` answered or
        dropped it); a server's frame is paired as a decided one is."""
        message, _ = self.inspect(direction, payload)
        return takes_turn(direction, message)

    def forwarded_request(self, message: Message, method: Optional[str]) -> None:
        """Remember a request that reached the upstream, to name the method of its answer."""
        self._methods.add_request(message, method)

    def decide(self, direction: Direction, raw: bytes, header: int, payload: bytes) -> FrameAction:
        """Decide the fate of one complete frame. ``raw`` is its wire bytes, ``header`` the
        length of its header (the payload follows it). Mutates nothing but the generators,
        the `times` counters and the pairing."""
        message, elided, method, among = self._typed(direction, payload)
        action = FrameAction(raw, method, turn=takes_turn(direction, message), among=among)
        action.server_request = direction is Direction.S2C and isinstance(
            message, (Request, Notification)
        )
        rng = self._rng[direction]
        matching = [
            (index, rule)
            for index, rule in enumerate(self.plan.rules)
            if rule.matches(self.route, direction, method)
        ]
        ident: Any = None if message is None else message.id
        if message is None and any(rule.kind is FaultKind.ERROR for _, rule in matching):
            # Not parsed (too costly): the answer in the server's place carries the id the
            # frame's bytes hold, so that the client can match it.
            ident = id_of_bytes(payload)
        what = _describe(message, method, len(raw), ident, among)
        if isinstance(ident, (str, int)) and not isinstance(ident, bool):
            action.ident = ident
        fired: list[tuple[int, FaultRule]] = []
        for index, rule in matching:
            if not self._fire(index, rule, rng):
                continue
            if rule.kind is FaultKind.ERROR and ident is UNKNOWN:
                # An answer the client could not match: the server answers it instead, and
                # the rule's count is left for a frame it can answer.
                self.plan.fired[index] -= 1
                detail = f"not applied: {what}: no id in its first {ID_WITHIN:,} bytes"
                action.events.append((rule.kind.value, f"{detail}; forwarded"))
            else:
                fired.append((index, rule))
        for _, rule in fired:
            if rule.kind is FaultKind.DELAY:
                seconds = max(0.0, rule.ms + rng.uniform(-rule.jitter, rule.jitter)) / 1000
                action.delay += seconds
                action.delays.append(seconds)
                action.events.append(("delay", f"delayed {seconds * 1000:.0f} ms: {what}"))
        withholding = [r for _, r in fired if r.kind in _WITHHOLDING]
        if withholding:
            rule = withholding[0]
            action.withhold = rule
            action.events.append((rule.kind.value, self._withheld(rule, direction, message, what)))
            if rule.kind is FaultKind.ERROR:
                obj = self.profile.error(ident, rule.code, rule.message)
                action.reply = self.profile.encode(obj)
                action.answer = f"{rule.code}: {rule.message}"
            if direction is Direction.S2C and not action.server_request:
                # (A request withheld is recorded all the same.)
                action.learned = self._learned(direction, payload, message, elided, method)
            return action
        if direction is Direction.C2S and message is not None:
            self.forwarded_request(message, method)
        for _, rule in fired:
            if rule.kind is FaultKind.TRUNCATE:
                cut = header + int(rule.at * len(payload))
                cut = min(max(cut, 1), len(raw) - 1)
                action.truncate_at = cut
                action.events.append(
                    ("truncate", f"sent {cut} of {len(raw)} bytes, then closed: {what}")
                )
                # Recorded as the bytes that went, which no rule can read: the values the
                # rules replace in the whole frame are scrubbed from them.
                action.learned = self._learned(direction, payload, message, elided, method)
                return action
        for _, rule in fired:
            if rule.kind is FaultKind.CORRUPT and payload:
                action.data, offsets = self._corrupt(raw, header, len(payload), rule.nbytes, rng)
                action.events.append(("corrupt", f"flipped payload bytes {offsets}: {what}"))
                action.learned = self._learned(direction, payload, message, elided, method)
            elif rule.kind is FaultKind.SLICE:
                action.slice_size = rule.size
                action.gap = rule.gap / 1000
                action.events.append(
                    ("slice", f"sent in {rule.size}-byte pieces, {rule.gap:g} ms apart: {what}")
                )
        return action

    def _learned(
        self,
        direction: Direction,
        payload: bytes,
        message: Optional[Message],
        elided: int,
        method: Optional[str],
    ) -> tuple[str, ...]:
        """`FrameAction.learned` of a frame of ``direction`` typed ``message`` (None: too
        costly to parse, as the tap would find it: nothing)."""
        if self.redactor is None or message is None:
            return ()
        role = message.role or (Role.REQUEST if direction is Direction.C2S else Role.RESPONSE)
        return values_replaced(self.profile, self.redactor, payload, message, role, method, elided)

    def _fire(self, index: int, rule: FaultRule, rng: random.Random) -> bool:
        if rule.times is not None and self.plan.fired[index] >= rule.times:
            return False
        if rule.p < 1.0 and rng.random() >= rule.p:
            return False
        self.plan.fired[index] += 1
        return True

    def _withheld(
        self, rule: FaultRule, direction: Direction, message: Optional[Message], what: str
    ) -> str:
        side = "request" if direction is Direction.C2S else "response"
        if isinstance(message, (Request, Notification)):  # a server's own request, too
            side = "request" if isinstance(message, Request) else "notification"
        text = f"{WITHHELD} {side}: {what}"
        if rule.kind is FaultKind.ERROR:  # `FrameAction.answer_waits` if it is held
            return f"{text}; answered {rule.code}: {rule.message}"
        if rule.kind is FaultKind.RESET:
            return f"{text}; connection reset ({rule.when} the method)"
        return text

    def _corrupt(
        self, raw: bytes, header: int, size: int, count: int, rng: random.Random
    ) -> tuple[bytes, list[int]]:
        data = bytearray(raw)
        offsets = sorted(rng.sample(range(size), min(count, size)))
        for offset in offsets:
            old = data[header + offset]
            new = old ^ rng.randrange(1, 256)
            # A newline would split a line-framed payload: the fault corrupts, never reframes.
            while self.profile.framing is Framing.LINE and new == 0x0A:
                new = old ^ rng.randrange(1, 256)
            data[header + offset] = new
        return bytes(data), offsets


_WITHHOLDING = (FaultKind.ERROR, FaultKind.RESET, FaultKind.DROP)


def _describe(
    message: Optional[Message], method: Optional[str], size: int, ident: Any, among: int = 1
) -> str:
    if message is None:
        read = "" if ident is None or ident is UNKNOWN else f" id={ident}"
        return f"?{read} (not parsed: too costly) ({size} bytes)"
    ident = "" if message.id is None else f" id={message.id}"
    kind = " (malformed)" if isinstance(message, Malformed) else ""
    if among > 1:  # the oldest's method is a guess: the answer does not say which it is
        which = f"the answer of one of {among} requests waiting with this id"
        return f"?{ident}{kind} ({which}) ({size} bytes)"
    return f"{method or '?'}{ident}{kind} ({size} bytes)"


def received_streams(
    events: Iterable[Event], profile: Profile
) -> dict[tuple[int, Direction], bytes]:
    """Rebuild, per connection and direction, the bytes the receiving side got: the
    recording's streams without the requests the proxy withheld (`rebuild_streams`)."""
    streams = rebuild_streams(events, profile, delivered=True)
    return {key: bytes(stream.data) for key, stream in streams.items()}
