"""``golem-proxy show FILE``: the flows of a recording as a table (or JSON lines), printed as
the file is read: the first rows of a large trace come at once, and memory does not grow with
the trace."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Optional

from rich.cells import cell_len, set_cell_size
from rich.console import Console
from rich.text import Span, Text

from golem_core.profiles import Profile

from ..analysis.flows import Flow
from ..analysis.stats import method_label
from ..analysis.tool_calls import (
    LAYER_MCP,
    ToolCallIndex,
    mcp_routes,
    tool_call_error,
    two_layer_json,
    two_layer_label,
)
from ..analysis.trace import FlowReader, TraceError, flow_to_json, json_text
from ..terminal import safe_text
from ._common import (
    EXIT_OK,
    EXIT_USAGE,
    console,
    fail,
    filtered_flows,
    integer_arg,
    ms,
    note_truncated,
    size,
    status_text,
    trace_path_arg,
    violation_marker,
)

NAME = "show"
HELP = "list the flows of a recording"
ORDER = 30

FIRST_BATCH = 25
"""Rows in the first batch printed: few, so that they show at once."""
BATCH = 500

# (heading, right-aligned, width); the method column (None) takes the rest of the line. The
# rows are laid out here rather than by rich's Table: it measures every cell of every row,
# ~1 ms a row, which for a large trace is minutes; fixed widths also let the rows go out in
# batches that line up.
_COLUMNS: tuple[tuple[str, bool, Optional[int]], ...] = (
    ("#", True, 6),
    ("t (s)", True, 9),
    ("route", False, 8),
    ("conn", True, 4),
    ("method", False, None),
    ("status", False, 22),
    ("ms", True, 8),
    ("req B", True, 8),
    ("resp B", True, 8),
    ("!", False, 4),
)
_GAP = "  "
_METHOD_MIN = 16


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
        "--layer",
        choices=("all", "mcp", "golem"),
        default="all",
        help="the layer to list, in a recording of golem-proxy mcp: the MCP tool calls, the "
        "GOLEM flows, or both, GOLEM flows indented under the tool call that caused them",
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
    index = ToolCallIndex(())
    loaded = filtered_flows(args.file, _with_layer(args.filter, args.layer), index.note)
    if loaded is None:
        return EXIT_USAGE
    reader, flows, chosen = loaded
    index.routes = mcp_routes(reader.route_profiles)
    layers = _Layers(reader, index, golem_only=args.layer == "golem")
    with reader:
        try:
            if args.json:
                _print_json(flows, layers, args.limit)
            else:
                out = console()
                title = f"{safe_text(reader.path)} · {reader.profile.name}"
                shown, matching = _print_table(out, title, flows, layers, args.limit)
                counted = f"{shown} of {matching}" if shown < matching else str(shown)
                scope = f" matching {chosen}" if chosen is not None else ""
                total = reader.flow_count
                out.print(Text(f"{counted} flows{scope} ({total} in the recording)"))
        except TraceError as exc:
            return fail(str(exc))
    note_truncated(reader)
    return EXIT_OK


def _with_layer(expression: Optional[str], layer: str) -> Optional[str]:
    """The filter expression with ``--layer`` folded in (``~layer NAME``)."""
    if layer == "all":
        return expression
    return f"({expression}) & ~layer {layer}" if expression else f"~layer {layer}"


class _Layers:
    """What a row needs from a two-layer recording: each route's profile and each flow's
    tool call (`golem-proxy mcp`; a recording of one layer reads as before)."""

    def __init__(self, reader: FlowReader, index: ToolCallIndex, *, golem_only: bool) -> None:
        self.profile_for = reader.profile_for
        self.index = index
        self.golem_only = golem_only

    def method_cell(self, flow: Flow) -> Optional[str]:
        """The method column of a two-layer row: a tool call as ``tool(arguments)``, a GOLEM
        flow marked with the call it belongs to (`two_layer_label`), the candidates of an
        ambiguous one by number; None: the plain method."""
        index = self.index
        if not index.has_mcp_layer:
            return None
        if index.layer(flow) != LAYER_MCP:
            attribution = index.attribution(flow)
            method = flow.method if flow.method is not None else method_label(flow)
            if attribution.state == "call" and self.golem_only:
                return f"{attribution.tool} ↳ {method}"
            if attribution.state == "ambiguous":
                numbers = "|".join(f"#{n}" if n is not None else "?" for n in attribution.numbers)
                return f"  ? {method} (ambiguous: {numbers})"
        return two_layer_label(flow)

    def status(self, flow: Flow, profile: Profile) -> Text:
        failed = tool_call_error(flow) if self.index.layer(flow) == LAYER_MCP else None
        if failed and flow.response is not None and flow.status(profile) == "ok":
            return Text("isError", style="red")
        return status_text(flow, profile)


def _print_json(flows: Iterator[Flow], layers: _Layers, limit: Optional[int]) -> None:
    out = console().file
    index = layers.index
    for number, flow in enumerate(flows):
        if limit is not None and number >= limit:
            return  # nothing counts the rest in JSON: stop reading
        profile = layers.profile_for(flow.route)
        data = flow_to_json(flow, profile)
        data.update(two_layer_json(flow, profile, index))
        out.write(json_text(data) + "\n")
        if number < FIRST_BATCH:
            out.flush()  # the first rows at once, then as the buffer fills


def _fit(text: str, width: int, right: bool = False) -> str:
    """``text`` in exactly ``width`` terminal cells: cut with ``…`` or padded."""
    if cell_len(text) > width:
        return set_cell_size(text, width - 1) + "…"
    padding = " " * (width - cell_len(text))
    return padding + text if right else text + padding


class _Layout:
    """The widths of the columns for one console."""

    def __init__(self, width: int) -> None:
        fixed = sum(w for _, _, w in _COLUMNS if w is not None)
        gaps = len(_GAP) * (len(_COLUMNS) - 1)
        self.method = max(_METHOD_MIN, width - fixed - gaps)

    def width(self, column: Optional[int]) -> int:
        return self.method if column is None else column

    def heading(self) -> Text:
        cells = [_fit(name, self.width(w), right) for name, right, w in _COLUMNS]
        return Text(_GAP.join(cells).rstrip(), style="bold")

    def row(self, flow: Flow, layers: _Layers) -> tuple[str, list[tuple[int, int, str]]]:
        """The row's text, and the styled ranges in it."""
        profile = layers.profile_for(flow.route)
        method = layers.method_cell(flow) or flow.method
        status = layers.status(flow, profile)
        marker = violation_marker(flow)
        cells = (
            (str(flow.number), ""),
            (f"{flow.t:.3f}", ""),
            (safe_text(flow.route), ""),
            (str(flow.conn), ""),
            (safe_text(method), "") if method is not None else (method_label(flow), "dim"),
            (status.plain, str(status.style)),
            (ms(flow.latency), ""),
            (size(flow.request_size), ""),
            (size(flow.response_size), ""),
            (marker.plain, str(marker.style)),
        )
        parts: list[str] = []
        styles: list[tuple[int, int, str]] = []
        at = 0
        for (text, style), (_, right, width) in zip(cells, _COLUMNS):
            cell = _fit(text, self.width(width), right) + _GAP
            if style and text:
                styles.append((at, at + len(cell) - len(_GAP), style))
            parts.append(cell)
            at += len(cell)
        line = "".join(parts).rstrip()
        end = len(line)  # a style never runs past the line (its padding was stripped)
        return line, [(start, min(stop, end), style) for start, stop, style in styles]


