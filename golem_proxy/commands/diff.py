"""``golem-proxy diff A B``: semantic, GUID-aware diff of two traces."""

from __future__ import annotations

import argparse
from typing import Optional

from ..analysis.request_rows import RequestRows, gaps_note, read_request_rows
from ..analysis.trace import json_text
from ..analysis.two_layers import ToolCall
from ..replay.diffing import Comparator
from ..replay.index import ExchangeTrace, load_exchanges
from ..replay.mcp_answer_diff import ServerAnswers, diff_server_answers
from ..replay.mcp_script import McpScript, NoMcpLayer, read_script
from ..replay.render import render_diff, render_server_answers, render_tool_call_diff
from ..replay.tool_call_diff import diff_tool_calls
from ..replay.tracediff import DamagedTrace, diff_traces
from ._common import CommandError, console, print_notes, reading
from ._comparing import add_comparison_arguments, comparator_from
from ._options import add_recording

NAME = "diff"
HELP = "compare two traces request by request (GUID-aware, with tolerances)"
ORDER = 42
EXIT_DIFFERENT = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recording(parser, "first recording (the reference)", dest="a", metavar="A")
    add_recording(parser, "second recording", dest="b", metavar="B")
    add_comparison_arguments(
        parser,
        ignore_metavar="PATH",
        ignore_help="leave a path out: params.x, result.x, or METHOD:result.x",
    )
    parser.add_argument("--json", action="store_true", help="print the diff as JSON")


ROLES = ("trace A", "trace B")
"""How every error names each trace, with its file (`reading`)."""


NOTES_KEYS = ("a", "b")
"""Each trace's notes in ``--json``'s ``notes`` member."""


def _read(path: str, role: str) -> tuple[ExchangeTrace, RequestRows, list[str], list[ToolCall]]:
    """The trace's exchanges, its requests as `show` numbers them (`read_request_rows`), what
    reading it noted (`reading_notes`: cut short, lines lost or out of order, restarts; then
    its gaps in what was observed, which leave the comparison partial), each note naming
    ``role``, and its MCP tool calls (none without an MCP route), taken in that one reading
    of its flows. The file is read as `show` reads it first: of a file still being written,
    the exchanges taken reach at least as far as that reading, so a file taken short of its
    end is noted as cut short. Raises CommandError naming ``role`` and the file."""
    with reading(path, role):
        calls: list[ToolCall] = []
        requests, notes = read_request_rows(path, role, tool_calls=calls)
        gaps = gaps_note(requests, path, role)
        if gaps is not None:
            notes.append(gaps)
        return load_exchanges(path), requests, notes, calls


def run(args: argparse.Namespace) -> int:
    comparator = comparator_from(args)
    paths = (args.a, args.b)
    a, a_requests, a_notes, a_calls = _read(args.a, ROLES[0])
    try:
        b, b_requests, b_notes, b_calls = _read(args.b, ROLES[1])
    except CommandError:
        a.close()
        raise
    try:
        try:
            diff = diff_traces(a, b, comparator, requests=(a_requests, b_requests))
        except DamagedTrace as damaged:
            with reading(paths[damaged.side], ROLES[damaged.side]):
                raise damaged.error from None
        tools = answers = None
        if _has_mcp_layer(a, b):
            tools = diff_tool_calls(a_calls, b_calls, comparator, paths)
            answers = _server_answers((a, b), paths, comparator)
        acted = (a_requests.acted, b_requests.acted)
        if args.json:
            report = diff.to_json(acted)
            if tools is not None:
                report["tool_calls"] = tools.to_json()
            if answers is not None:
                report["server_answers"] = answers.to_json()
            if a_notes or b_notes:
                report["notes"] = dict(zip(NOTES_KEYS, (a_notes, b_notes)))
            print(json_text(report, indent=2))
        else:
            render_diff(diff, console(), (args.a, args.b), acted)
            if tools is not None:
                render_tool_call_diff(tools, console(), (args.a, args.b))
            if answers is not None:
                render_server_answers(answers, console(), (args.a, args.b))
    finally:
        a.close()
        b.close()
    # On stderr as every reader says them, once the diff is out; they change no exit status.
    print_notes(a_notes + b_notes)
    same_calls = tools is None or not tools.different
    same_answers = answers is None or not answers.different
    return 0 if diff.equal and same_calls and same_answers else EXIT_DIFFERENT


def _server_answers(
    traces: tuple[ExchangeTrace, ExchangeTrace], paths: tuple[str, str], comparator: Comparator
) -> Optional[ServerAnswers]:
    """What the server told the model in each recording (`diff_server_answers`), its MCP hop
    read as `mcp-verify` reads it (a recording without one made no such request). Raises
    CommandError naming the trace whose file cannot be read."""
    scripts = []
    for path, role in zip(paths, ROLES):
        with reading(path, role):
            try:
                scripts.append(read_script(path))
            except NoMcpLayer:
                scripts.append(McpScript([]))
    redact = (traces[0].header.redact, traces[1].header.redact)
    return diff_server_answers(scripts[0], scripts[1], comparator, paths, redact)


def _has_mcp_layer(*traces: ExchangeTrace) -> bool:
    """Whether any of ``traces`` has an MCP route (`golem-proxy mcp`'s): only then are tool
    calls compared."""
    return any(
        profile == "mcp"
        for trace in traces
        for profile in trace.header.route_profile_names().values()
    )
