"""What a reading of a recording could not inspect: the gaps in what was observed (by reason,
as `show` names their rows, ``unobserved:REASON``), the requests let go before their answer
(rows of status ``evicted``), the frames the proxy withheld from the client (never recorded),
and the events the recorder could not keep. `check` says them, so that a session it only
partly inspected never reads as a clean, complete pass; and how the recording itself ends
(cut short, still being written, lines lost, exchange lines naming frames it does not hold,
requests still waiting where it ends).

Counted from what the flows and the recording already say (`Flow.gap`, `Flow.let_go`, a
`ProxyAction`'s ``withheld``), never decided again here."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Optional

from ..events import (
    Direction,
    Event,
    FaultInjected,
    GapCount,
    GapReason,
    InterceptStep,
    ObservationLost,
)
from ..recording.shared_file import gap_counts_json
from ..terminal import counted, format_size, safe_text
from .flow import Flow, gap_size_at_least
from .reading_notes import stopped_words, unfinished_reasons
from .trace import FlowReader

__all__ = [
    "WITHHELD_NAMES_KEPT",
    "WITHHELD_NAMES_SHOWN",
    "Coverage",
    "GapTally",
    "GapsByReason",
    "gap_counts_text",
]

WITHHELD_NAMES_KEPT = 64
"""The distinct fault and step names the frames withheld are counted by; the frames of any
other name are counted together (a recording names them, and a hostile one may name each
frame differently: 200,000 names held a 16 MB line and 333 MB)."""
WITHHELD_NAMES_SHOWN = 5
"""The names the text line shows, the most frequent first; the rest are counted."""


@dataclass
class GapTally:
    """The gaps of one reason: how many rows, and the bytes they say went by unobserved."""

    gaps: int = 0
    bytes: int = 0
    at_least: bool = False
    """``bytes`` is only the least that went by: a gap that adds to it says no more
    (`Flow.size_at_least`: a restart's)."""


@dataclass
class GapsByReason:
    """Gap rows counted by reason (`GapReason` value), in the order first met. A gap of
    requests let go (``evicted``) is no gap of bytes: it is never counted here (the rows of
    status ``evicted`` are, `Coverage.evicted`). A restart of the observing process is one
    gap, its session row: the rows it adds to each connection open then (two of 0 bytes on
    an idle one) add the bytes they say went by, not gaps."""

    reasons: dict[str, GapTally] = field(default_factory=dict)

    def add(self, flow: Flow) -> None:
        if flow.gap is not None:
            self.add_gap(flow.gap)

    def add_gap(self, gap: ObservationLost) -> None:
        """Count ``gap``, the event of one row (a live session counts them as they come)."""
        if gap.reason is GapReason.EVICTED:
            return
        gaps = 0 if gap.reason is GapReason.RESTARTED and gap.conn else 1
        self.count(gap.reason, gaps, gap.size, gap_size_at_least(gap))

    def count(
        self, reason: GapReason, gaps: int = 1, size: int = 0, at_least: bool = False
    ) -> None:
        """Count ``gaps`` of ``reason`` that say ``size`` bytes went by (``at_least``: at
        least that many)."""
        tally = self.reasons.get(reason.value)
        if tally is None:
            tally = self.reasons[reason.value] = GapTally()
        tally.gaps += gaps
        tally.bytes += size
        tally.at_least = tally.at_least or at_least

    @property
    def gaps(self) -> int:
        return sum(tally.gaps for tally in self.reasons.values())

    @property
    def bytes(self) -> int:
        return sum(tally.bytes for tally in self.reasons.values())

    @property
    def bytes_at_least(self) -> bool:
        """`bytes` is only the least that went by (`GapTally.at_least`)."""
        return any(tally.at_least for tally in self.reasons.values())

    def counted(self) -> tuple[GapCount, ...]:
        """Each reason's count, as a ``session-end`` line says them."""
        return tuple(
            GapCount(reason=reason, gaps=t.gaps, bytes=t.bytes, bytes_at_least=t.at_least)
            for reason, t in self.reasons.items()
        )

    def to_json(self) -> dict[str, Any]:
        """As a ``session-end`` line says them (its ``unobserved``): the same words."""
        return gap_counts_json(self.counted())


def gap_counts_text(gaps: GapsByReason) -> str:
    """``80 unobserved:frame-too-large, 76.3 MiB; 2 unobserved:restarted, at least 2.5 KiB;
    1 unobserved:stopped``: each reason's rows as `show` names them, with the bytes they say
    went by (a stop or a restart's session row says none), "at least" where that is only the
    least (`GapTally.at_least`)."""
    parts = []
    for reason, tally in gaps.reasons.items():
        part = f"{tally.gaps} unobserved:{reason}"
        if tally.bytes:
            part += f", {'at least ' if tally.at_least else ''}{format_size(tally.bytes)}"
        parts.append(part)
    return "; ".join(parts)


class Coverage:
    """What was not inspected, gathered as a trace is read in pieces (`add`)."""

    def __init__(self) -> None:
        self.gaps = GapsByReason()
        self.evicted = 0
        """Rows of status ``evicted``: requests let go before their answer, by the proxy
        past its pairing limits or by the reader past what it holds (`Flow.let_go`)."""
        self.answered_unobserved = 0
        """Requests answered by a frame too large to observe (`Flow.answered_in`): answered,
        their answers never checked."""
        self.withheld: Counter[str] = Counter()
        """Frames the proxy withheld on their way to the client (a response dropped by
        ``--fault drop`` or withheld by ``--fault reset:when=after`` before its reset, an
        answer dropped by ``--intercept``), by the fault or step that
        did: never recorded, so never checked. A request withheld is recorded (the client
        sent it) and checked: not counted."""
        self.withheld_other = 0
        """Frames withheld by a name past the first `WITHHELD_NAMES_KEPT` distinct ones."""
        self.events_not_recorded = 0
        """Events the recorder could not keep (the disk fell behind: the ``gap`` lines)."""
        self.pending = 0
        """Requests still waiting for their answer where the recording ends: whatever came
        after is not in it (a closed, whole recording has none: its proxy closed every
        connection and said what was left unanswered)."""
        self.unfinished: list[str] = []
        """Why the recording does not end as a finished session's (`unfinished_reasons`)."""
        self.being_written: Optional[bool] = None
        """Its writer still wrote it when it was read to its end (None: cannot be told)."""
        self.seq_breaks = 0
        """Places where the lines' numbering breaks: lines lost or out of order."""
        self.first_seq_break = ""
        """The first of them, in words (``line 5: seq jumps from 4 to 9 (…)``)."""
        self.unpaired = 0
        """Exchange lines naming frames the lines before them do not hold (a line lost, or
        lines edited): they pair nothing, and the flows near them may be wrong."""
        self.first_unpaired = ""
        """The first of them, in words (``line 26: an exchange names request 2 …``)."""

    def add(self, events: Iterable[Event], flows: Iterable[Flow]) -> None:
        """Count one piece of a trace: its flows and the events they were built from."""
        for flow in flows:
            self.gaps.add(flow)
            self.evicted += flow.let_go
            self.answered_unobserved += flow.answered_in is not None
            self.pending += flow.pending
        for event in events:
            if (
                isinstance(event, (FaultInjected, InterceptStep))
                and event.withholds
                and event.direction is Direction.S2C
                and not event.server_request  # recorded as it came: its row says it
            ):
                name = event.fault
                if name in self.withheld or len(self.withheld) < WITHHELD_NAMES_KEPT:
                    self.withheld[name] += 1
                else:
                    self.withheld_other += 1

    def read_end(self, reader: FlowReader) -> None:
        """What the recording read to its end says of itself: how it ends, where its
        numbering breaks, the events its recorder could not keep."""
        self.events_not_recorded = reader.tracker.events_missed
        self.unfinished = unfinished_reasons(reader)
        self.being_written = reader.being_written_at_end
        seq = reader.seq
        self.seq_breaks = seq.count
        if seq.first is not None:
            self.first_seq_break = f"line {seq.first.line}: {seq.first.describe()}"
        unheld = reader.unheld
        self.unpaired = unheld.count
        if unheld.first is not None:
            self.first_unpaired = f"line {unheld.first.line}: {unheld.first.describe()}"

    @property
    def withheld_frames(self) -> int:
        return sum(self.withheld.values()) + self.withheld_other

    @property
    def complete(self) -> bool:
        """Nothing of the session went uninspected, as far as the recording tells: a file
        cut short, still being written, with lines lost, exchange lines that pair nothing
        or requests still waiting where it ends is not the whole session either."""
        return not (
            self.gaps.gaps
            or self.evicted
            or self.answered_unobserved
            or self.withheld_frames
            or self.events_not_recorded
            or self.pending
            or self.unfinished
            or self.seq_breaks
            or self.unpaired
        )

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
        if self.answered_unobserved:
            lines.append(
                f"not inspected: the answers to {counted(self.answered_unobserved, 'request')} "
                "(status answered (unobserved:…)): each came in a frame too large to observe, "
                "whose id says which request it answers; what it says is not known"
            )
        if self.withheld_frames:
            named = self.withheld.most_common()
            parts = [f"{n} {safe_text(name, 80)}" for name, n in named[:WITHHELD_NAMES_SHOWN]]
            others = sum(n for _, n in named[WITHHELD_NAMES_SHOWN:]) + self.withheld_other
            if others:
                parts.append(f"{others} by other names")
            how = ", ".join(parts)
            frames = self.withheld_frames
            lines.append(
                f"not inspected: {counted(frames, 'frame')} the proxy withheld from the client "
                f"on purpose ({how}): never recorded"
            )
        if self.events_not_recorded:
            lines.append(
                f"not inspected: {counted(self.events_not_recorded, 'event')} the recorder "
                "could not keep (the disk fell behind)"
            )
        if self.seq_breaks:
            lines.append(
                "not inspected: lines the recording lacks or holds out of order "
                f"({_first_of(self.first_seq_break, self.seq_breaks, 'other place')}): flows "
                "near them may be wrong"
            )
        if self.unpaired:
            lines.append(
                "not inspected: exchange lines naming frames the lines before them do not "
                f"hold ({_first_of(self.first_unpaired, self.unpaired, 'other')}): flows near "
                "them may be wrong"
            )
        if self.unfinished:
            lines.append(f"not inspected: {self._end_text()} ({'; '.join(self.unfinished)})")
        if self.pending:
            lines.append(
                f"not inspected: {counted(self.pending, 'request')} still waiting for an answer "
                "where the recording ends (pending): no answer to check"
            )
        return lines

    def _end_text(self) -> str:
        if self.being_written:
            return "the rest of the session: the recording is still being written"
        return f"the end of the session: {stopped_words(self.being_written)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "unobserved": self.gaps.to_json(),
            "evicted": self.evicted,
            "answered_unobserved": self.answered_unobserved,
            "withheld": {
                "frames": self.withheld_frames,
                "by_action": dict(self.withheld.most_common()),
                "other_actions": self.withheld_other,
            },
            "events_not_recorded": self.events_not_recorded,
            "lines_lost": {"places": self.seq_breaks, "first": self.first_seq_break or None},
            "unpaired_exchanges": {"lines": self.unpaired, "first": self.first_unpaired or None},
            "unfinished": (
                {"why": self.unfinished, "being_written": self.being_written}
                if self.unfinished
                else None
            ),
            "pending": self.pending,
        }


def _first_of(first: str, count: int, other: str) -> str:
    """``first`` of ``count`` places, the rest counted (``… and 2 other places``)."""
    return f"{first} and {counted(count - 1, other)}" if count > 1 else first
