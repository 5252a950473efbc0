"""Recording lines back to events (docs/recording-format.md): one `LineDecoder` per file, fed
its lines in order. It pairs an exchange line with the frames it names, holding only what such
a line may still name, and pairs a version-1 file's frames once (`v1_pairing`)."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, Callable, Optional

from golem_core.contract import Severity, Violation
from golem_core.framing import FrameErrorKind
from golem_core.pairing import R_ORPHAN_RESPONSE
from golem_core.profiles import Profile

from .. import events
from ..events import Direction, Event
from .answer_of_check import AnswerOfCheck
from .byte_skeleton import outcome_as_recorded
from .frame_reading import event_object, read_frame
from .held_frames import IN_FLIGHT_BYTES, HeldFrames, Pair
from .line_kinds import PLAIN_KINDS, where
from .members import (
    member_base64,
    member_bool,
    member_choice,
    member_direction,
    member_frame_runs,
    member_gap_counts,
    member_int,
    member_number,
    member_optional_int,
    member_optional_str,
    member_str,
    shown,
)
from .schema import SESSION_END_KIND, SPOOL_FULL_KIND, VERSION, Header, RecordingError
from .seq_watch import SeqWatch
from .shared_file import RESTARTED_KIND, STOPPED_KIND
from .step_check import StepCheck
from .time_watch import TimeWatch
from .tool_call_check import ToolCallCheck
from .unheld_exchanges import UnheldExchange, UnheldExchanges
from .v1_pairing import V1Pairing

__all__ = ["RESTARTS_KEPT", "LineDecoder"]

RESTARTS_KEPT = 32
"""The restarts of the observing process a reader keeps, the first ones (`LineDecoder.restarts`):
the notes name the first 20 and count the rest."""

_FRAME_ERRORS = tuple(kind.value for kind in FrameErrorKind)
_SEVERITIES = tuple(severity.value for severity in Severity)
_GAP_REASONS = tuple(reason.value for reason in events.GapReason)
_EVICTED = events.GapReason.EVICTED
_SESSION_KINDS = {
    STOPPED_KIND: events.GapReason.STOPPED,
    RESTARTED_KIND: events.GapReason.RESTARTED,
}
"""The lines that speak of the whole session's observation, by the reason they are read as."""
_SESSION_REASONS = frozenset(_SESSION_KINDS.values())


