"""What a proxy session saw, counted as it goes, for the line `proxy` ends with::

    golem-proxy proxy: recorded 32 exchanges (9 errors, 1 violation) to session.jsonl

and, when observation lost bytes, what `check` would say of them (the gaps, by reason, as
`show` names their rows)::

    ...to session.jsonl; 3 gaps in what was observed (3 unobserved:behind, 176.0 MiB)

The tally is a sink of the event hub (`EventHub.attach_sink`), so it counts every event the
recorder is handed, and costs one ``isinstance`` per event: the recording is never read back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..analysis.coverage import GapsByReason, gap_counts_text
from ..events import (
    Event,
    ExchangeCompleted,
    FrameSeen,
    FramingErrorSeen,
    GapReason,
    ObservationLost,
    ProxyAction,
    ViolationSeen,
)
from ..terminal import counted, safe_text

__all__ = ["SessionTally"]


@dataclass
class SessionTally:
    exchanges: int = 0
    errors: int = 0
    """Exchanges that failed (`ExchangeCompleted.is_error`): answered with an error, or
    whose answer never reached the client."""
    violations: int = 0
    requests: int = 0
    """Requests that wanted an answer (`FrameSeen.expects_answer`): those beyond `exchanges`
    have none in the recording (unanswered, dropped, lost, or answered unpaired). In a process
    that took over from one that died, with the requests the recording had in flight then
    (`held_again`): their answers count among its exchanges."""
    framing_errors: int = 0
    """Bytes that framed no message (oversized, truncated): each a row of its own in `show`,
    and a failure in `stats` and `check`."""
    cut_short: int = 0
    """Frames never delivered that the proxy stopped reading part-way (`FramingErrorSeen.cut`):
    rows of their own, and no peer's framing error."""
    undelivered: int = 0
    """Requests that wanted an answer and never reached their receiver
    (`FrameSeen.undelivered`): among the `unanswered`, and no receiver's doing."""
    answered_unobserved: int = 0
    """Requests answered by a frame too large to observe, whose id the tap read
    (`ObservationLost.answers`): answered, not exchanges (no answer was inspected)."""
    withheld_asks: int = 0
    """Requests of the server's own the proxy withheld from the client (`ProxyAction.
    withholds_request`): the client never had them to answer, so they are not among the
    `unanswered` (`show` says them ``undelivered (withheld: --fault drop)``)."""
    gaps: GapsByReason = field(default_factory=GapsByReason)
    """The gaps in what was observed (``unobserved`` rows), as `check` counts them: the
    exchanges they hid are in no count above, so the closing line says them apart."""

    def __call__(self, event: Event) -> None:
        if isinstance(event, ExchangeCompleted):
            self.exchanges += 1
            self.errors += event.is_error
        elif isinstance(event, FrameSeen):
            self.requests += event.expects_answer
            self.undelivered += event.expects_answer and bool(event.undelivered)
        elif isinstance(event, ViolationSeen):
            self.violations += 1
        elif isinstance(event, FramingErrorSeen):
            if event.cut:  # a frame the proxy cut is no peer's error
                self.cut_short += 1
            else:
                self.framing_errors += 1
        elif isinstance(event, ObservationLost):
            self.answered_unobserved += event.answers is not None
            self.gaps.add_gap(event)
        elif isinstance(event, ProxyAction):
            # A notification has no id: it was never waited for.
            asks = event.server_request and event.withholds and event.message_id is not None
            self.withheld_asks += asks

    @property
    def unanswered(self) -> int:
        """Requests that wanted an answer and have none in the recording (a process that
        took over counts those it found in flight: `held_again`), but the server's the proxy
        withheld (`withheld_asks`)."""
        answered = self.exchanges + self.answered_unobserved + self.withheld_asks
        return max(0, self.requests - answered)

    def held_again(self, requests: int) -> None:
        """A process taking over waits again for ``requests`` the recording has in flight."""
        self.requests += requests

    def took_over(self) -> None:
        """This process took over from an observing process that died: the restart is a gap
        (its ``observation-restarted`` line, written by the forwarding process, is no event
        here; the rows of the connections open then are, and add their bytes)."""
        self.gaps.count(GapReason.RESTARTED)

    def unobserved(self) -> str:
        """``; 3 gaps in what was observed (3 unobserved:behind, 176.0 MiB)``, as `check`
        words them, or nothing when observation lost nothing."""
        gaps = self.gaps
        if not gaps.reasons:
            return ""
        return f"; {counted(gaps.gaps, 'gap')} in what was observed ({gap_counts_text(gaps)})"

    def counts(self) -> str:
        """``32 exchanges (9 errors, 1 violation)``, and ``; 3 requests without an answer
        (1 never delivered)`` and ``; 1 framing error`` when some are: the exchanges are the
        answered requests, not every row `show` lists."""
        left = self.unanswered
        more = f"; {counted(left, 'request')} without an answer" if left > 0 else ""
        if left > 0 and self.undelivered:
            more += f" ({min(left, self.undelivered)} never delivered)"
        if self.answered_unobserved:
            more += (
                f"; {counted(self.answered_unobserved, 'request')} answered in a frame too "
                "large to observe"
            )
        if self.withheld_asks:
            withheld = counted(self.withheld_asks, "request")
            more += f"; {withheld} of the server's withheld from the client"
        if self.framing_errors:
            more += f"; {counted(self.framing_errors, 'framing error')}"
        if self.cut_short:
            more += f"; {counted(self.cut_short, 'frame')} never delivered, read in part"
        return (
            f"{counted(self.exchanges, 'exchange')} ({counted(self.errors, 'error')}, "
            f"{counted(self.violations, 'violation')}{more})"
        )

    def summary(
        self,
        record_path: Optional[str],
        not_recorded: int = 0,
        failure: Optional[str] = None,
        *,
        command: str = "proxy",
        since_restart: bool = False,
        cut_short: Optional[str] = None,
    ) -> str:
        """The closing line of ``golem-proxy COMMAND``: what was recorded and where, or that
        nothing was (no ``--record``). ``not_recorded`` events the recorder could not keep,
        and the ``failure`` that stopped the recording, are said too. ``since_restart``: the
        counts are those of an observing process that took over from one that died, not the
        whole session's (its requests without an answer include those in flight when it took
        over: it waited for their answers too). ``cut_short``: why the recording ends with no
        ``session-end`` line (the session did not end in order), said first. The gaps in what
        was observed are said last (`unobserved`)."""
        prefix = f"golem-proxy {command}: "
        if since_restart:
            prefix += "since observation restarted, "
        counts = self.counts()
        unobserved = self.unobserved()
        if record_path is None:
            return f"{prefix}{counts}, not recorded (no --record){unobserved}"
        path = safe_text(record_path)
        if failure is not None:
            return (
                f"{prefix}saw {counts}; the recording {path} stopped early ({safe_text(failure)})"
                + unobserved
            )
        if cut_short is not None:
            line = f"{prefix}the recording {path} ends cut short: {cut_short}; {counts} recorded"
        else:
            line = f"{prefix}recorded {counts} to {path}"
        if not_recorded:
            line += f"; {counted(not_recorded, 'event')} not recorded (the disk fell behind)"
        return line + unobserved
