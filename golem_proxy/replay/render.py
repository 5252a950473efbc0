"""Rich rendering of verify and diff results: per exchange, method, path, recorded vs live.

Everything a trace or a live plugin said is shown as literal `Text` through `safe_text`: a
``[/x]`` in a value is no markup, and control characters cannot reach the terminal."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Optional

from rich.console import Console
from rich.text import Text

from ..analysis.request_rows import RequestGap, UnansweredRequest
from ..table_layout import Cell, Column, print_table
from ..terminal import counted, safe_text
from .alignment import Windowed
from .diffing import Difference, short
from .mcp_answer_diff import ServerAnswers
from .row_numbers import row_label
from .tool_call_diff import ToolCallDiff
from .tracediff import Acted, ExchangeDiff, Side, TraceDiff
from .verify import VerifyResult

__all__ = ["render_diff", "render_verify"]

MAX_SHOWN = 50
PREVIEW = 80
"""Characters of a value a difference row shows; ``--json`` has the values whole."""
CUT_NOTE = f"values longer than {PREVIEW} characters are cut (…): --json prints them whole"


def _literal(text: str, style: str = "") -> Text:
    return Text(safe_text(text), style=style)


def _print_differences(
    console: Console, differences: Sequence[Difference], left: str, right: str
) -> bool:
    """Path, recorded and live value of each difference (values as `short` previews them),
    laid out like every table of the command line: the path is never cut. Returns whether
    a value was cut, so the caller can say so."""
    columns = (
        Column("path", wrap=True, priority=2, floor=16),
        Column(left, wrap=True, priority=1, floor=16),
        Column(right, wrap=True, priority=1, floor=16),
    )
    rows: list[list[Cell]] = [
        [
            _literal(difference.path, "cyan"),
            _literal(short(difference.recorded, PREVIEW), "red"),
            _literal(short(difference.live, PREVIEW), "green"),
        ]
        for difference in differences
    ]
    print_table(console, columns, rows)
    return any(
        len(short(value, sys.maxsize)) > PREVIEW
        for difference in differences
        for value in (difference.recorded, difference.live)
    )


def render_verify(result: VerifyResult, console: Console) -> None:
    """Each failing exchange with its differences, then a one-line summary."""
    failed = result.failed
    cut = False
    for check in failed[:MAX_SHOWN]:
        title = Text(f"{row_label(check.row)} ", style="bold")
        title.append(
            safe_text(f"{check.route} {check.method or '(malformed)'}"), style="bold magenta"
        )
        console.print(title)
        if check.problem is not None:
            console.print(_literal(f"  {check.problem}", "yellow"))
        for extra in check.extra:
            console.print(_literal(f"  {extra}", "yellow"))
        if check.differences:
            cut = _print_differences(console, check.differences, "recorded", "live") or cut
    if len(failed) > MAX_SHOWN:
        console.print(f"… and {len(failed) - MAX_SHOWN} more differing exchanges (--json: all)")
    if cut:
        console.print(Text(CUT_NOTE, style="dim"))
    total = len(result.checks)
    not_sent = result.not_sent
    for check in not_sent[:MAX_SHOWN]:
        said = safe_text(f"{check.route} {check.method or '(malformed)'}: not sent, ")
        console.print(Text(f"{row_label(check.row)} {said}{check.not_sent}", style="dim"))
    if len(not_sent) > MAX_SHOWN:
        console.print(f"… and {len(not_sent) - MAX_SHOWN} more not sent (--json: all)")
    if result.unasked:
        # Not a difference, but a plugin that sends what it was not asked for should be seen.
        console.print(
            Text(
                f"verify: skipped {counted(result.unasked, 'frame')} the plugin sent of its own "
                "(notifications, requests): none is an answer",
                style="yellow",
            )
        )
    if result.ok and not_sent:
        sent = total - len(not_sent)
        console.print(
            f"[green]verify: all {counted(sent, 'exchange')} sent match[/green]; "
            f"{len(not_sent)} the proxy answered were not sent"
        )
    elif result.ok:
        console.print(f"[green]verify: all {counted(total, 'exchange')} match[/green]")
    else:
        console.print(f"[red]verify: {len(failed)} of {counted(total, 'exchange')} differ[/red]")


def render_diff(
    diff: TraceDiff,
    console: Console,
    names: Optional[tuple[str, str]] = None,
    acted: Acted = ({}, {}),
) -> None:
    """Each differing pair (changed, only in A, only in B), then a summary. ``acted``: the
    rows of each trace the proxy itself acted on, with its steps (`RequestRows.acted`): a
    pair with one says so after what it is."""
    a_name, b_name = names or ("A", "B")
    different = diff.different
    cut = False
    for pair in different[:MAX_SHOWN]:
        where = f"A{row_label(pair.a.row)}" if pair.a is not None else "—"
        where += f" B{row_label(pair.b.row)}" if pair.b is not None else " —"
        console.print(
            Text.assemble(
                (f"{where} ", "bold"),
                (safe_text(f"{pair.route} {pair.method or '(malformed)'} "), "bold magenta"),
                _literal(_pair_said(pair, (a_name, b_name)), "yellow"),
                _literal(_acted_said(pair, acted), "cyan"),
            )
        )
        if pair.differences:
            cut = _print_differences(console, pair.differences, a_name, b_name) or cut
    if len(different) > MAX_SHOWN:
        console.print(f"… and {len(different) - MAX_SHOWN} more (--json: all)")
    if cut:
        console.print(Text(CUT_NOTE, style="dim"))
    for route in diff.windowed:  # so a moved exchange is not read as one removed and one added
        console.print(_literal(route.sentence(), "yellow"))
    if diff.equal:
        console.print(f"[green]diff: {counted(len(diff.pairs), 'request')}, no difference[/green]")
    else:
        console.print(
            f"[red]diff: {len(different)} of {len(diff.pairs)} aligned requests differ[/red]"
        )


def render_tool_call_diff(diff: ToolCallDiff, console: Console, names: tuple[str, str]) -> None:
    """Each tool call that differs (its row in each recording, the tool, what differs), then
    a summary of the MCP layer's comparison."""
    a_name, b_name = names
    cut = False
    a_rows, b_rows = diff.a_rows, diff.b_rows
    for i in diff.different[:MAX_SHOWN]:
        check = diff.checks[i]
        where = f"A{row_label(a_rows[i])}" if a_rows[i] is not None else "—"
        where += f" B{row_label(b_rows[i])}" if b_rows[i] is not None else " —"
        said = check.problem or "changed"
        console.print(
            Text.assemble(
                (f"{where} ", "bold"),
                (safe_text(f"tools/call {diff.call_text(i)} "), "bold magenta"),
                _literal(said, "yellow"),
            )
        )
        if check.differences:
            cut = _print_differences(console, check.differences, a_name, b_name) or cut
    if len(diff.different) > MAX_SHOWN:
        console.print(f"… and {len(diff.different) - MAX_SHOWN} more (--json: all)")
    if cut:
        console.print(Text(CUT_NOTE, style="dim"))
    if diff.windowed is not None:  # so a moved call is not read as one removed and one added
        console.print(_literal(_windowed_calls(diff.windowed), "yellow"))
    calls = counted(len(diff.checks), "tool call")
    if diff.different:
        console.print(f"[red]diff: {len(diff.different)} of {calls} differ[/red]")
    else:
        console.print(f"[green]diff: {calls}, no difference[/green]")


