"""One row every view shows (`Flow`): a request and its response, or a request still pending,
a notification, an orphan response, a framing error, a gap in what was observed, a GOLEM
connection of `golem-proxy mcp` that ended before a byte crossed it; with how each view
reads it (its status, tone, severity). `golem_proxy.analysis.flows.FlowTracker` builds
them from the events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from golem_core.contract import Severity, Violation
from golem_core.messages import Malformed, Notification, Request
from golem_core.outcome import Outcome
from golem_core.profiles import Profile

from ..events import (
    ConnectionClosed,
    Direction,
    FaultInjected,
    FrameSeen,
    FramingErrorSeen,
    GapReason,
    InterceptStep,
    ObservationLost,
    StreamEnded,
)
from ..status_tone import (
    Tone,
    cut_frame_status,
    cut_status,
    never_delivered_status,
    outcome_tone,
    undelivered_status,
)
from ..terminal import safe_text
from .proxy_notes import proxy_words, under_words
from .server_stderr import ServerStderr

__all__ = ["Flow", "gap_has_size", "gap_size_at_least"]


def gap_size_at_least(gap: ObservationLost) -> bool:
    """Whether ``gap``'s ``size`` is only the least that went by: the gap of a restart of the
    observing process on a connection (`GapReason.RESTARTED`) counts what crossed while no
    observing process ran, not what the one that died had been handed and not recorded (its
    ``detail`` says up to how much more of the connection's may be missing). Every other
    gap's size is what it says, where it says one (`gap_has_size`)."""
    return gap.reason is GapReason.RESTARTED and gap.conn != 0


def gap_has_size(gap: ObservationLost) -> bool:
    """Whether ``gap``'s ``size`` is bytes that went by: not for requests let go
    (`GapReason.EVICTED`: it counts them), nor where it is 0 for want of a count: a session's
    row (connection 0: observation stopped for the rest of the session, or a restart's
    moment) and a connection whose decoding failed (`GapReason.OBSERVER_FAILED`: the rest of
    it went by unobserved)."""
    return gap.conn != 0 and gap.reason not in (GapReason.EVICTED, GapReason.OBSERVER_FAILED)


@dataclass(slots=True)
class Flow:
    """One row. Mutable while pending; complete once it has a response (or never will).
    Slotted: the TUI keeps one per exchange of a recording, hundreds of thousands."""

    number: int
    conn: int
    route: str
    request: Optional[FrameSeen] = None
    response: Optional[FrameSeen] = None
    outcome: Optional[Outcome] = None
    """What the response means (`ExchangeCompleted.outcome`); set with ``response``."""
    frame_error: Optional[FramingErrorSeen] = None
    gap: Optional[ObservationLost] = None
    """Bytes forwarded but not inspected (the observer was behind, a frame was too large to
    hold, requests were let go, or decoding failed): a row of its own, so no view hides it."""
    # Tuples, not lists: most flows have none, and the empty tuple is shared where two empty
    # lists cost ~110 bytes a flow (the TUI keeps hundreds of thousands).
    violations: tuple[Violation, ...] = ()
    faults: tuple[Union[FaultInjected, InterceptStep], ...] = ()
    """Faults the proxy injected into the flow and the steps of its frames' interception."""
    proxy_under: tuple[tuple[int, tuple[Union[FaultInjected, InterceptStep], ...]], ...] = ()
    """Of an MCP tool call: the GOLEM rows of it the proxy acted on, each with its steps,
    placed by the flow tracker as each step landed on a row whose frames name this call
    alone, while the call waited for its answer (fault_rows.py): a failure the proxy made
    under the call is not read as the server's or the plugin's."""
    closed_unanswered: bool = False
    """The request will have no answer: its connection closed first, or the side that was to
    answer ended its stream (``stream_ended``)."""
    unanswered_at: Optional[float] = None
    """With ``closed_unanswered``: when that was known (the close, or the stream's end): the
    request waited until then."""
    stream_ended: Optional[StreamEnded] = None
    """The end of the answering side's stream that left the request unanswered, when that,
    not the connection's close, decided it."""
    connection_failed: Optional[ConnectionClosed] = None
    """A GOLEM connection that ended before a byte crossed it (the upstream refused it, …),
    whose close names the tool calls in flight when it opened (`ConnectionClosed.tool_calls`,
    a recording of `golem-proxy mcp`): a row of its own, under the call it failed."""
    marked: bool = False
    let_go: bool = False
    """The request was let go before its answer, past the limits of what the proxy (or the
    reader) holds: the ``evicted`` gap row after it says how many and why. Its answer, if
    one came, is a row of its own: this one no longer waits, and was not found unanswered."""
    unanswerable: bool = False
    """The request wants no answer (a notification, also a broken one): the row is complete
    as it is, never pending."""
    ended_waiting: str = ""
    """What ended while the request still waited for its answer, so that no answer will be
    read for it (`FlowTracker.end_input`): ``recording`` (a reader read the recording to its
    end, or stopped reading it) or ``session`` (a live view's session ended). The row stays
    pending, as it was left (whether an answer was sent is not known); its status says that
    nothing more came. Empty while its answer may still come."""

    stderr: Optional[ServerStderr] = None
    """What the server of the row's connection (the MCP server `golem-proxy mcp` runs) wrote
    to its stderr, for a row that failed on it (`ServerStderrs`): its last lines while the
    request waited, or before the end that left it unanswered. None for every other row."""
    closed_by_proxy: Optional[ConnectionClosed] = None
    """A connection the proxy itself closed after bytes crossed it (``--idle-timeout``): a row
    of its own, so that a call that fails next on the connection its server kept (the server
    finds it closed) shows who closed it, and why. Not a failure: the user asked for it."""
    answer_changed_in: Optional[int] = None
    """The row its answer became when the proxy changed it (``--fault corrupt``, an edit by
    hand) so that it answered no request any more: the receiver answered, the proxy broke
    it (fault_rows.py). The row stays unanswered, the proxy's doing."""
    answered_in: Optional[ObservationLost] = None
    """The gap that carried the request's answer: a frame too large to observe, whose id the
    tap read and paired (`ObservationLost.answers`). The request was answered, how is not
    known: no failure, not ok either, never pending nor unanswered."""

    @property
    def t(self) -> float:
        for part in (self.request, self.response, self.frame_error, self.gap):
            if part is not None:
                return part.t
        closed = self.connection_failed or self.closed_by_proxy
        return closed.t if closed is not None else 0.0

    @property
    def method(self) -> Optional[str]:
        return self.request.method if self.request is not None else None

    @property
    def is_notification(self) -> bool:
        """The row is a notification: a request that wants no answer, complete as it is."""
        return self.request is not None and isinstance(self.request.message, Notification)

    @property
    def latency(self) -> Optional[float]:
        """Seconds from the request to its answer; None without both, or when the answer's
        time is before the request's (times out of order: the reader notes where)."""
        if self.request is None or self.response is None:
            return None
        latency = self.response.t - self.request.t
        return latency if latency >= 0 else None

    @property
    def request_size(self) -> Optional[int]:
        if self.request is not None:
            return self.request.size
        return self._gap_size(Direction.C2S)

    @property
    def response_size(self) -> Optional[int]:
        if self.response is not None:
            return self.response.size
        if self.answered_in is not None:
            return self.answered_in.size
        return self._gap_size(Direction.S2C)

    @property
    def orphan(self) -> bool:
        """The row is a response that answers no outstanding request, as the tap decided (one
        without a request and without that verdict answers a request not observed, or is no
        reply at all)."""
        return self.request is None and self.response is not None and self.response.orphan

    @property
    def undelivered(self) -> str:
        """Why a frame of the row never reached its receiver, as the proxy decided where it
        forwarded it (`FrameSeen.undelivered`: the answer, or a request one side sent);
        empty when each did, as far as the proxy knows."""
        for part in (self.response, self.request):
            if part is not None and part.undelivered:
                return part.undelivered
        withheld = self.withheld_by
        return f"withheld: {safe_text(withheld, 60)}" if withheld else ""

    @property
    def never_delivered(self) -> bool:
        """The row is a request (not a notification, nor malformed) that never reached its
        receiver, as the proxy decided where it forwarded it, and so has no answer: nothing
        was asked of the receiver, which neither failed it nor can have acted on it."""
        request = self.request
        return (
            request is not None
            and (bool(request.undelivered) or bool(self.withheld_by))
            and self.response is None
            and isinstance(request.message, Request)
        )

    @property
    def withholding(self) -> Optional[Union[FaultInjected, InterceptStep]]:
        """The proxy's step (a fault, an intercept) that withheld the request, recorded though
        never forwarded, as decided where it was withheld (`ProxyAction.withheld`); None when
        none did."""
        for step in self.faults:
            if step.withholds_request:
                return step
        return None

    @property
    def withheld_by(self) -> str:
        """The name of the step that withheld the request (`withholding`) when nothing
        answered it: the receiver never got it; empty otherwise."""
        if self.request is None or self.response is not None:
            return ""
        if not isinstance(self.request.message, Request):
            return ""
        step = self.withholding
        if step is None:
            return ""
        return step.fault if isinstance(step, InterceptStep) else f"--fault {step.fault}"

    @property
    def asked_by_server(self) -> bool:
        """The request (or notification) came from the server: its answer travels c2s."""
        return self.request is not None and self.request.direction is Direction.S2C

    @property
    def size_at_least(self) -> bool:
        """The row's size (`request_size`, `response_size`) is only the least that went by
        (`gap_size_at_least`)."""
        return self.gap is not None and gap_size_at_least(self.gap)

    def _gap_size(self, direction: Direction) -> Optional[int]:
        gap = self.gap
        if gap is None or gap.direction is not direction or not gap_has_size(gap):
            return None
        return gap.size

    @property
    def pending(self) -> bool:
        return (
            self.request is not None
            and self.response is None
            and self.frame_error is None
            and not self.closed_unanswered
            and not self.unanswerable
            and not self.let_go
            and self.answered_in is None
        )

    @property
    def is_error(self) -> bool:
        """The exchange failed: its outcome is not ok (an error envelope, an error in the
        result, ``success: false``, a malformed answer), the request is malformed, a framing
        error, a request that was never answered, a frame of it never reached its receiver
        (`undelivered`: an answer, ``ok`` or not, that the client never got did not succeed
        for the client), or a connection that carried nothing and was reset or refused (one
        closed cleanly before a byte crossed it, a client's probe, is no failure). The one
        decision `stats`, `check`, ``~e`` and ``error`` in JSON read."""
        failed = self.connection_failed
        if (
            self.frame_error is not None
            or self.closed_unanswered
            or (failed is not None and failed.abnormal)
            or self.undelivered
        ):
            return True
        if self.request is not None and isinstance(self.request.message, Malformed):
            return True
        return self.outcome is not None and self.outcome.failed

    def failure(self, profile: Profile) -> str:
        """What failed, in words, for a row that failed (`is_error`), empty for one that did
        not: its `status`, which says it (``TIMEOUT``, ``unanswered``, ``malformed:KIND``,
        ``ok (undelivered: client gone)``), but for a malformed request whose answer is no
        failure, where the status is the answer's: ``malformed:invalid-json request answered
        ok`` (no comma: `check` lists the failures with commas)."""
        if not self.is_error:
            return ""
        status = self.status(profile)
        request, outcome = self.request, self.outcome
        if (
            request is not None
            and isinstance(request.message, Malformed)
            and outcome is not None
            and not outcome.failed
        ):
            return f"{profile.describe(request.message)} request answered {status}"
        return status

    @property
    def error_code(self) -> Optional[Union[int, str]]:
        """The error code of the outcome (from the envelope or from the result), or None."""
        return self.outcome.code if self.outcome is not None else None

    @property
    def out_of_turn(self) -> bool:
        """The answer came out of turn, as the session's tracker decided where the frames were
        decoded (read, never derived again): a GOLEM answer that came after every tool call it
        belongs to had returned (`FrameSeen.late`), or a tool call whose result is another
        GOLEM exchange's answer (`FrameSeen.answer_of`). Every view says so after the status
        (`golem_proxy.analysis.late_answers.status_note`), in the `Tone.OUT_OF_TURN` tone."""
        response = self.response
        return response is not None and (response.late or response.answer_of is not None)

    @property
    def has_violation(self) -> bool:
        return bool(self.violations)

    @property
    def worst_severity(self) -> Optional[Severity]:
        if not self.violations:
            return None
        if any(v.severity is Severity.ERROR for v in self.violations):
            return Severity.ERROR
        return Severity.WARNING

    @property
    def tone(self) -> Tone:
        """How the status is styled (`golem_proxy.status_tone`, the one rule every view uses)."""
        if self.gap is not None or self.let_go or self.answered_in is not None:
            return Tone.UNOBSERVED
        if self.frame_error is not None:
            return Tone.UNDELIVERED if self.frame_error.cut else Tone.MALFORMED
        if self.outcome is not None:
            tone = outcome_tone(self.outcome, self.undelivered)
            return Tone.OUT_OF_TURN if tone is Tone.OK and self.out_of_turn else tone
        if self.request is not None and isinstance(self.request.message, Malformed):
            return Tone.MALFORMED
        if self.never_delivered:
            return Tone.UNDELIVERED  # no failure of the receiver's: it never got it
        failed = self.connection_failed
        if self.closed_unanswered or (failed is not None and failed.abnormal):
            return Tone.FAILED
        return Tone.WAITING  # no answer yet, or a connection closed cleanly before a byte

    def status(self, profile: Profile) -> str:
        """The row's status (`plain_status`) with what the proxy itself did to its frames
        after it (`proxy_words`): ``TIMEOUT (--fault error)``, ``ok (answered by hand)``,
        ``unanswered (withheld: --fault drop)``, ``ok (+31.0 s --fault delay)``: an answer
        the proxy made, withheld or held is never read as its receiver's or sender's."""
        status = self.plain_status(profile)
        if not self.faults and not self.proxy_under:
            return status
        said = [self.withholding] if self.withheld_by else []
        if self.stream_ended is not None and self.stream_ended.cut:
            said += [step for step in self.faults if step.fault == "truncate"]
        words = proxy_words(
            self.faults, [step for step in said if step is not None], self.answer_changed_in
        )
        returned = self.response.t if self.response is not None else None
        under = under_words(self.proxy_under, returned)
        words = "; ".join(part for part in (words, under) if part)
        return f"{status} ({words})" if words else status

    def plain_status(self, profile: Profile) -> str:
        """``ok``, the outcome's text (``INVALID_PARAMS``, ``INVALID_PARAMS (in result)``,
        ``malformed:KIND``, …), ``oversized``, ``pending`` (``pending (recording ended)``,
        ``(session ended)``, once nothing more will be read: `ended_waiting`), ``unanswered``
        (``unanswered (upstream closed)``, or ``(client closed)`` for a server's request, when
        the side that was to answer ended its stream first; ``(truncated by --fault
        truncate)`` when the proxy ended it: `cut_status`), ``undelivered (upstream gone)``
        (a request its receiver never got: `never_delivered`; ``partly delivered (14 of 111
        bytes; upstream gone)`` when it got only its first bytes; ``undelivered (…); 20 of 124
        bytes read before the proxy reset the client`` for a frame the proxy stopped reading,
        ``cut short (…)`` when all it read had reached the receiver: `cut_frame_status`),
        ``answered
        (unobserved:frame-too-large)`` (its answer was too large to observe: `answered_in`),
        ``evicted`` (let go before its answer), ``unobserved:REASON``, ``failed``
        or ``closed`` (a connection that carried nothing: reset or refused, or closed cleanly),
        …; followed by ``(undelivered: WHY)`` when a frame of the row never reached its
        receiver (`undelivered_status`)."""
        if self.connection_failed is not None:
            return "failed" if self.connection_failed.abnormal else "closed"
        if self.closed_by_proxy is not None:
            return "closed by the proxy"
        if self.gap is not None:
            return f"unobserved:{self.gap.reason.value}"
        if self.frame_error is not None:
            error = self.frame_error
            if error.cut:  # the proxy's doing, not its sender's
                return cut_frame_status(error.undelivered, error.detail)
            return error.kind.value
        if self.outcome is not None:
            status = self.outcome.text
        elif self.request is not None and isinstance(
            self.request.message, (Malformed, Notification)
        ):
            status = profile.describe(self.request.message)
        elif self.never_delivered:
            request = self.request
            assert request is not None
            return never_delivered_status(self.undelivered, request.delivered_bytes, request.size)
        elif self.answered_in is not None:
            status = f"answered (unobserved:{self.answered_in.reason.value})"
        elif self.stream_ended is not None and self.stream_ended.cut:
            status = cut_status(self.stream_ended.cut)
        elif self.stream_ended is not None:
            side = "upstream" if self.stream_ended.direction is Direction.S2C else "client"
            status = f"unanswered ({side} closed)"
        elif self.closed_unanswered:
            status = "unanswered"
        elif self.let_go:
            status = "evicted"
        elif self.ended_waiting:
            status = f"pending ({self.ended_waiting} ended)"
        else:
            status = "pending"
        return undelivered_status(status, self.undelivered)
