"""The `s` screen: per-method counts, error rates and latency percentiles of the flows in
view (the same `golem_proxy.analysis.stats` numbers as `golem-proxy stats`), with a latency
histogram right below the table.

The table is a rich `Table` rather than a `DataTable`: it sizes its columns to the screen (the
method column gives way, with an ellipsis, so `max` stays on an 80-column terminal) and takes
only the lines it needs, so the histogram follows without a gap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Optional

from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from golem_core.profiles import Profile

from ...analysis.flows import Flow
from ...analysis.stats import ALL_METHODS, MethodStats, Stats, compute_stats
from ...terminal import format_latency, safe_text
from ..histogram import LatencyHistogram

__all__ = ["StatsScreen", "stats_table"]


METHOD_FLOOR = 16
"""Cells the method column keeps before the number columns give way, least needed first."""
GIVE_WAY = ("p90", "max", "p99", "err%")


def stats_table(stats: Stats, width: Optional[int] = None) -> Table:
    """One row per route and method, then one per route, then the total. Within ``width``
    cells the method column keeps `METHOD_FLOOR` at least: the columns of `GIVE_WAY` are left
    out first, one by one, so that a row is never without its method."""
    rows = [_cells(entry) for entry in (*stats.rows, *stats.routes, stats.overall)]
    titles = ["route", "method", "count", "errors", "err%", "p50", "p90", "p99", "max"]
    widest = {
        title: max([len(title), *(row[column].cell_len for row in rows)])
        for column, title in enumerate(titles)
    }
    shown = list(titles)
    for title in GIVE_WAY:
        fixed = sum(widest[t] + 1 for t in shown if t != "method")
        if width is None or fixed + METHOD_FLOOR <= width:
            break
        shown.remove(title)
    table = Table(box=None, padding=(0, 1), collapse_padding=True, pad_edge=False)
    for title in shown:
        if title == "method":  # the one that gives way, with an ellipsis
            table.add_column(title, overflow="ellipsis", min_width=8)
            continue
        # Every other column keeps its full width: numbers are never cut.
        justify: JustifyMethod = "left" if title == "route" else "right"
        table.add_column(title, justify=justify, no_wrap=True, min_width=widest[title])
    keep = [titles.index(title) for title in shown]
    for index, cells in enumerate(rows):
        table.add_row(*(cells[column] for column in keep), end_section=index == len(stats.rows) - 1)
    return table


class _FittedStats:
    """`stats_table` drawn within the width it is given (the screen's, on each resize)."""

    def __init__(self, stats: Stats) -> None:
        self.stats = stats

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield stats_table(self.stats, options.max_width)


def _cells(entry: MethodStats) -> list[Text]:
    style = "bold" if ALL_METHODS in (entry.method, entry.route) else ""
    errors_style = "red" if entry.errors else ""
    latency = entry.latency
    return [
        Text(safe_text(entry.route), style=style),
        Text(safe_text(entry.method), style=style),
        Text(f"{entry.count:,}"),
        Text(f"{entry.errors:,}", style=errors_style),
        Text(f"{entry.error_rate:.0%}", style=errors_style),
        *(
            Text(format_latency(value, compact=True))
            for value in (latency.p50, latency.p90, latency.p99, latency.max)
        ),
    ]


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
        with VerticalScroll():
            yield Static(
                Text(
                    safe_text(
                        f"Statistics of {self.scope}: {total.count:,} flows, "
                        f"{total.errors:,} errors ({total.error_rate:.1%})"
                    )
                    + _out_of_turn(total)
                ),
                id="stats-title",
            )
            yield Static(_FittedStats(self.stats), id="stats-table")
            yield Static(
                Text("Latency histogram: flows per latency bucket"), id="histogram-caption"
            )
            yield Static(LatencyHistogram(self.latencies), id="histogram")
        yield Footer()


def _out_of_turn(total: MethodStats) -> str:
    """``; 1 late answer, 4 tool calls with another's answer`` (`golem-proxy stats`'s late
    and not own), "" when there is none."""
    counts = [
        f"{count:,} {words if count == 1 else plural}"
        for count, words, plural in (
            (total.late, "late answer", "late answers"),
            (total.not_own, "tool call with another's answer", "tool calls with another's answer"),
        )
        if count
    ]
    return "; " + ", ".join(counts) if counts else ""
