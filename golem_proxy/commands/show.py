"""``golem-proxy show FILE``: the flows of a recording as a table (or JSON lines), printed as
the file is read: the first rows of a large trace come at once, and memory does not grow with
the trace."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Optional

from rich.console import Console
from rich.text import Text

from golem_core.catalogue import MethodCatalogue
from golem_core.profiles import Profile

from ..analysis.call_rows import CallRows
from ..analysis.flows import Flow
from ..analysis.late_answers import NOTE_SEPARATOR, status_note
from ..analysis.server_stderr import ServerStderr, stderr_heading
from ..analysis.stats import method_label
from ..analysis.tool_calls import (
    LAYER_MCP,
    ToolCallIndex,
    attribution_refs,
    candidates_text,
    connection_text,
    mcp_routes,
    two_layer_label,
)
from ..analysis.trace import FlowReader, flow_to_json, json_text
from ..analysis.two_layer_json import two_layer_json
from ..table_layout import Cell, Column, ColumnTable, terminal_width
from ..terminal import counted, format_size, safe_text
from ._common import (
    AT_LEAST,
    EXIT_OK,
    catalogue_arg,
    console,
    fail,
    filtered_flows,
    integer_arg,
    ms,
    note_truncated,
    size,
    status_text,
    violation_marker,
)
from ._options import add_recording

NAME = "show"
HELP = "list the flows of a recording"
ORDER = 30

FIRST_BATCH = 25
"""Rows in the first batch printed: few, so that they show at once."""
BATCH = 500


def _compact_time(text: str) -> str:
    """``12.345`` → ``12.35``, ``1234.567`` → ``1235``: four significant digits place a flow
    well enough on a narrow terminal."""
    whole = text.split(".")[0].lstrip("-")
    return f"{float(text):.{max(0, 4 - len(whole))}f}"


def _compact_ms(text: str) -> str:
    return text if len(text) <= 5 else f"{float(text):.0f}"


def _compact_size(text: str) -> str:
    bound = text[: len(AT_LEAST)] if text.startswith(AT_LEAST) else ""
    return bound + format_size(int(text[len(bound) :]), compact=True)


# Routes and times give up space first, methods and outcomes last; nothing is cut (see
# table_layout.py). The ⚠ column counts the flow's violations.
_COLUMNS = (
    Column("#", right=True),
    Column("t (s)", right=True, short="t", compact=_compact_time),
    Column("route", short="rt", wrap=True, priority=0, floor=8),
    Column("conn", right=True, short="c"),
    Column("method", wrap=True, priority=2, floor=12),
    Column("status", wrap=True, priority=2, floor=12),
    Column("ms", right=True, compact=_compact_ms),
    Column("req B", right=True, short="→B", compact=_compact_size),
    Column("resp B", right=True, short="←B", compact=_compact_size),
    Column("⚠", compact=lambda text: text.replace(" ", "")),
)
_METHOD_AT = 4
# With --catalogue on a recording without an MCP layer: the likely tool(s) after the method,
# the heading's "?" saying it is a guess.
_LIKELY_TOOL = Column("likely tool?", short="tool?", wrap=True, priority=1, floor=8)
_GUESS_COLUMNS = (*_COLUMNS[: _METHOD_AT + 1], _LIKELY_TOOL, *_COLUMNS[_METHOD_AT + 1 :])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recording(parser)
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
        "--catalogue",
        metavar="CAT",
        type=catalogue_arg,
        help="a method catalogue (a file, or golem-3dmcp@9819b31): in a recording without an "
        "MCP layer, name each GOLEM flow's likely tool(s) from its method → tool map, a guess",
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
    expression = _with_layer(args.filter, args.layer)
    reader, flows, chosen = filtered_flows(args.file, expression, index.note, args.catalogue)
    index.routes = mcp_routes(reader.route_profiles)
    layers = _Layers(reader, index, golem_only=args.layer == "golem", catalogue=args.catalogue)
    with reader:
        if args.json:
            _print_json(flows, layers, args.limit)
        else:
            out = console()
            title = f"{safe_text(reader.path)} · {reader.profile.name}"
            shown, matching = _print_table(out, title, flows, layers, args.limit)
            scope = f" matching {chosen}" if chosen is not None else ""
            if matching is None:
                # Reading on only to count would cost as much as printing it all.
                line = (
                    f"the first {counted(shown, 'flow')}{scope} "
                    f"(--limit {shown}; the rest not read)"
                )
            else:
                line = f"{counted(shown, 'flow')}{scope} ({reader.flow_count} in the recording)"
            out.print(Text(line), soft_wrap=True)
            if args.catalogue is not None:
                out.print(Text(_guess_note(args.catalogue, index), "dim"), soft_wrap=True)
    note_truncated(reader)
    return EXIT_OK


def _with_layer(expression: Optional[str], layer: str) -> Optional[str]:
    """The filter expression with ``--layer`` folded in (``~layer NAME``)."""
    if layer == "all":
        return expression
    return f"({expression}) & ~layer {layer}" if expression else f"~layer {layer}"


def _guess_note(catalogue: MethodCatalogue, index: ToolCallIndex) -> str:
    """What the likely tool column is, or why there is none."""
    if index.has_mcp_layer:
        return (
            "the recording has an MCP layer: its GOLEM flows show the tool calls that caused "
            "them, and the catalogue guesses nothing"
        )
    return (
        f"likely tool?: a guess, the tool(s) that send the method per the catalogue "
        f"{safe_text(catalogue.source)}; the recording has no MCP layer to say which did"
    )


class _Layers:
    """What a row needs from a two-layer recording: each route's profile and each flow's
    tool call (`golem-proxy mcp`; a recording of one layer reads as before); with a
    catalogue, a recording without an MCP layer gets each GOLEM flow's likely tools."""

    def __init__(
        self,
        reader: FlowReader,
        index: ToolCallIndex,
        *,
        golem_only: bool,
        catalogue: Optional[MethodCatalogue] = None,
    ) -> None:
        self.profile_for = reader.profile_for
        self.index = index
        self.golem_only = golem_only
        self.catalogue = catalogue
        self._rows = CallRows()

    @property
    def guessing(self) -> bool:
        """Whether rows name likely tools (a catalogue, and no MCP layer to say)."""
        return self.catalogue is not None and not self.index.has_mcp_layer

    def likely_tool_cell(self, flow: Flow) -> str:
        """``create_box?``, ``a?, b?`` for several; "" when no tool sends the method."""
        return ", ".join(f"{tool}?" for tool in self.likely_tools(flow) or ())

    def likely_tools(self, flow: Flow) -> Optional[tuple[str, ...]]:
        """The tools that send a GOLEM flow's method per the catalogue (a guess), for a flow
        that carries no attribution in a recording without an MCP layer; None otherwise (no
        catalogue, an MCP flow, or a two-layer recording, whose attribution stands)."""
        if self.catalogue is None or not self.guessing:
            return None
        if self.index.layer(flow) == LAYER_MCP or attribution_refs(flow) is not None:
            return None
        return self.catalogue.likely_tools(flow.method) if flow.method is not None else ()

    def method_cell(self, flow: Flow) -> Optional[str]:
        """The method column of a two-layer row: a tool call as ``tool(arguments)``, a GOLEM
        flow marked with the call it belongs to (`two_layer_label`; its call named where the
        row is shown away from the call's row), the candidates of an ambiguous one by
        number; None: the plain method. Called once per row shown, in order."""
        index = self.index
        if not index.has_mcp_layer:
            return None
        if index.layer(flow) != LAYER_MCP:
            attribution = index.attribution(flow)
            away = "" if self.golem_only else self._rows.suffix(flow, attribution.number)
            method = flow.method
            if method is None:
                method = connection_text(flow) or method_label(flow)
            if attribution.state == "call" and self.golem_only:
                return f"{attribution.tool} ↳ {method}"
            if attribution.state == "ambiguous":
                numbers = candidates_text(attribution.numbers, _row_name, "|")
                return f"  ? {method} (ambiguous: {numbers})"
            label = two_layer_label(flow)
            return label + away if label is not None else None
        self._rows.suffix(flow, None)  # an MCP row: the rows after it stand under it
        return two_layer_label(flow)

    def status(self, flow: Flow, profile: Profile) -> Text:
        # A tool's failure (isError, an error in its structured content) is the outcome the
        # mcp profile decided where the answer was decoded: read, not derived again here.
        status = status_text(flow, profile)
        response = flow.response
        if response is None or not flow.out_of_turn:
            return status
        # An answer after its call returned, or a result that is another call's answer:
        # decided as the frames were decoded (`FrameSeen.late`, `FrameSeen.answer_of`).
        found = response.answer_of
        note = status_note(
            flow,
            self.index.attribution(flow).rows,
            None if found is None else self.index.golem_number(found),
        )
        if note is not None:
            status.append(f"{NOTE_SEPARATOR}{safe_text(note)}", style="bold yellow")
        return status


