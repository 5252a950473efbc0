"""Watching a recording's line numbers (``seq``) as it is read: lines lost or out of order.

The writer numbers the event lines it writes 1, 2, 3, … (docs/recording-format.md); a new
observing process taking over, or replay appending episodes, goes on from the last number in
the file. One exception is the writer's own: when the disk fell behind, the events it could not
keep had their numbers already, and the ``gap`` line that counts them is numbered after the
event it is written before (the recorder numbers an event before it knows it must say so).
Blank lines and lines without a ``seq`` take no number."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["SeqJump", "SeqWatch"]

_GAP_KIND = "gap"


@dataclass(frozen=True)
class SeqJump:
    """Where the numbering first broke: the line, the number before it and the line's."""

    line: int
    before: int
    after: int

    def describe(self) -> str:
        """``seq jumps from 10 to 31 (20 lines lost or out of order)``, or ``goes back``."""
        if self.after > self.before:
            lost = self.after - self.before - 1
            lines = "1 line" if lost == 1 else f"{lost} lines"
            return f"seq jumps from {self.before} to {self.after} ({lines} lost or out of order)"
        if self.after == self.before:
            return f"seq {self.after} comes twice (a line repeated, or lines out of order)"
        return f"seq goes back from {self.before} to {self.after} (lines out of order)"


class SeqWatch:
    """Told each event line's ``seq`` and kind in file order; keeps the first place the
    numbering breaks and how many places do."""

    def __init__(self) -> None:
        self.first: Optional[SeqJump] = None
        self.count = 0
        self._last: Optional[int] = None
        self._gap: Optional[int] = None  # the number of a gap line just read

    def see(self, seq: Optional[int], kind: object, line: int) -> None:
        if seq is None:
            return
        if kind == _GAP_KIND:
            # Numbered after the event that follows it: checked by that event's number.
            self._gap = seq
            return
        gap, self._gap = self._gap, None
        if gap is not None and seq in (gap - 1, gap + 1):
            self._last = max(seq, gap)
            return
        expected = None if self._last is None else self._last + 1
        if gap is not None:
            expected = gap + 1
        if expected is not None and seq != expected:
            self.count += 1
            if self.first is None:
                self.first = SeqJump(line, expected - 1, seq)
        self._last = seq

    def see_exchange(self, request: int, response: int, exchange: int, line: int) -> None:
        """The numbers of a whole exchange's three lines (request frame, response frame,
        exchange line) from ``line`` on: `see` for each, in one step when they follow on."""
        if self._gap is None and self._last == request - 1 == response - 2 == exchange - 3:
            self._last = exchange
            return
        self.see(request, "frame", line)
        self.see(response, "frame", line + 1)
        self.see(exchange, "exchange", line + 2)
