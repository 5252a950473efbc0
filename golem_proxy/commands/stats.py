"""``golem-proxy stats FILE``: per-method counts, errors and latency percentiles."""

from __future__ import annotations

import argparse

from rich import box
from rich.table import Table
from rich.text import Text

from ..analysis.stats import MethodStats, Stats, StatsBuilder
from ..analysis.tool_calls import ToolCallIndex, mcp_routes
from ..analysis.tool_stats import ToolStats, ToolStatsBuilder
from ..analysis.trace import TraceError, json_text
from ..terminal import safe_text
from ._common import (
    EXIT_OK,
    EXIT_USAGE,
    console,
    fail,
    filtered_flows,
    ms,
    note_truncated,
    trace_path_arg,
)

NAME = "stats"
HELP = "per-method counts, error rates and latency percentiles of a recording"
ORDER = 31


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", metavar="FILE", type=trace_path_arg, help="a recording (.jsonl, or sample:NAME)"
    )
    parser.add_argument("--filter", "-f", metavar="EXPR", help="only flows matching EXPR")
    parser.add_argument("--json", action="store_true", help="print the statistics as JSON")


def run(args: argparse.Namespace) -> int:
    index = ToolCallIndex(())
    loaded = filtered_flows(args.file, args.filter, index.note)
    if loaded is None:
        return EXIT_USAGE
    trace, flows, _ = loaded
    index.routes = mcp_routes(trace.route_profiles)
    builder = StatsBuilder()
    tools = ToolStatsBuilder(index)
    with trace:
        try:
            for flow in flows:
                builder.add(flow)
                tools.add(flow)
        except TraceError as exc:
            return fail(str(exc))
    stats = builder.stats()
    per_tool = tools.stats()
    if args.json:
        data = stats.to_json()
        if index.has_mcp_layer:
            data["tools"] = [row.to_json() for row in per_tool]
        console().file.write(json_text(data, indent=2) + "\n")
    else:
        title = f"{safe_text(trace.path)} · {trace.profile.name}"
        console().print(stats_table(stats, title))
        if index.has_mcp_layer:
            console().print(tool_table(per_tool))
    note_truncated(trace)
    return EXIT_OK


def tool_table(rows: list[ToolStats]) -> Table:
    """Per MCP tool: calls, failures (``isError``, an error response or no answer), latency,
    and its mean split into time inside Rhino and the server's own time."""
    table = Table(
        title="MCP tool calls",
        title_justify="left",
        caption="latency in ms (percentiles by nearest rank); rhino: the GOLEM exchanges the "
        "call caused, server: the rest of its latency (means per answered call)",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("tool", no_wrap=True)
    for column in ("calls", "err", "golem", "p50", "max", "rhino", "server"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(
            Text(safe_text(row.tool)),
            Text(str(row.calls)),
            Text(str(row.errors), style="red") if row.errors else Text("0"),
            Text(str(row.golem_flows)),
            Text(ms(row.latency.p50)),
            Text(ms(row.latency.max)),
            Text(ms(row.rhino_mean)),
            Text(ms(row.server_mean)),
        )
    if not rows:
        table.add_row(Text("(no tool calls)", style="dim"), *[Text("")] * 7)
    return table


def stats_table(stats: Stats, title: str) -> Table:
    """The rich table `stats` prints: per route and method, then per route, then overall.
    Compact enough for 80 columns: the pending and violation columns appear only when some
    row has any."""
    every = (*stats.rows, *stats.routes, stats.overall)
    optional = {
        "pend": any(row.pending for row in every),
        "⚠": any(row.with_violations for row in every),
    }
    table = Table(
        title=title,
        title_justify="left",
        caption="latency in ms, percentiles by nearest rank",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("route", no_wrap=True)
    # The method name is what the reader scans for: never cut it.
    table.add_column("method", no_wrap=True, min_width=min(30, _widest_method(stats)))

    def cells(row: MethodStats) -> list[Text]:
        values = _cells(row)
        # route, method, count, errors, error %, pending, ⚠, latencies
        keep = [True] * 5 + [optional["pend"], optional["⚠"]] + [True] * 4
        return [value for value, shown in zip(values, keep) if shown]

    numbers = ["n", "err", "err%", *(name for name, shown in optional.items() if shown)]
    numbers += ["p50", "p90", "p99", "max"]
    rows = [cells(row) for row in every]
    for offset, column in enumerate(numbers, start=2):
        widest = max([len(column)] + [len(r[offset]) for r in rows])
        table.add_column(column, justify="right", no_wrap=True, min_width=widest)

    for row in stats.rows:
        table.add_row(*cells(row))
    table.add_section()
    for row in stats.routes:
        table.add_row(*cells(row), style="bold")
    table.add_section()
    table.add_row(*cells(stats.overall), style="bold")
    return table


def _widest_method(stats: Stats) -> int:
    return max((len(safe_text(row.method)) for row in stats.rows), default=6)


def _cells(row: MethodStats) -> list[Text]:
    """The row's cells as Text: names from the trace stay literal (``[/x]`` is no markup)."""
    latency = row.latency
    return [
        Text(safe_text(row.route)),
        Text(safe_text(row.method)),
        Text(str(row.count)),
        Text(str(row.errors), style="red") if row.errors else Text("0"),
        Text(f"{row.error_rate * 100:.1f}"),
        Text(str(row.pending)),
        Text(str(row.with_violations) if row.with_violations else ""),
        Text(ms(latency.p50)),
        Text(ms(latency.p90)),
        Text(ms(latency.p99)),
        Text(ms(latency.max)),
    ]