def _print_json(flows: Iterator[Flow], layers: _Layers, limit: Optional[int]) -> None:
    out = console().file
    index = layers.index
    for number, flow in enumerate(flows):
        if limit is not None and number >= limit:
            return  # nothing counts the rest in JSON: stop reading
        profile = layers.profile_for(flow.route)
        data = flow_to_json(flow, profile)
        data.update(two_layer_json(flow, profile, index))
        guessed = layers.likely_tools(flow)
        if guessed is not None:
            data["likely_tools"] = list(guessed)
        out.write(json_text(data) + "\n")
        if number < FIRST_BATCH:
            out.flush()  # the first rows at once, then as the buffer fills


def _cells(flow: Flow, layers: _Layers) -> list[Cell]:
    """The row of ``flow``: every string from the trace made safe to print."""
    profile = layers.profile_for(flow.route)
    method = layers.method_cell(flow) or flow.method
    cells: list[Cell] = [
        str(flow.number),
        f"{flow.t:.3f}",
        safe_text(flow.route),
        str(flow.conn),
        safe_text(method) if method is not None else Text(method_label(flow), "dim"),
        layers.status(flow, profile),
        ms(flow.latency),
        size(flow.request_size, flow.size_at_least),
        size(flow.response_size, flow.size_at_least),
        violation_marker(flow),
    ]
    if layers.guessing:
        cells.insert(_METHOD_AT + 1, safe_text(layers.likely_tool_cell(flow)))
    return cells


