"""``golem-proxy stats FILE``: per-method counts, errors and latency percentiles."""

from __future__ import annotations

import argparse

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..analysis.stats import MethodStats, Stats, StatsBuilder
from ..analysis.tool_calls import ToolCallIndex, mcp_routes
from ..analysis.tool_stats import ToolStats, ToolStatsBuilder
from ..analysis.trace import json_text
from ..status_tone import TONE_STYLES, Tone
from ..table_layout import Cell, Column, ColumnTable, terminal_width
from ..terminal import safe_text
from ._common import (
    EXIT_OK,
    console,
    filtered_flows,
    ms,
    note_truncated,
)
from ._options import add_recording
from ._progress import file_progress

NAME = "stats"
HELP = "per-method counts, error rates and latency percentiles of a recording"
ORDER = 31


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recording(parser)
    parser.add_argument("--filter", "-f", metavar="EXPR", help="only flows matching EXPR")
    parser.add_argument("--json", action="store_true", help="print the statistics as JSON")


def run(args: argparse.Namespace) -> int:
    index = ToolCallIndex(())
    trace, flows, _ = filtered_flows(args.file, args.filter, index.note)
    index.routes = mcp_routes(trace.route_profiles)
    builder = StatsBuilder()
    tools = ToolStatsBuilder(index)
    with trace, file_progress(trace.fileno(), "reading"):
        for flow in flows:
            builder.add(flow)
            tools.add(flow)
    stats = builder.stats()
    per_tool = tools.stats()
    if args.json:
        data = stats.to_json()
        if index.has_mcp_layer:
            data["tools"] = [row.to_json() for row in per_tool]
        console().file.write(json_text(data, indent=2) + "\n")
    else:
        title = f"{safe_text(trace.path)} · {trace.profile.name}"
        print_stats(console(), stats, title)
        if index.has_mcp_layer:
            console().print(tool_table(per_tool))
    note_truncated(trace)
    return EXIT_OK