def _print_table(
    out: Console, title: str, flows: Iterator[Flow], layers: _Layers, limit: Optional[int]
) -> tuple[int, int]:
    """Print the matching flows in batches; return (shown, matching)."""
    layout = _Layout(out.width)
    out.print(Text(title, style="italic"), no_wrap=True, overflow="ellipsis")
    heading = layout.heading()
    out.print(heading, no_wrap=True, overflow="ellipsis")
    out.print(Text("─" * min(out.width, cell_len(heading.plain))), style="dim")
    rows: list[tuple[str, list[tuple[int, int, str]]]] = []
    shown = matching = 0
    batch = FIRST_BATCH
    try:
        for flow in flows:
            matching += 1
            if limit is not None and shown >= limit:
                continue  # counted, not shown
            shown += 1
            rows.append(layout.row(flow, layers))
            if len(rows) >= batch:
                _flush(out, rows)
                rows = []
                batch = BATCH
    finally:
        _flush(out, rows)  # a damaged line further on: what came before it is still shown
    return shown, matching


def _flush(out: Console, rows: list[tuple[str, list[tuple[int, int, str]]]]) -> None:
    """Print rows as one Text with its spans (far cheaper than a Text per row)."""
    if not rows:
        return
    spans: list[Span] = []
    at = 0
    for line, styles in rows:
        spans += [Span(at + start, at + end, style) for start, end, style in styles]
        at += len(line) + 1
    text = Text("\n".join(line for line, _ in rows), spans=spans)
    out.print(text, no_wrap=True, overflow="ellipsis", crop=True)
    out.file.flush()