def _print_table(
    out: Console, title: str, flows: Iterator[Flow], layers: _Layers, limit: Optional[int]
) -> tuple[int, Optional[int]]:
    """Print the matching flows in batches; return (shown, matching), matching None when
    the limit was reached and the rest of the recording was not read."""
    columns = _GUESS_COLUMNS if layers.guessing else _COLUMNS
    table = ColumnTable(columns, terminal_width(out))
    out.print(Text(title, style="italic"), soft_wrap=True)
    rows: list[list[Cell]] = []
    notes: dict[int, Text] = {}  # lines printed under a row, by its place in ``rows``
    # The server's stderr a failed row carries, printed under it, and under the GOLEM rows
    # of its call when it is a tool call (they stand right under the call's row): placed
    # at the next row of the MCP layer, or at the end of the batch.
    said: Optional[Text] = None
    shown = 0
    batch = FIRST_BATCH
    headed = False
    try:
        for flow in flows:
            if limit is not None and shown >= limit:
                return shown, None  # one more matched: there is more, left unread
            shown += 1
            if said is not None and layers.index.layer(flow) == LAYER_MCP:
                notes[len(rows) - 1], said = said, None
            rows.append(_cells(flow, layers))
            if flow.stderr is not None:
                said = _stderr_text(flow.number, flow.stderr)
            if len(rows) >= batch:
                if said is not None:
                    notes[len(rows) - 1], said = said, None
                headed = _flush(out, table, rows, headed, notes)
                rows = []
                notes = {}
                batch = BATCH
    finally:
        if said is not None:
            notes[len(rows) - 1] = said
        _flush(out, table, rows, headed, notes)  # a damaged line further on: what came before shows
    return shown, shown


def _stderr_text(number: int, stderr: ServerStderr) -> Text:
    """The server's stderr lines the failed row ``number`` carries, indented."""
    text = Text(f"   #{number}: {stderr_heading(stderr)}", style="dim")
    for line in stderr.lines:
        text.append("\n   │ ", style="dim")
        text.append(safe_text(line), style="yellow")
    return text


def _flush(
    out: Console,
    table: ColumnTable,
    rows: list[list[Cell]],
    headed: bool,
    notes: Optional[dict[int, Text]] = None,
) -> bool:
    """Print rows (the heading first, and again on a terminal when the columns changed),
    each of ``notes`` under its row, in the columns measured for them all; return whether
    the heading was printed."""
    changed = table.measure(rows)
    if not headed:
        table.settle()
    if not headed or (changed and table.width is not None):
        out.print(table.heading(), soft_wrap=True)
        out.print(table.rule(), soft_wrap=True)
        headed = True
    start = 0
    for at, note in sorted((notes or {}).items()):
        out.print(table.render(rows[start : at + 1]), soft_wrap=True)
        out.print(note, soft_wrap=True)
        start = at + 1
    if start < len(rows):
        out.print(table.render(rows[start:]), soft_wrap=True)
    if rows:
        out.file.flush()
    return headed


def _row_name(number: Optional[int]) -> str:
    """A candidate tool call by its row, ``?`` for one not in this read."""
    return f"#{number}" if number is not None else "?"
