"""The latency histogram of the stats screen: bars in eighth blocks with a count axis on the
left and a latency axis below, as wide as the space it is given.

`histogram()` is the arithmetic; `LatencyHistogram` a rich renderable drawing it at the width
rich offers, so the screen needs no resize handling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from ..analysis.stats import percentile
from ..terminal import format_latency

__all__ = ["LatencyHistogram", "histogram"]

BLOCKS = " ▁▂▃▄▅▆▇█"


def histogram(ordered: Sequence[float], bins: int = 60) -> list[int]:
    """Counts of latencies in ``bins`` equal buckets from 0 to the p99 (slower ones land in
    the last bucket, so one outlier does not flatten the picture). Latencies that are not
    finite numbers (a damaged recording) are left out."""
    finite = [value for value in ordered if math.isfinite(value)]
    if not finite or bins <= 0:
        return [0] * max(bins, 0)
    top = percentile(finite, 99) or finite[-1] or 1.0
    counts = [0] * bins
    for value in finite:
        counts[max(min(int(value / top * bins), bins - 1), 0)] += 1
    return counts


class LatencyHistogram:
    """``height`` rows of bars over ascending ``ordered`` latencies (seconds), the count of
    the tallest bar at the top of the count axis, then the latency axis labelled at 0, the
    middle and the p99 (the last bar also holds the slower ones)."""

    def __init__(self, ordered: Sequence[float], height: int = 4) -> None:
        self.ordered = [value for value in ordered if math.isfinite(value)]
        self.height = height

    def lines(self, width: int) -> list[str]:
        """The histogram as plain lines at most ``width`` cells wide."""
        if not self.ordered:
            return ["no completed exchanges"]
        counts_width = len(f"{len(self.ordered):,}")
        bins = max(width - counts_width - 2, 1)
        counts = histogram(self.ordered, bins)
        tallest = max(counts)
        rows = []
        for row in range(self.height, 0, -1):
            # Each row covers 1/height of the tallest bar, in eighths.
            cells = []
            for count in counts:
                eighths = round(count / tallest * self.height * 8) - (row - 1) * 8
                cells.append(BLOCKS[max(min(eighths, 8), 0)])
            label = f"{tallest:,}" if row == self.height else ""
            axis = "┤" if row == self.height else "│"
            rows.append(f"{label:>{counts_width}} {axis}{''.join(cells)}")
        rows.append(" " * (counts_width + 1) + "└" + "─" * bins)
        top = percentile(self.ordered, 99)
        left, middle, right = "0", format_latency(top / 2), format_latency(top) + " (p99)"
        labels = [" "] * bins
        middle_at = max((bins - len(middle)) // 2, len(left) + 1)
        labels[: len(left)] = left
        if middle_at + len(middle) < bins - len(right) - 1:
            labels[middle_at : middle_at + len(middle)] = middle
        right = right[-bins:]
        labels[bins - len(right) :] = right
        rows.append(" " * (counts_width + 2) + "".join(labels)[:bins])
        return rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = self.lines(options.max_width)
        for index, line in enumerate(lines):
            yield Text(line, style="cyan" if index < len(lines) - 2 else "dim", no_wrap=True)
