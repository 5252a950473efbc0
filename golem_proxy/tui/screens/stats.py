"""The `s` screen: per-method counts, error rates and latency percentiles of the flows in
view, with a latency histogram. The numbers are computed here, small and self-contained;
they describe exactly the rows the table shows."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Sparkline, Static

from golem_core.profiles import Profile

from ...flows import Flow
from ..render import flow_label, fmt_latency

__all__ = ["MethodStats", "StatsScreen", "histogram", "method_stats", "percentile"]


@dataclass
class MethodStats:
    method: str
    count: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)

    @property
    def error_rate(self) -> float:
        return self.errors / self.count if self.count else 0.0


def percentile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` percentile (0-100) of an ascending sequence; nan when empty."""
    if not ordered:
        return math.nan
    rank = max(math.ceil(q / 100 * len(ordered)), 1)
    return ordered[min(rank, len(ordered)) - 1]


def method_stats(flows: Sequence[Flow]) -> list[MethodStats]:
    """One entry per method (most called first), plus ``(all)`` last; latencies ascending."""
    by_method: dict[str, MethodStats] = {}
    total = MethodStats("(all)")
    for flow in flows:
        name = flow_label(flow)
        entry = by_method.get(name)
        if entry is None:
            entry = by_method[name] = MethodStats(name)
        for target in (entry, total):
            target.count += 1
            target.errors += flow.is_error
            if flow.latency is not None:
                target.latencies.append(flow.latency)
    ordered = sorted(by_method.values(), key=lambda entry: (-entry.count, entry.method))
    for entry in [*ordered, total]:
        entry.latencies.sort()
    return [*ordered, total]


def histogram(ordered: Sequence[float], bins: int = 60) -> list[int]:
    """Counts of latencies in ``bins`` equal buckets from 0 to the p99 (slower ones land in
    the last bucket, so one outlier does not flatten the picture)."""
    if not ordered:
        return [0] * bins
    top = percentile(ordered, 99) or ordered[-1] or 1.0
    counts = [0] * bins
    for value in ordered:
        counts[min(int(value / top * bins), bins - 1)] += 1
    return counts


class StatsScreen(Screen[None]):
    DEFAULT_CSS = """
    StatsScreen > Vertical { padding: 0 1; }
    StatsScreen #stats-title { text-style: bold; margin-bottom: 1; }
    StatsScreen DataTable { height: 1fr; }
    StatsScreen Sparkline { height: 4; margin: 1 0 0 0; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,s,q", "app.pop_screen", "Back"),
    ]

    def __init__(self, flows: Sequence[Flow], profile: Profile, scope: str) -> None:
        super().__init__()
        self.rows = method_stats(flows)
        self.profile = profile
        self.scope = scope

    def compose(self) -> ComposeResult:
        total = self.rows[-1]
        with Vertical():
            yield Static(
                Text(
                    f"Statistics of {self.scope}: {total.count:,} flows, "
                    f"{total.errors:,} errors ({total.error_rate:.1%})"
                ),
                id="stats-title",
            )
            yield DataTable(cursor_type="row", zebra_stripes=True)
            yield Static(Text(_histogram_caption(total.latencies)), id="histogram-caption")
            yield Sparkline(histogram(total.latencies), summary_function=max)
        yield Footer()

    def on_mount(self) -> None:
        table: DataTable[str | Text] = self.query_one(DataTable)
        table.add_columns("method", "count", "errors", "error %", "p50", "p90", "p99", "max")
        for entry in self.rows:
            lat = entry.latencies
            style = "bold" if entry.method == "(all)" else ""
            errors_style = "red" if entry.errors else ""
            table.add_row(
                Text(entry.method, style=style),
                Text(f"{entry.count:,}", justify="right"),
                Text(f"{entry.errors:,}", justify="right", style=errors_style),
                Text(f"{entry.error_rate:.1%}", justify="right", style=errors_style),
                *(
                    Text(fmt_latency(percentile(lat, q)) if lat else "-", justify="right")
                    for q in (50, 90, 99, 100)
                ),
            )


def _histogram_caption(ordered: Sequence[float]) -> str:
    if not ordered:
        return "Latency histogram: no completed exchanges."
    top = fmt_latency(percentile(ordered, 99))
    return f"Latency histogram, 0 … {top} (p99; slower ones in the last bar):"