class LineDecoder:
    """Rebuilds events from lines, pairing exchange lines with the frames they name.

    It holds only what an exchange line may still name: the requests waiting for their answer
    (``expects_answer``) and the answers waiting for their exchange line (``answers``), until
    the exchange or the connection's close, within a bound (`HeldFrames`). A notification,
    an orphan or an answer to a request not held is never held; violations are events of
    their own, never held."""

    def __init__(
        self,
        profile: Profile,
        routes: Optional[dict[str, Profile]] = None,
        version: int = VERSION,
        in_flight: int = IN_FLIGHT_BYTES,
        header: Optional[Header] = None,
    ) -> None:
        self.profile = profile
        self.routes = routes or {}
        self.answer_of = AnswerOfCheck(self.routes, header)
        """Refuses a tool call's ``answer_of`` naming a GOLEM request no line before holds."""
        self.tool_calls = ToolCallCheck(self.routes, header)
        """Refuses a ``tool_calls`` naming an MCP tool call no line before holds."""
        self.unheld = UnheldExchanges()
        """Exchange lines naming frames this reader does not hold (`UnheldExchanges`)."""
        self._number = 0
        self.frames = HeldFrames(in_flight)
        """What an exchange line may still name (`HeldFrames`: within a bound)."""
        self.steps = StepCheck(self.frames, header)
        """Refuses a step of the proxy's whose ``among`` or ``server_request`` the lines
        before it cannot bear out (`decode` only: a reader that holds no frames has none)."""
        self.said: list[events.Event] = []
        """Events the reader makes of no line, for what it let go past its bound (`_let_go`):
        the exchanges of pairs and the gaps of requests, after the event of the line that
        passed it, until taken (`take_said`)."""
        self.said_first: list[events.Event] = []
        """The same, for what comes before the event of the line that let it go: the exchange
        of a pair whose frame number a later frame was given (a damaged file)."""
        self.stopped: Optional[events.ObservationLost] = None
        """Where observation stopped, once that line was read (`GapReason.STOPPED`)."""
        self.restarts: list[events.ObservationLost] = []
        """Where a new observing process took over, in order (`GapReason.RESTARTED`): one a
        restart, each read as the session's gap while no observing process recorded. The
        first `RESTARTS_KEPT` only (a hand-made file of a million took 236 MiB to keep):
        `restart_count` counts them all, `last_restart` is the last."""
        self.restart_count = 0
        self.last_restart: Optional[events.ObservationLost] = None
        self.spool_full: Optional[events.SpoolFull] = None
        """Where the spool reached ``--spool-limit``, once that line was read (the first:
        a spool is never made again after it)."""
        self.v1 = V1Pairing(profile, self.routes) if version == 1 else None
        """Pairs a version-1 file's frames as they are read (its lines do not say)."""
        self.seq = SeqWatch()
        """Where the lines' numbering breaks: lines lost or out of order (`decode` only)."""
        self.ended: Optional[events.SessionEnded] = None
        """The ``session-end`` line, when it is the last event read so far: the session ended
        in order there (a line after it, appended episodes, needs one of its own)."""
        self.times = TimeWatch()
        """Where a stream's times go back: lines out of order (`decode` only)."""
        self.on_frame: Optional[Callable[[events.FrameSeen], events.FrameSeen]] = None
        """What a reader makes of each frame of a line before anything holds it (a view's
        reader leaves large payloads in the file: `RecordingReader`'s ``leave_payloads``)."""

    def decode(self, line: bytes, number: int = 0) -> Optional[Event]:
        """The event of one line (None for a line that makes none), its ``seq`` and ``t``
        watched (``number``: its line number in the file, for `seq` and `times`). Raises
        RecordingError."""
        data, payload = event_object(line)
        self._number = number
        event = self.decode_object(data, payload)
        # Both checked by decode_object.
        kind = data.get("kind")
        self.seq.see(data.get("seq"), kind, number)
        t = float(data.get("t", 0.0))
        self.times.see(t, kind, data.get("conn", 0), data.get("dir"), number)
        if isinstance(event, (events.FaultInjected, events.InterceptStep)):
            self.steps.check(event, lines_lost=self.seq.count > 0)
        return event

    def decode_object(self, data: dict[str, Any], payload: Optional[bytes]) -> Optional[Event]:
        """The event of a line already parsed (`event_object`: its members and verbatim
        payload), checked as `decode` checks it. Raises RecordingError."""
        event = self._decode(data, payload)
        if (
            isinstance(event, events.ConnectionClosed)
            and event.tool_calls
            and self.tool_calls.active
        ):
            self.tool_calls.check(event.tool_calls)
        if self.ended is not None and event is not None and event is not self.ended:
            self.ended = None
        if self.v1 is not None and event is not None and not isinstance(event, events.FrameSeen):
            self.v1.other(event)
        if isinstance(event, events.ConnectionClosed):
            self.frames.forget_connection(event.conn)
            self.steps.closed(event.conn)
        elif isinstance(event, events.ObservationLost) and event.reason is _EVICTED:
            # The views let go what this reader did, named (`HeldFrames.evicted`).
            event = self.frames.evicted(event)
        return event

    def take_said(self) -> list[events.Event]:
        """The events made of no line since the last call (`said`), in order."""
        said, self.said = self.said, []
        return said

    def take_said_first(self) -> list[events.Event]:
        """The events made of no line that come before the last line's (`said_first`)."""
        said, self.said_first = self.said_first, []
        return said

    def _decode(self, data: dict[str, Any], payload: Optional[bytes]) -> Optional[Event]:
        kind = data.get("kind")
        t = member_number(data, "t")
        member_optional_int(data, "seq")  # checked as every member is; `SeqWatch` reads it
        if kind == "frame":
            return self._frame(data, payload, t)
        if kind == "gap":
            self.answer_of.missed()
            self.steps.lost(0)
            self.tool_calls.missed()
            return events.EventsMissed(
                count=member_int(data, "missed", 0), t=t, consumer=member_str(data, "consumer", "")
            )
        conn = member_int(data, "conn", 0)
        # Interned: a large recording names the same few routes on every line.
        route = sys.intern(member_str(data, "route", ""))
        if kind in ("exchange", "server-exchange"):
            # A server-exchange pairs a request the server sent with the client's answer.
            asked, answered = ("c2s", "s2c") if kind == "exchange" else ("s2c", "c2s")
            index = member_int(data, "req")
            answer_key = (conn, answered, member_int(data, "resp"))
            answer = self.frames.frames.get(answer_key)
            if answer is not None and answer.answers is not None and answer.answers != index:
                # A damaged line: the answer says which request it answers (the tap's
                # decision, carried in its frame), and that pair is the exchange; the request
                # the line names is left as it stands.
                index = answer.answers
            request, response = self.frames.take_exchange((conn, asked, index), answer_key)
            if request is None or response is None:
                # Nothing to pair: said, unless this reader told the pair already or let its
                # request go (past its bound), which it says itself.
                if not (self.frames.let_go or self.frames.told_early):
                    self.unheld.see(
                        UnheldExchange(
                            self._number, conn, route, index, answer_key[2],
                            request is not None, response is not None,
                        )
                    )  # fmt: skip
                return None
            # Decided as the tap decides it, from the frames (the line's status is for people),
            # with the profile of the frames' route (the line's may be damaged); but for a
            # frame read from a skeleton, which may not show what the tap decided on.
            return self._exchange(request, response, data)
        if kind == "violation":
            return self._violation(data, conn, route, t)
        plain = PLAIN_KINDS.get(kind) if isinstance(kind, str) else None
        if plain is not None:
            return plain(data, conn, route, t)
        if not isinstance(kind, str):
            raise RecordingError(f"kind must be a string, not {shown(kind)}")
        session = _SESSION_KINDS.get(kind)
        if session is not None:  # the whole session's gap: to the end, or until a restart
            lost = events.ObservationLost(
                conn=0,
                route="",
                direction=Direction.C2S,
                t=t,
                reason=session,
                size=0,
                detail=member_str(data, "detail", ""),
            )
            return self._session(lost)
        if kind == SPOOL_FULL_KIND:
            full = events.SpoolFull(t=t, limit=member_int(data, "limit", 0))
            self.steps.lost(0)
            if self.spool_full is None:
                self.spool_full = full
            return full
        if kind == SESSION_END_KIND:
            ended = self.ended = events.SessionEnded(
                t=t,
                reason=member_str(data, "reason", ""),
                exchanges=member_optional_int(data, "exchanges"),
                errors=member_optional_int(data, "errors"),
                violations=member_optional_int(data, "violations"),
                unanswered=member_optional_int(data, "unanswered"),
                not_recorded=member_optional_int(data, "not_recorded"),
                unobserved=member_gap_counts(data),
                since_restart=member_bool(data, "since_restart", False),
            )
            return ended
        if kind == "unobserved":
            reason = events.GapReason(member_choice(data, "reason", _GAP_REASONS))
            lost = events.ObservationLost(
                **where(data, conn, route, t),
                reason=reason,
                size=member_int(data, "size", 0),
                detail=member_str(data, "detail", ""),
                digest=member_str(data, "digest", ""),
                header=member_base64(data, "header"),
                # Version 1 pairs by id (`V1Pairing`), whose letting go takes the oldest.
                frames=member_frame_runs(data) if self.v1 is None else None,
                answers=member_optional_int(data, "answers"),
            )
            self.steps.lost(conn)
            # Connection 0 is the session's (a copy written before the writer wrote such an
            # event back as its own kind said it this way).
            return self._session(lost) if conn == 0 and reason in _SESSION_REASONS else lost
        return None  # an event kind from a newer writer: skipped, not fatal

    def _session(self, lost: events.ObservationLost) -> events.ObservationLost:
        """Note where observation stopped, or restarted, for the views' notes."""
        self.steps.lost(0)
        if lost.reason is events.GapReason.STOPPED:
            self.stopped = lost
        else:
            self.restart_count += 1
            self.last_restart = lost
            if len(self.restarts) < RESTARTS_KEPT:
                self.restarts.append(lost)
        return lost

    def _violation(
        self, data: dict[str, Any], conn: int, route: str, t: float
    ) -> events.ViolationSeen:
        direction = member_direction(data) if data.get("dir") is not None else None
        frame = member_optional_int(data, "frame")
        found = Violation(
            member_str(data, "rule"),
            member_str(data, "message"),
            member_str(data, "path", "$"),
            Severity(
                member_choice(data, "severity", _SEVERITIES) if "severity" in data else "error"
            ),
            member_optional_str(data, "outcome"),
        )
        # Files written before violations carried ``orphan`` said so by the rule alone.
        orphan = member_bool(data, "orphan", found.rule == R_ORPHAN_RESPONSE.id)
        return events.ViolationSeen(
            conn=conn,
            route=route,
            direction=direction,
            frame_index=frame,
            t=t,
            violation=found,
            orphan=orphan,
        )

    def _frame(self, data: dict[str, Any], payload: Optional[bytes], t: float) -> events.FrameSeen:
        profile = self.profile
        if self.routes:
            profile = self.routes.get(member_str(data, "route", ""), profile)
        frame = read_frame(data, payload, t, profile)
        check = self.answer_of
        if check.active:
            if frame.answer_of is not None:
                check.check(frame.answer_of)
            elif frame.direction is Direction.C2S:
                check.asked(frame.route, frame.conn, frame.index)
            calls = self.tool_calls
            calls.check(frame.tool_calls)
            calls.sent(frame)
        self.steps.frame(frame)
        if self.v1 is not None:
            frame = self.v1.frame(frame)
        elif self.on_frame is not None and payload is not None:
            frame = self.on_frame(frame)
        if frame.answers is not None:
            asked = (frame.conn, frame.direction.reverse.value, frame.answers)
            if not self.frames.waiting(asked):
                # What it answers is not waiting (let go, by the proxy or by this reader,
                # answered already, or never read): no exchange line can pair them, and it is
                # a row of its own.
                return dataclasses.replace(frame, answers=None)
            self._let_go(*self.frames.hold_answer(frame, asked))
        elif frame.expects_answer and frame.is_request:  # as the views hold it (FlowTracker)
            self._let_go(*self.frames.hold_request(frame))
        # A pair held under this frame's number (a damaged file): its exchange is told before
        # the frame, so that the views pair it before the number means the new frame.
        self.said_first.extend(self._exchange(*pair) for pair in self.frames.take_replaced())
        return frame

    def _exchange(
        self,
        request: events.FrameSeen,
        response: events.FrameSeen,
        line: Optional[dict[str, Any]] = None,
    ) -> Event:
        """The exchange of a pair, its outcome decided from its frames; from its ``line`` as
        recorded where a frame read from a skeleton does not show it (`outcome_as_recorded`)."""
        profile = self.routes.get(request.route, self.profile)
        outcome = profile.outcome(request.message, response.message)
        if line is not None and (request.elided or response.elided):
            outcome = outcome_as_recorded(outcome, line)
        return events.ExchangeCompleted(
            conn=request.conn,
            route=request.route,
            request=request,
            response=response,
            outcome=outcome,
        )

    def _let_go(self, gaps: list[events.ObservationLost], pairs: list[Pair]) -> None:
        """Say what the held frames let go to stay within their bound (`HeldFrames._bound`):
        a pair's exchange as its line would have, the requests let go in their gaps."""
        self.said.extend(self._exchange(*pair) for pair in pairs)
        for gap in gaps:
            if self.v1 is not None:
                self.v1.other(gap)  # its own pairing lets them go too
            self.said.append(gap)
