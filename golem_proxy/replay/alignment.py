"""Aligning two sequences of methods (one route's exchanges in each trace) in bounded time.

`difflib.SequenceMatcher` finds good alignments but is slow on what users record most: long
runs of one method (a session of ``ping``s). Each longest-block search scans every pair of
equal elements, so it is quadratic on one block and cubic where many short blocks are found
one after another (50,000 ``ping``s against themselves took minutes). So:

* up to `QUICK_PAIRS` pairs of elements, SequenceMatcher aligns the two whole sequences;
* past that, their common beginning and end are paired first (linear), and SequenceMatcher
  aligns what lies between while that is within `QUICK_PAIRS`;
* past that too, the middle is aligned in windows of `WINDOW` elements: each window's common
  run is paired as it goes, SequenceMatcher aligns the window from the first difference, and
  the next window starts where the window's last equal block ends, so what the window left
  unmatched is carried over and an insertion shifts the alignment once. A window with no equal
  block means one trace holds more than a window the other lacks (a block of new calls): the
  alignment looks ahead for the nearest place where `ANCHOR` elements in a row are alike in
  both (the next `RESYNC` elements of each looked up in all of the other, by an index of its
  runs) and goes on from there, what it skipped removed and added; only when none is found is
  the window all removed and added. The time then grows linearly with the length; the price
  is that an element moved further than that is seen as removed and added, and that with few
  distinct methods a run of `ANCHOR` may be alike by chance; the alignment reports that it
  used windows (`Windowed`) so the diff can say so.
"""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Optional

__all__ = ["ANCHOR", "QUICK_PAIRS", "RESYNC", "WINDOW", "Alignment", "Block", "Windowed", "align"]

QUICK_PAIRS = 160_000
"""Largest len(a) * len(b) SequenceMatcher aligns whole. Measured on 2 cores: at 400 x 400 its
worst shapes take 0.2 s (one method, every tenth another) to 0.6 s (one method against two
alternating), common ones far less; 800 x 800 takes 1.6 s and 4.8 s (the cost is cubic)."""

WINDOW = 100
"""Elements of each sequence a window holds. Measured on 2 cores: a window of one method
against every tenth another takes 3.6 ms, against two alternating methods 11 ms (36 and
106 µs an element); at 200 these are 130 and 400 µs an element, so 100 keeps 50,000
exchanges within seconds whatever their shape."""

ANCHOR = 4
"""Elements in a row alike in both sequences where the alignment picks up again after a
window with no equal block: a single equal method is too common to mean much."""

RESYNC = 2_000
"""Elements of A looked at for that place, after each window with no equal block: an
inserted or removed block of calls up to about that long keeps the rest aligned."""

Block = tuple[int, int, int]
"""``(i, j, size)``: ``a[i:i + size] == b[j:j + size]``, as SequenceMatcher's blocks."""


@dataclass(frozen=True)
class Windowed:
    """The sequences were aligned in windows of ``window`` elements over the stretch where
    they differ: ``a_span`` elements of A and ``b_span`` of B between their common beginning
    and end."""

    window: int
    a_span: int
    b_span: int


@dataclass(frozen=True)
class Alignment:
    blocks: list[Block]
    """Equal stretches in increasing order; everything between two is only in A or only in B."""
    windowed: Optional[Windowed] = None
    """Set when the middle was aligned in windows; None when aligned whole."""


def align(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    quick_pairs: int = QUICK_PAIRS,
    window: int = WINDOW,
) -> Alignment:
    """The equal stretches of ``a`` and ``b`` in order: SequenceMatcher's own when
    ``len(a) * len(b) <= quick_pairs``, otherwise as the module says."""
    if len(a) * len(b) <= quick_pairs:
        return Alignment(_whole(a, b, 0, 0))
    head = _common_run(a, b, 0, 0)
    tail = _common_tail(a, b, head)
    a_end, b_end = len(a) - tail, len(b) - tail
    blocks: list[Block] = [(0, 0, head)] if head else []
    windowed = None
    a_mid, b_mid = a[head:a_end], b[head:b_end]
    if len(a_mid) * len(b_mid) <= quick_pairs:
        blocks += _whole(a_mid, b_mid, head, head)
    else:
        blocks += _in_windows(a_mid, b_mid, head, max(1, window))
        windowed = Windowed(max(1, window), len(a_mid), len(b_mid))
    if tail:
        blocks.append((a_end, b_end, tail))
    return Alignment(blocks, windowed)


