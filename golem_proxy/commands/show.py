"""``golem-proxy show FILE``: the flows of a recording as a table (or JSON lines)."""

from __future__ import annotations

import argparse
import json

from rich.table import Table
from rich.text import Text

from ..analysis.stats import method_label
from ..analysis.trace import flow_to_json
from ._common import (
    EXIT_OK,
    EXIT_USAGE,
    console,
    fail,
    filtered_flows,
    integer_arg,
    ms,
    size,
    status_text,
    trace_path_arg,
    violation_marker,
)

NAME = "show"
HELP = "list the flows of a recording"
ORDER = 30


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", metavar="FILE", type=trace_path_arg, help="a recording (.jsonl, or sample:NAME)"
    )
    parser.add_argument(
        "--filter", "-f", metavar="EXPR", help="only flows matching EXPR (see docs/filters.md)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object per flow per line"
    )
    parser.add_argument(
        "--limit",
        "-n",
        metavar="N",
        type=integer_arg,
        help="print at most the first N matching flows",
    )


def run(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 0:
        return fail("--limit must be 0 or more")
    loaded = filtered_flows(args.file, args.filter)
    if loaded is None:
        return EXIT_USAGE
    trace, flows, chosen = loaded
    profile = trace.profile
    total_matching = len(flows)
    if args.limit is not None:
        flows = flows[: args.limit]
    if args.json:
        out = console()
        for flow in flows:
            out.file.write(json.dumps(flow_to_json(flow, profile), ensure_ascii=False) + "\n")
        return EXIT_OK
    table = Table(title=f"{trace.path} · {profile.name}", title_justify="left")
    for column, justify in (
        ("#", "right"),
        ("t (s)", "right"),
        ("route", "left"),
        ("conn", "right"),
        ("method", "left"),
        ("status", "left"),
        ("ms", "right"),
        ("req B", "right"),
        ("resp B", "right"),
        ("!", "left"),
    ):
        table.add_column(column, justify=justify, no_wrap=column != "method")  # type: ignore[arg-type]
    for flow in flows:
        method = flow.method
        table.add_row(
            str(flow.number),
            f"{flow.t:.3f}",
            flow.route,
            str(flow.conn),
            Text(method) if method is not None else Text(method_label(flow), style="dim"),
            status_text(flow, profile),
            ms(flow.latency),
            size(flow.request_size),
            size(flow.response_size),
            violation_marker(flow),
        )
    shown = f"{len(flows)} of {total_matching}" if len(flows) < total_matching else str(len(flows))
    scope = f" matching {chosen}" if chosen is not None else ""
    table.caption = f"{shown} flows{scope} ({len(trace.flows)} in the recording)"
    table.caption_justify = "left"
    console().print(table)
    return EXIT_OK
