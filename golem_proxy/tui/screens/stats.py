"""The `s` screen: per-method counts, error rates and latency percentiles of the flows in
view (the same `golem_proxy.analysis.stats` numbers as `golem-proxy stats`), with a latency
histogram."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Sparkline, Static

from golem_core.profiles import Profile

from ...analysis.flows import Flow
from ...analysis.stats import ALL_METHODS, compute_stats, percentile
from ...terminal import format_latency, safe_text

__all__ = ["StatsScreen", "histogram"]


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
    CSS_PATH = "stats.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,s,q", "app.pop_screen", "Back"),
    ]

    def __init__(self, flows: Sequence[Flow], profile: Profile, scope: str) -> None:
        super().__init__()
        self.stats = compute_stats(flows)
        self.latencies = sorted(f.latency for f in flows if f.latency is not None)
        self.profile = profile
        self.scope = scope

    def compose(self) -> ComposeResult:
        total = self.stats.overall
        with Vertical():
            yield Static(
                Text(
                    f"Statistics of {self.scope}: {total.count:,} flows, "
                    f"{total.errors:,} errors ({total.error_rate:.1%})"
                ),
                id="stats-title",
            )
            yield DataTable(cursor_type="row", zebra_stripes=True)
            yield Static(Text(_histogram_caption(self.latencies)), id="histogram-caption")
            yield Sparkline(histogram(self.latencies), summary_function=max)
        yield Footer()

    def on_mount(self) -> None:
        table: DataTable[str | Text] = self.query_one(DataTable)
        table.add_columns(
            "route", "method", "count", "errors", "error %", "p50", "p90", "p99", "max"
        )
        rows = [*self.stats.rows, *self.stats.routes, self.stats.overall]
        for entry in rows:
            latency = entry.latency
            style = "bold" if ALL_METHODS in (entry.method, entry.route) else ""
            errors_style = "red" if entry.errors else ""
            table.add_row(
                Text(safe_text(entry.route), style=style),
                Text(safe_text(entry.method), style=style),
                Text(f"{entry.count:,}", justify="right"),
                Text(f"{entry.errors:,}", justify="right", style=errors_style),
                Text(f"{entry.error_rate:.1%}", justify="right", style=errors_style),
                *(
                    Text(format_latency(value), justify="right")
                    for value in (latency.p50, latency.p90, latency.p99, latency.max)
                ),
            )


def _histogram_caption(ordered: Sequence[float]) -> str:
    if not ordered:
        return "Latency histogram: no completed exchanges."
    top = format_latency(percentile(ordered, 99))
    return f"Latency histogram, 0 … {top} (p99; slower ones in the last bar):"