SERVER_TOLD = "what the server told the model"


def render_server_answers(answers: ServerAnswers, console: Console, names: tuple[str, str]) -> None:
    """Under a heading, each answer that differs (the method, what differs), each that has
    something told (a noted difference, why it was not compared), then a summary; only the
    summary when every answer matched with nothing to tell."""
    shown = [check for check in answers.checks if not check.ok or check in answers.told]
    if shown:
        console.print(Text(SERVER_TOLD, style="bold"))
    cut = False
    for check in shown[:MAX_SHOWN]:
        method = (safe_text(f"{check.name} "), "bold magenta")
        if not check.ok:
            console.print(Text.assemble(method, _literal(check.problem or "changed", "yellow")))
            if check.differences:
                cut = _print_differences(console, check.differences, *names) or cut
            continue
        if check.not_compared is not None:
            console.print(Text.assemble(method, _literal(f"not compared: {check.not_compared}")))
        for note in check.notes:
            said = f"{note.path}: {short(note.recorded)} → {short(note.live)} (told, no difference)"
            console.print(Text.assemble(method, _literal(said, "dim")))
    if len(shown) > MAX_SHOWN:
        console.print(f"… and {len(shown) - MAX_SHOWN} more (--json: all)")
    if cut:
        console.print(Text(CUT_NOTE, style="dim"))
    compared = counted(len(answers.checks), "answer")
    if answers.different:
        console.print(
            f"[red]diff: {len(answers.different)} of {compared} of {SERVER_TOLD} differ[/red]"
        )
    else:
        console.print(f"[green]diff: {compared} of {SERVER_TOLD}, no difference[/green]")


def _windowed_calls(windowed: Windowed) -> str:
    return (
        f"tool calls aligned in windows of {windowed.window:,} (the sessions differ over "
        f"{windowed.a_span:,} calls of A and {windowed.b_span:,} of B): a call moved further "
        "than that shows as removed and added"
    )


def _acted_said(pair: ExchangeDiff, acted: Acted) -> str:
    """`` · the proxy's doing: B#5 --fault error`` when the proxy acted on a side's row
    (``acted``), so that a difference it made is not read as a peer's; empty otherwise."""
    said = [
        f"{trace}#{side.row} {safe_text(', '.join(acted[index][side.row]), 80)}"
        for index, (trace, side) in enumerate(zip("AB", (pair.a, pair.b)))
        if side is not None and side.row is not None and side.row in acted[index]
    ]
    return f" · the proxy's doing: {'; '.join(said)}" if said else ""


def _pair_said(pair: ExchangeDiff, names: tuple[str, str]) -> str:
    """What a pair that differs is, in words: ``changed``, ``only in a.jsonl``, ``answered in
    a.jsonl; unanswered (upstream closed) in b.jsonl``, ``answered in a.jsonl; in b.jsonl a
    gap where it may be, not compared (B#7 unobserved:frame-too-large)``."""
    status = pair.status
    if status == "changed":
        return status
    if status in ("only-a", "only-b"):
        index = "ab".index(status[-1])
        side = (pair.a, pair.b)[index]
        unanswered = f" ({side.status} there)" if isinstance(side, UnansweredRequest) else ""
        return f"only in {names[index]}{unanswered}"
    sides = (pair.a, pair.b)
    return "; ".join(
        _side_said(sides[index], pair.gap_of(index), names[index], "AB"[index]) for index in (0, 1)
    )


def _side_said(side: Optional[Side], gap: Optional[RequestGap], name: str, trace: str) -> str:
    """What one trace did with the pair's request."""
    where = f" ({trace}#{gap.number} {gap.status})" if gap is not None else ""
    if side is None:
        return f"in {name} a gap where it may be, not compared{where}"
    if not isinstance(side, UnansweredRequest):
        return f"answered in {name}"
    if gap is not None and side.answered_unobserved:
        return f"{side.status} in {name}, its answer in a gap, not compared{where}"
    if gap is not None:
        return f"{side.status} in {name}, its answer may be in a gap{where}"
    return f"{side.status} in {name}"
