"""The one status → style rule: how every view (the live log, ``show``, the TUI) colours an
outcome or a row's status. Views ask `outcome_tone` (an exchange) or ``Flow.tone`` (a row)
and style the `Tone` with `TONE_STYLES` (rich) or `Tone.component` (the TUI's CSS classes);
none decides it again from the message type or the status text.
"""

from __future__ import annotations

import enum

from golem_core.outcome import Outcome, OutcomeKind

__all__ = [
    "TONE_STYLES",
    "Tone",
    "cut_frame_status",
    "cut_status",
    "never_delivered_status",
    "outcome_tone",
    "undelivered_status",
]


class Tone(enum.Enum):
    """What a status tells the reader at a glance."""

    OK = "ok"
    FAILED = "failed"
    """The application failed: an error envelope, an error in the result, ``success: false``,
    or a request never answered."""
    MALFORMED = "malformed"
    """The protocol broke: a malformed message, an id not echoed, a framing error."""
    WAITING = "waiting"
    """No answer yet, or nothing to answer (a connection closed cleanly before a byte
    crossed it)."""
    UNOBSERVED = "unobserved"
    """Bytes forwarded but not inspected."""
    UNDELIVERED = "undelivered"
    """Answered, but the answer never reached the client (it was gone); or a request that
    never reached the upstream (``undelivered (upstream gone)``)."""
    OUT_OF_TURN = "out-of-turn"
    """Answered, but out of turn (`golem_proxy.analysis.late_answers`): a GOLEM answer that
    came after its tool call had returned, or a tool call whose result is another exchange's
    answer. An ``ok`` that is not what it seems: a warning, never ok-green."""

    @property
    def component(self) -> str:
        """The TUI flows table's component class for a row of this tone (app.tcss)."""
        return f"flows-table--{self.value}"


TONE_STYLES: dict[Tone, str] = {
    Tone.OK: "green",
    Tone.FAILED: "red",
    Tone.MALFORMED: "magenta",
    Tone.WAITING: "yellow",
    Tone.UNOBSERVED: "yellow",
    Tone.UNDELIVERED: "yellow",
    Tone.OUT_OF_TURN: "dark_orange",
}
"""The rich style of each tone, for the log and the tables printed by the commands."""

_OUTCOME_TONES = {
    OutcomeKind.OK: Tone.OK,
    OutcomeKind.ERROR: Tone.FAILED,
    OutcomeKind.ERROR_IN_RESULT: Tone.FAILED,
    OutcomeKind.UNSUCCESSFUL: Tone.FAILED,
    OutcomeKind.MALFORMED: Tone.MALFORMED,
}


def outcome_tone(outcome: Outcome, undelivered: str = "") -> Tone:
    """The tone of an exchange's outcome (``undelivered``: why its answer never reached the
    side that asked, if it did not: an ``ok`` that nobody got is not shown as one)."""
    tone = _OUTCOME_TONES[outcome.kind]
    return Tone.UNDELIVERED if undelivered and tone is Tone.OK else tone


def never_delivered_status(undelivered: str, delivered: int = 0, size: int = 0) -> str:
    """The status of a request its receiver never got whole (``undelivered``: why, as the
    proxy decided where it forwarded it): ``undelivered (upstream gone)``, or, when its
    first ``delivered`` bytes of ``size`` went before that (`FrameSeen.delivered_bytes`),
    ``partly delivered (14 of 111 bytes; upstream gone)``: part of a frame, on which no
    receiver can act."""
    if delivered > 0:
        return f"partly delivered ({delivered:,} of {size:,} bytes; {undelivered})"
    return f"undelivered ({undelivered})"


def cut_frame_status(undelivered: str, read: str) -> str:
    """The status of a frame the proxy itself cut short (`FramingErrorSeen.cut`), no framing
    error of its sender's (``read``: its ``detail``): ``undelivered (upstream unreachable:
    connection refused); 20 of 124 bytes read before the proxy reset the client`` when some
    of what was read never reached the receiver; else, everything read having gone on,
    ``cut short (241,152 of 16,777,272 bytes read before the client's reset)``."""
    if not undelivered:
        return f"cut short ({read})"
    return f"undelivered ({undelivered}); {read}"


def cut_status(cut: str) -> str:
    """The status of a request left unanswered when the proxy itself ended the answering
    side's stream (`StreamEnded.cut`: ``--fault truncate``), not that side."""
    return f"unanswered (truncated by {cut})"


def undelivered_status(status: str, undelivered: str) -> str:
    """A status as every view shows it: ``ok (undelivered: client gone)`` when a frame of
    the exchange never reached its receiver (``undelivered``: why; empty: it did)."""
    return f"{status} (undelivered: {undelivered})" if undelivered else status