def tool_table(rows: list[ToolStats]) -> Table:
    """Per MCP tool: calls, failures (``isError``, an error response or no answer), calls
    whose outcome is unknown, latency, and its mean split into time inside Rhino and the
    server's own time."""
    table = Table(
        title="MCP tool calls",
        title_justify="left",
        caption="latency in ms (percentiles by nearest rank); unknown: calls neither ok nor "
        "err, whose answer was never seen (pending at the end, let go past the pairing "
        "limits, or answered in a gap); golem: the GOLEM flows the "
        "calls caused; shared: those sent while calls overlapped (each names every "
        "candidate, and is in no golem count); no conn: GOLEM connections a call opened that "
        "ended before a byte crossed them (the plugin refused them, …); down: calls made while "
        "a GOLEM route was not listening (its upstream down: a connection there was refused "
        "unseen); rhino: the GOLEM "
        "exchanges a call caused, within its span, "
        "server: the rest of its latency (means per answered call with no shared flow, "
        "and none the proxy acted on); proxy: calls a GOLEM flow of which the proxy itself "
        "acted on (--fault, --intercept: `show -f ~fault`)",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("tool", no_wrap=True)
    columns = (
        "calls",
        "err",
        "unknown",
        "golem",
        "shared",
        "no conn",
        "down",
        "proxy",
        "p50",
        "max",
        "rhino",
        "server",
    )
    for column in columns:
        table.add_column(column, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(
            Text(safe_text(row.tool)),
            Text(str(row.calls)),
            Text(str(row.errors), style="red") if row.errors else Text("0"),
            _count(row.unknown, "yellow"),
            Text(str(row.golem_flows)),
            Text(str(row.shared_flows), style="yellow") if row.shared_flows else Text("0"),
            Text(str(row.failed_connections), style="red") if row.failed_connections else Text("0"),
            _count(row.met_route_down, "yellow"),
            _count(row.by_proxy, "cyan"),
            Text(ms(row.latency.p50)),
            Text(ms(row.latency.max)),
            Text(ms(row.rhino_mean)),
            Text(ms(row.server_mean)),
        )
    if not rows:
        table.add_row(Text("(no tool calls)", style="dim"), *[Text("")] * len(columns))
    return table


def _count(count: int, style: str) -> Text:
    """A count, in ``style`` when it is not 0."""
    return Text(str(count), style=style) if count else Text("0")


OUT_OF_TURN_CAPTION = (
    "late: GOLEM answers that came after their tool call returned; not own: tool calls whose "
    "result is another GOLEM exchange's answer (the server reads answers out of order)"
)
"""Under the table when it counts answers out of turn, in the words `show` uses."""
OUT_OF_TURN_STYLE = TONE_STYLES[Tone.OUT_OF_TURN]
PROXY_CAPTION = (
    "proxy: flows the proxy itself acted on (--fault, --intercept; `show -f ~fault` lists "
    "them), counted in n, never in the latencies; in err and err% when it only held a frame "
    "(--fault delay: the answer is the peer's) or withheld an answer several requests "
    "waited for with its id (which one's is not known), not when it made or changed the "
    "answer. A "
    "frame that went behind one the proxy held waited behind it: its flow's latency "
    "includes that wait"
)
"""Under the table when it counts flows the proxy acted on."""


def _columns(optional: dict[str, bool]) -> list[Column]:
    """route, method, counts, the optional pending, evicted, ⚠, late and not own columns
    (answers out of turn), latencies. The
    method name is what the reader scans for: it wraps last, after the route."""
    columns = [
        Column("route", short="rt", wrap=True, priority=0, floor=8),
        Column("method", wrap=True, priority=2, floor=12),
        Column("n", right=True),
        Column("err", right=True),
        Column("err%", right=True),
    ]
    columns += [Column(name, right=True) for name, shown in optional.items() if shown]
    columns += [Column(name, right=True) for name in ("p50", "p90", "p99", "max")]
    return columns


def print_stats(out: Console, stats: Stats, title: str) -> None:
    """The table `stats` prints: per route and method, then per route, then overall. The
    pending, evicted, violation, late and not-own columns appear only when some row has any
    (late and not own explained under it); on a terminal it fits the width (see
    table_layout.py), piped it is printed whole."""
    every = (*stats.rows, *stats.routes, stats.overall)
    optional = {
        "proxy": any(row.by_proxy for row in every),
        "pend": any(row.pending for row in every),
        "evict": any(row.evicted for row in every),
        "⚠": any(row.with_violations for row in every),
        "late": any(row.late for row in every),
        "not own": any(row.not_own for row in every),
    }
    # route, method, count, errors, error %, proxy, pending, evicted, ⚠, late, not own,
    # latencies
    keep = [True] * 5 + list(optional.values()) + [True] * 4

    def cells(row: MethodStats) -> list[Cell]:
        return [value for value, shown in zip(_cells(row), keep) if shown]

    sections = [
        ([cells(row) for row in stats.rows], ""),
        ([cells(row) for row in stats.routes], "bold"),
        ([cells(stats.overall)], "bold"),
    ]
    table = ColumnTable(_columns(optional), terminal_width(out))
    for rows, _ in sections:
        table.measure(rows)
    out.print(Text(title, style="italic"), soft_wrap=True)
    out.print(table.heading(), soft_wrap=True)
    for rows, style in sections:
        out.print(table.rule(), soft_wrap=True)
        if rows:
            out.print(table.render(rows, style=style), soft_wrap=True)
    out.print(Text("latency in ms, percentiles by nearest rank", style="dim"), soft_wrap=True)
    if optional["late"] or optional["not own"]:
        out.print(Text(OUT_OF_TURN_CAPTION, style="dim"), soft_wrap=True)
    if optional["proxy"]:
        out.print(Text(PROXY_CAPTION, style="dim"), soft_wrap=True)


def _cells(row: MethodStats) -> list[Cell]:
    """The row's cells: names from the trace stay literal (``[/x]`` is no markup)."""
    latency = row.latency
    return [
        safe_text(row.route),
        safe_text(row.method),
        str(row.count),
        Text(str(row.errors), style="red") if row.errors else "0",
        f"{row.error_rate * 100:.1f}",
        _count(row.by_proxy, "cyan"),
        str(row.pending),
        str(row.evicted),
        str(row.with_violations) if row.with_violations else "",
        _count(row.late, OUT_OF_TURN_STYLE),
        _count(row.not_own, OUT_OF_TURN_STYLE),
        ms(latency.p50),
        ms(latency.p90),
        ms(latency.p99),
        ms(latency.max),
    ]