def _whole(a: Sequence[Hashable], b: Sequence[Hashable], i0: int, j0: int) -> list[Block]:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [(i0 + i, j0 + j, size) for i, j, size in matcher.get_matching_blocks() if size]


def _in_windows(a: Sequence[Hashable], b: Sequence[Hashable], at: int, window: int) -> list[Block]:
    blocks: list[Block] = []
    runs = (_RunIndex(a), _RunIndex(b))
    i = j = 0
    while i < len(a) and j < len(b):
        run = _common_run(a, b, i, j)
        if run:
            blocks.append((at + i, at + j, run))
            i, j = i + run, j + run
            continue
        found = _whole(a[i : i + window], b[j : j + window], 0, 0)
        if not found:
            # More than a window only in one of them: go on where both are alike again.
            anchor = _nearest(a, b, runs, i, j)
            i, j = anchor if anchor is not None else (i + window, j + window)
            continue
        blocks += [(at + i + x, at + j + y, size) for x, y, size in found]
        x, y, size = found[-1]
        i, j = i + x + size, j + y + size
    return blocks


def _common_run(a: Sequence[Hashable], b: Sequence[Hashable], i: int, j: int) -> int:
    """How many elements from ``a[i]`` and ``b[j]`` on are equal."""
    run = 0
    limit = min(len(a) - i, len(b) - j)
    while run < limit and a[i + run] == b[j + run]:
        run += 1
    return run


def _common_tail(a: Sequence[Hashable], b: Sequence[Hashable], head: int) -> int:
    """How many elements the two end with alike, leaving the first ``head`` of each alone."""
    tail = 0
    limit = min(len(a), len(b)) - head
    while tail < limit and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return tail


class _RunIndex:
    """Where each run of `ANCHOR` elements starts in a sequence, to find the nearest place
    two sequences are alike again in time linear in what is looked at."""

    def __init__(self, seq: Sequence[Hashable]) -> None:
        self.seq = seq
        self._starts: Optional[dict[tuple[Hashable, ...], list[int]]] = None

    @property
    def starts(self) -> dict[tuple[Hashable, ...], list[int]]:
        """Built when first needed: most alignments never look ahead."""
        if self._starts is None:
            seq = self.seq
            starts: dict[tuple[Hashable, ...], list[int]] = {}
            for at in range(len(seq) - ANCHOR + 1):
                starts.setdefault(tuple(seq[at : at + ANCHOR]), []).append(at)
            self._starts = starts
        return self._starts

    def ahead(self, other: Sequence[Hashable], i: int, j: int) -> Optional[tuple[int, int, int]]:
        """``(cost, p, q)``: the first run of ``other`` from ``i`` on (within `RESYNC`) that
        this sequence holds from ``j`` on, at ``q``; ``cost`` is what is skipped in all, the
        least of any run looked at. None when there is none."""
        best: Optional[tuple[int, int, int]] = None
        starts = self.starts
        for p in range(i, min(i + RESYNC, len(other) - ANCHOR + 1)):
            if best is not None and p - i >= best[0]:
                break  # nothing further on skips less
            found = starts.get(tuple(other[p : p + ANCHOR]))
            if not found:
                continue
            at = bisect.bisect_left(found, j)
            if at < len(found):
                cost = (p - i) + (found[at] - j)
                if best is None or cost < best[0]:
                    best = (cost, p, found[at])
        return best


def _nearest(
    a: Sequence[Hashable], b: Sequence[Hashable], runs: tuple[_RunIndex, _RunIndex], i: int, j: int
) -> Optional[tuple[int, int]]:
    """The nearest place ``(p, q)`` from ``(i, j)`` on where ``a[p:p + ANCHOR]`` is
    ``b[q:q + ANCHOR]``, the least skipped in all: looked for both ways, A's next `RESYNC`
    runs in all of B and B's in all of A, so a block longer than that only in either is
    passed over. None when there is none."""
    runs_of_a, runs_of_b = runs
    found_in_b = runs_of_b.ahead(a, i, j)  # (cost, p in A, q in B)
    found_in_a = runs_of_a.ahead(b, j, i)  # (cost, q in B, p in A)
    if found_in_b is not None and (found_in_a is None or found_in_b[0] <= found_in_a[0]):
        return found_in_b[1], found_in_b[2]
    if found_in_a is not None:
        return found_in_a[2], found_in_a[1]
    return None
