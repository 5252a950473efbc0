"""``golem-proxy stats FILE``: per-method counts, errors and latency percentiles."""

from __future__ import annotations

import argparse
import json

from rich.table import Table

from ..filters import FilterError, parse_filter
from ..stats import MethodStats, compute_stats
from ._common import EXIT_OK, EXIT_USAGE, console, fail, ms, open_trace

NAME = "stats"
HELP = "per-method counts, error rates and latency percentiles of a recording"
ORDER = 31


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a recording (.jsonl)")
    parser.add_argument("--filter", "-f", metavar="EXPR", help="only flows matching EXPR")
    parser.add_argument("--json", action="store_true", help="print the statistics as JSON")


def run(args: argparse.Namespace) -> int:
    try:
        chosen = parse_filter(args.filter) if args.filter is not None else None
    except FilterError as exc:
        return fail(f"bad filter: {exc}")
    trace = open_trace(args.file)
    if trace is None:
        return EXIT_USAGE
    profile = trace.profile
    flows = [f for f in trace.flows if chosen is None or chosen.matches(f, profile)]
    stats = compute_stats(flows)
    if args.json:
        console().file.write(json.dumps(stats.to_json(), ensure_ascii=False, indent=2) + "\n")
        return EXIT_OK
    table = Table(
        title=f"{trace.path} · {profile.name} · latency percentiles by nearest rank",
        title_justify="left",
    )
    for column in ("route", "method", "count", "errors", "error %", "pending", "⚠"):
        table.add_column(column, justify="left" if column in ("route", "method") else "right")
    for column in ("p50 ms", "p90 ms", "p99 ms", "max ms"):
        table.add_column(column, justify="right")
    for row in stats.rows:
        table.add_row(*_cells(row))
    table.add_section()
    for row in stats.routes:
        table.add_row(*_cells(row), style="bold")
    table.add_section()
    table.add_row(*_cells(stats.overall), style="bold")
    console().print(table)
    return EXIT_OK


def _cells(row: MethodStats) -> list[str]:
    latency = row.latency
    errors = f"[red]{row.errors}[/]" if row.errors else "0"
    return [
        row.route,
        row.method,
        str(row.count),
        errors,
        f"{row.error_rate * 100:.1f}",
        str(row.pending),
        str(row.with_violations) if row.with_violations else "",
        ms(latency.p50),
        ms(latency.p90),
        ms(latency.p99),
        ms(latency.max),
    ]
