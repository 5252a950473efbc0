"""What a reading of a recording could not inspect: the gaps in what was observed (by reason,
as `show` names their rows, ``unobserved:REASON``), the requests let go before their answer
(rows of status ``evicted``), the frames the proxy withheld from the client (never recorded),
and the events the recorder could not keep. `check` says them, so that a session it only
partly inspected never reads as a clean, complete pass.

Counted from what the flows and the recording already say (`Flow.gap`, `Flow.let_go`, a
`ProxyAction`'s ``withheld``), never decided again here."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..events import Direction, Event, FaultInjected, GapReason, InterceptStep
from ..terminal import counted, format_size, safe_text
from .flow import Flow

__all__ = ["Coverage", "GapTally", "GapsByReason", "gap_counts_text"]


@dataclass
class GapTally:
    """The gaps of one reason: how many rows, and the bytes they say went by unobserved."""

    gaps: int = 0
    bytes: int = 0

    def to_json(self) -> dict[str, int]:
        return {"gaps": self.gaps, "bytes": self.bytes}


@dataclass
class GapsByReason:
    """Gap rows counted by reason (`GapReason` value), in the order first met. A gap of
    requests let go (``evicted``) is no gap of bytes: it is never counted here (the rows of
    status ``evicted`` are, `Coverage.evicted`)."""

    reasons: dict[str, GapTally] = field(default_factory=dict)

    def add(self, flow: Flow) -> None:
        gap = flow.gap
        if gap is None or gap.reason is GapReason.EVICTED:
            return
        tally = self.reasons.get(gap.reason.value)
        if tally is None:
            tally = self.reasons[gap.reason.value] = GapTally()
        tally.gaps += 1
        tally.bytes += gap.size

    @property
    def gaps(self) -> int:
        return sum(tally.gaps for tally in self.reasons.values())

    @property
    def bytes(self) -> int:
        return sum(tally.bytes for tally in self.reasons.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "gaps": self.gaps,
            "bytes": self.bytes,
            "by_reason": {reason: tally.to_json() for reason, tally in self.reasons.items()},
        }


def gap_counts_text(gaps: GapsByReason) -> str:
    """``80 unobserved:frame-too-large, 76.3 MiB; 1 unobserved:stopped``: each reason's rows
    as `show` names them, with the bytes they say went by (a stop or a restart's session row
    says none)."""
    parts = []
    for reason, tally in gaps.reasons.items():
        part = f"{tally.gaps} unobserved:{reason}"
        if tally.bytes:
            part += f", {format_size(tally.bytes)}"
        parts.append(part)
    return "; ".join(parts)


class Coverage:
    """What was not inspected, gathered as a trace is read in pieces (`add`)."""

    def __init__(self) -> None:
        self.gaps = GapsByReason()
        self.evicted = 0
        """Rows of status ``evicted``: requests let go before their answer, by the proxy
        past its pairing limits or by the reader past what it holds (`Flow.let_go`)."""
        self.withheld: Counter[str] = Counter()
        """Frames the proxy withheld on their way to the client (a response dropped by
        ``--fault drop``, an answer dropped by ``--intercept``), by the fault or step that
        did: never recorded, so never checked. A request withheld is recorded (the client
        sent it) and checked: not counted."""
        self.events_not_recorded = 0
        """Events the recorder could not keep (the disk fell behind: the ``gap`` lines)."""

    def add(self, events: Iterable[Event], flows: Iterable[Flow]) -> None:
        """Count one piece of a trace: its flows and the events they were built from."""
        for flow in flows:
            self.gaps.add(flow)
            self.evicted += flow.let_go
        for event in events:
            if (
                isinstance(event, (FaultInjected, InterceptStep))
                and event.withheld
                and event.direction is Direction.S2C
            ):
                self.withheld[event.fault] += 1

    @property
    def complete(self) -> bool:
        """Nothing of the session went uninspected, as far as the recording tells."""
        return not (self.gaps.gaps or self.evicted or self.withheld or self.events_not_recorded)

    def lines(self) -> list[str]:
        """One line per kind of thing not inspected, none when everything was."""
        lines = []
        gaps = self.gaps
        if gaps.gaps:
            lines.append(
                f"not inspected: {counted(gaps.gaps, 'gap')} in what was observed: "
                f"{gap_counts_text(gaps)}"
            )
        if self.evicted:
            lines.append(
                f"not inspected: {counted(self.evicted, 'request')} let go before an answer "
                "came (status evicted: past the limits of what is held waiting); a later "
                "answer is a row of its own"
            )
        if self.withheld:
            how = ", ".join(f"{n} {safe_text(name, 80)}" for name, n in self.withheld.most_common())
            frames = sum(self.withheld.values())
            lines.append(
                f"not inspected: {counted(frames, 'frame')} the proxy withheld from the client "
                f"on purpose ({how}): never recorded"
            )
        if self.events_not_recorded:
            lines.append(
                f"not inspected: {counted(self.events_not_recorded, 'event')} the recorder "
                "could not keep (the disk fell behind)"
            )
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "unobserved": self.gaps.to_json(),
            "evicted": self.evicted,
            "withheld": {
                "frames": sum(self.withheld.values()),
                "by_action": dict(self.withheld.most_common()),
            },
            "events_not_recorded": self.events_not_recorded,
        }
