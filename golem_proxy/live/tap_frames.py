"""A decoded frame's events: what the tap (tap.py) publishes about each whole frame it decodes.

For one connection, a frame is checked against the profile's contract (and, for a client's
request, the method catalogue); a response is paired with its request (`ConnectionPairing`,
shared with the tap); the redaction rules are applied, and a value they replaced is also
replaced where it recurs in the connection's later frames (`FrameRedaction`: a plugin echoing
a layer name in its error message); the frame is numbered in its direction, marked with what the
forwarding side said of its bytes (undelivered, or when they arrived) and given the
session's decision (`Annotator`); then it is published, with its violations and, for an
answer, the exchange it completes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Optional, Protocol

from golem_core.catalogue import MethodCatalogue
from golem_core.contract import Violation, violation
from golem_core.framing import Frame
from golem_core.messages import Malformed, MalformedKind, Request, Role
from golem_core.pairing import R_ORPHAN_RESPONSE as R_ORPHAN
from golem_core.pairing import Pending
from golem_core.profiles import Profile

from ..analysis.late_answers import late_violation
from ..events import Direction, Event, ExchangeCompleted, FrameSeen
from ..slot_init import slot_init
from .frame_redaction import FrameRedaction
from .read_on import READ_ON_CHUNKS
from .redact import Redactor
from .tap_limits import TapVerdict
from .tap_pairing import ConnectionPairing, frame_method
from .tap_parse import TooCostly, parse_elided

__all__ = ["Annotator", "FramePublisher", "Publish"]

Publish = Callable[[Event], None]


class ArrivalMark(Protocol):
    """The session's decision on the frames one read completed, made as they arrived
    (`Annotator.at_arrival`): applied to each as it is decoded."""

    def __call__(self, frame: FrameSeen) -> FrameSeen: ...

    def passed(self) -> None:
        """No frame of that read waits to be decoded any more (they were, or it completed
        none, or the connection ended)."""
        ...


class Annotator(Protocol):
    """What the session decides about a frame, once, before anyone sees it (`golem-proxy mcp`:
    the tool call a GOLEM frame belongs to, `golem_proxy.live.attribution.ToolCallTracker`)."""

    def annotate(self, frame: FrameSeen, answers: Optional[FrameSeen] = None) -> FrameSeen:
        """``frame`` with the decision as it stands now; ``answers``: the request frame it
        answers, whose decision an answer may take."""
        ...

    def at_arrival(self) -> ArrivalMark:
        """The decision as it stands now, for a frame that arrived now and is decoded
        later (what `annotate` would do to it now)."""
        ...


# Fatal for --enforce-limits: the frame cannot be trusted to mean what it says.
_ENFORCED_MALFORMED = (MalformedKind.INVALID_UTF8, MalformedKind.INVALID_JSON)
# Each frame and answer builds these: their generated __init__ is the slower way (slot_init.py).
_frame_seen = slot_init(FrameSeen)
_exchange_completed = slot_init(ExchangeCompleted)


class Violated(Protocol):
    """How the tap publishes a violation found in a frame (`ConnectionTap._violated`)."""

    def __call__(
        self,
        direction: Direction,
        index: Optional[int],
        t: float,
        found: Violation,
        orphan: bool = False,
    ) -> None: ...


Evicted = Callable[[Direction, list[Pending[FrameSeen]], float], None]
"""How the tap reports the requests let go past the pending limits (`GapPublisher.evicted`)."""

Unparsed = Callable[[Direction, Frame, float, int, str], None]
"""How the tap reports a frame too costly to parse: what its parse would have held, and why
its bytes never reached their receiver, if they did not (`ConnectionTap._unparsed`)."""


class FramePublisher:
    """One connection's whole frames, both directions, turned into events (see the module
    docstring). The tap hands each over with `frame_decoded`."""

    def __init__(
        self,
        conn: int,
        route: str,
        profile: Profile,
        publish: Publish,
        pairing: ConnectionPairing,
        violated: Violated,
        evicted: Evicted,
        unparsed: Unparsed,
        *,
        parse_limit: Optional[int] = None,
        catalogue: Optional[MethodCatalogue] = None,
        redactor: Optional[Redactor] = None,
        annotate: Optional[Annotator] = None,
    ) -> None:
        self.conn = conn
        self.route = route
        self.profile = profile
        self.publish = publish
        self._pairing = pairing
        self._violated = violated
        self._evicted = evicted
        self._unparsed = unparsed
        self._parse_limit = parse_limit
        self.catalogue = catalogue
        self._builtins = profile.builtins_of(route)
        self._redaction = FrameRedaction(profile, redactor)
        """The rules, and the values they replaced, hidden where they come back."""
        self.annotate = annotate
        self._arrivals: dict[Direction, deque[tuple[float, ArrivalMark]]]
        self._arrivals = {}
        """Per direction, the `arrived` marks not passed yet, oldest first: the time of the
        frames read then, and the session's decision as it stood then. Several when the path
        read on behind a frame it held (read_on.py); a mark older than a frame decoded is
        passed (the chunk it marked completed no frame, or its frames were decoded). Only the
        newest are kept: the frames not decoded yet are those of the read the path is going
        through and of the reads it read on behind it, at most `READ_ON_CHUNKS`."""
        self._frame_index = {Direction.C2S: 0, Direction.S2C: 0}
        self._undelivered: dict[Direction, tuple[str, int]] = {}
        """Per direction, from the mark on: why its bytes did not reach their receiver, and
        how many bytes of the frame then in progress had (`mark_undelivered`)."""

    def mark_undelivered(self, direction: Direction, why: str, buffered: int) -> None:
        """The frames of ``direction`` ended from now on never reached their receiver
        (``why``); of the frame in progress, ``buffered`` bytes had
        (`ConnectionTap.mark_undelivered`). The first mark stays."""
        if direction not in self._undelivered:
            self._undelivered[direction] = (why, buffered)

    def undelivered(self, direction: Direction) -> tuple[str, int]:
        """For the next frame, framing error or discarded bytes of ``direction``: why its
        bytes never reached their receiver (empty: they did), and how many of its first
        bytes had (only the first thing ended after the mark: the frame then in progress)."""
        undelivered, delivered_bytes = self._undelivered.get(direction, ("", 0))
        if delivered_bytes:
            self._undelivered[direction] = (undelivered, 0)
        return undelivered, delivered_bytes

    def last_index(self, direction: Direction) -> int:
        """The number of the frame of ``direction`` published last (-1: none yet)."""
        return self._frame_index[direction] - 1

    def number_from(self, next_index: tuple[int, int]) -> None:
        """Number the frames on from ``next_index`` (client's, server's)."""
        self._frame_index = {Direction.C2S: next_index[0], Direction.S2C: next_index[1]}

    def arrived(self, direction: Direction, t: float) -> None:
        """Frames of ``direction`` were read at ``t``: the session's decision as it stands
        now is theirs (`ConnectionTap.arrived`)."""
        if self.annotate is not None:
            marks = self._arrivals.setdefault(direction, deque(maxlen=2 * READ_ON_CHUNKS))
            if len(marks) == marks.maxlen:
                marks.popleft()[1].passed()
            marks.append((t, self.annotate.at_arrival()))

    def marks_passed(self) -> None:
        """The connection ended: no frame of the reads marked (`arrived`) waits any more."""
        for marks in self._arrivals.values():
            while marks:
                marks.popleft()[1].passed()

    def _decoded_unannotated(self, direction: Direction, t: float) -> None:
        """A frame of ``direction`` read at ``t`` was decoded without the session's decision
        (too costly to parse): the reads marked until then wait no more."""
        for mark_t, mark in self._arrivals.get(direction, ()):
            if mark_t > t:
                break
            mark.passed()

    def _annotated(
        self, direction: Direction, seen: FrameSeen, request: Optional[FrameSeen]
    ) -> FrameSeen:
        """``seen`` with the session's decision: as it stood when the frame arrived, when
        its direction was marked then (`arrived`: the mark's time is the frame's), else now."""
        assert self.annotate is not None
        marks = self._arrivals.get(direction)
        if request is None and marks:
            while marks and marks[0][0] < seen.t:
                marks.popleft()[1].passed()
            if marks and marks[0][0] == seen.t:
                return marks[0][1](seen)
        return self.annotate.annotate(seen, request)

    def scrubbed(self, raw: bytes) -> tuple[bytes, tuple[str, ...]]:
        """``raw``, bytes no frame was decoded from (a frame cut short, an oversized frame's
        body), with the values the session's redaction replaced before masked in it (as long
        as they were: these bytes are counted by their length), and ``("echo",)`` when any
        was: no rule can find its path in them."""
        if not self._redaction or not self._redaction.echoes:
            return raw, ()
        scrubbed = self._redaction.echoes.mask_bytes(raw)
        return scrubbed, (() if scrubbed is raw else ("echo",))

    def learn(self, learned: Iterable[str]) -> None:
        """Remember ``learned``, the values the redaction rules replace in a frame that
        arrived and is not recorded as it came, so that they are hidden where they come back;
        publish nothing (`ConnectionTap.learn_unrecorded`)."""
        if self._redaction:
            self._redaction.echoes.remember(learned)

    def frame_decoded(self, direction: Direction, frame: Frame, t: float) -> Optional[TapVerdict]:
        """Publish the events of ``frame``, a whole frame the tap decoded from ``direction``
        at ``t``: the frame, its violations, and for an answer its exchange. Returns a verdict
        when the frame breaks the limits (`TapVerdict`: a malformed frame)."""
        # What the direction implies; a profile whose servers send requests types a frame by
        # its members, so ``message.role`` is what it is.
        role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
        payload = frame.payload
        try:
            message, text, elided = parse_elided(self.profile, payload, role, self._parse_limit)
        except TooCostly as costly:
            undelivered, _ = self.undelivered(direction)
            self._unparsed(direction, frame, t, costly.cost, undelivered)
            self._decoded_unannotated(direction, t)
            return None
        role = message.role or role
        asker = direction if role is Role.REQUEST else direction.reverse
        # The checks search the payload's bytes only for escapes (a backslash, which no
        # opaque character is): the elided text answers as the payload does, and a 16 MiB
        # capture's blob is not searched again.
        if role is Role.REQUEST and direction is Direction.S2C:
            violations = self.profile.check_server_request(message, text)
        else:
            violations = self.profile.check_message(message, text)
        if self.catalogue is not None and isinstance(message, Request) and asker is Direction.C2S:
            violations.extend(self.catalogue.check_request(message, self._builtins))
        # A response is paired first, so that method-scoped redaction rules apply to it too.
        answered = None if role is Role.REQUEST else self._pairing.answer(asker, message)
        request = answered.request if answered is not None else None
        redacted: tuple[str, ...] = ()
        if self._redaction:
            method = frame_method(message, request.method if request else None)
            done = self._redaction.frame(payload, message, role, method, elided)
            payload, message, redacted, elided = (
                done.payload, done.message, done.redacted, done.elided
            )  # fmt: skip
        index = self._frame_index[direction]
        self._frame_index[direction] = index + 1
        # The pairing decision, carried by the frame so that no view makes it again.
        expects_answer = role is Role.REQUEST and self.profile.expects_response(message)
        orphan = answered is not None and answered.orphan
        undelivered, delivered_bytes = self.undelivered(direction)
        seen = _frame_seen(
            conn=self.conn,
            route=self.route,
            direction=direction,
            index=index,
            t=t,
            size=frame.size,
            payload=payload,
            message=message,
            redacted=redacted,
            elided=elided,
            expects_answer=expects_answer,
            answers=request.index if request is not None else None,
            orphan=orphan,
            undelivered=undelivered,
            delivered_bytes=min(delivered_bytes, frame.size),
        )
        if self.annotate is not None:
            seen = self._annotated(direction, seen, request)
            if seen.late:  # decided by the session's tracker now: its warning with it
                violations.append(late_violation(seen.tool_calls or (), seen.undelivered))
        self.publish(seen)
        for found in violations:
            self._violated(direction, index, t, found)
        if role is Role.REQUEST:
            self._evicted(direction, self._pairing.hold(direction, message, seen), t)
        elif orphan:
            verdict_found = violation(
                R_ORPHAN, f"response id {message.id!r} answers no outstanding request", "$.id"
            )
            self._violated(direction, index, t, verdict_found, orphan=True)
        elif request is not None:
            # The pair's own checks name the response; the exchange carries no copy of them.
            for found in self.profile.check_exchange(request.message, message):
                self._violated(direction, index, t, found)
            self.publish(
                _exchange_completed(
                    conn=self.conn,
                    route=self.route,
                    request=request,
                    response=seen,
                    outcome=self.profile.outcome(request.message, message),
                )
            )
        if isinstance(message, Malformed) and message.kind in _ENFORCED_MALFORMED:
            return TapVerdict(f"{direction.value} malformed frame: {message.detail}")
        return None
