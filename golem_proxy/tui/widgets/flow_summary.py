"""The top of the detail pane: the selected flow's summary (what it is, its status, route,
times, what it caused or answered) and its contract violations.

Apart from the pane (detail.py) because it is read from the model's flow alone, with nothing
read back or decoded: it is drawn the moment a row is selected, where the request and the
response may follow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Optional

from rich.table import Table
from rich.text import Text

from golem_core.contract import Severity
from golem_core.profiles import Profile

from ...analysis.call_outage import outage_text
from ...analysis.flows import Flow
from ...analysis.late_answers import noted_status, status_note
from ...analysis.server_stderr import stderr_heading
from ...analysis.tool_calls import (
    arguments_summary,
    call_key,
    cause_text,
    connection_text,
    tool_call_error,
    tool_of,
)
from ...events import Direction
from ...status_tone import TONE_STYLES, Tone, never_delivered_status
from ...terminal import format_latency, safe_text
from ..render import fmt_time

__all__ = ["SUMMARY_CHARS", "declared_length", "flow_summary", "violations_table"]

SUMMARY_CHARS = 200
"""The most of a method or status the summary line shows."""


def flow_summary(
    flow: Flow,
    profile: Profile,
    under: Sequence[Flow] = (),
    under_let_go: str = "",
    ended_why: str = "",
    calls: Mapping[tuple[int, int], int] = {},
    loading: bool = False,
    shared: Sequence[Flow] = (),
    resent: str = "",
    answer_row: Optional[int] = None,
) -> Text:
    text = Text()
    text.append(f"#{flow.number} ", style="bold")
    title = flow.method or connection_text(flow) or "(no method)"
    # Cut as the table cuts them: a hostile peer's 200,000-character method or code filled
    # the pane; the request or answer below holds it whole.
    text.append(safe_text(title, SUMMARY_CHARS), style="bold")
    # As the table says it (`SessionModel.status`): a request still waiting while the file
    # is read may be answered further on.
    shown = "loading" if loading and flow.pending else flow.status(profile)
    status = safe_text(shown, SUMMARY_CHARS)
    tone = flow.tone
    text.append(
        f"  {status}", style=TONE_STYLES[tone] if tone is Tone.OK else f"bold {TONE_STYLES[tone]}"
    )
    if flow.conn == 0:  # a session's row (observation stopped or restarted): no route
        text.append("  every route and connection")
    else:
        text.append(f"  route {safe_text(flow.route)}  conn {flow.conn}")
    if flow.marked:
        text.append("  ● marked", style="bold magenta")
    times = []
    if flow.request is not None:
        times.append(f"request t={fmt_time(flow.request.t)}")
    if flow.response is not None:
        times.append(f"response t={fmt_time(flow.response.t)}")
    if flow.latency is not None:
        times.append(f"latency {format_latency(flow.latency)}")
    ended = flow.stream_ended
    if flow.never_delivered:
        # Not "closed before an answer": that would say the receiver had it to answer.
        request = flow.request
        if request is not None and request.delivered_bytes:
            # Part of a frame: no receiver can act on it.
            status = never_delivered_status(
                safe_text(flow.undelivered, 80), request.delivered_bytes, request.size
            )
            times.append(f"{status}: nothing was asked")
        else:
            times.append(f"never delivered ({safe_text(flow.undelivered, 80)}): nothing was asked")
    elif ended is not None and ended.cut:
        side = "upstream" if ended.direction is Direction.S2C else "client"
        cut = safe_text(ended.cut, 80)
        times.append(f"the proxy ended the {side}'s stream at t={fmt_time(ended.t)} ({cut})")
    elif ended is not None:
        side = "upstream" if ended.direction is Direction.S2C else "client"
        times.append(f"the {side} ended its stream at t={fmt_time(ended.t)} before an answer")
    elif flow.closed_unanswered:
        times.append("connection closed before an answer")
    elif flow.answered_in is not None:
        gap = flow.answered_in
        times.append(
            f"answered at t={fmt_time(gap.t)} by a {gap.size}-byte frame too large to observe "
            f"(unobserved:{gap.reason.value}): what it said is not known"
        )
    elif flow.ended_waiting and flow.pending:
        why = f" ({safe_text(ended_why)})" if ended_why else ""
        times.append(f"no answer read before the {flow.ended_waiting} ended{why}")
    if flow.connection_failed is not None:
        times.append(f"closed t={fmt_time(flow.connection_failed.t)}, before a byte crossed it")
    if times:
        text.append("\n" + "  ".join(times), style="dim")
    failed = tool_call_error(flow)
    if failed is not None:
        text.append(f"\ntool call {safe_text(tool_of(flow) or '?')}", style="bold")
        text.append(f"({safe_text(arguments_summary(flow, 200))})")
        # The row's own status: `isError` only when the model was told so; a failure the
        # plugin reported inside a success result reads as such (the model saw no isError).
        shown = safe_text(flow.status(profile)) if failed else "ok"
        text.append(f"  {shown}", style="bold red" if failed else _ok_style(flow))
        outage = outage_text(flow)
        if outage is not None:
            text.append(f"\n  ⋯ {safe_text(outage)}", style="yellow")
    cause = cause_text(flow, calls)
    if cause is not None:
        text.append(f"\n{safe_text(cause)}", style="cyan")
    # Decided as the frames were decoded (`FrameSeen.late`, `FrameSeen.answer_of`).
    own = [caused.number for caused in under if caused.response is not None]
    note = status_note(flow, calls, answer_row, own)
    if note is not None:
        text.append(f"\n{safe_text(note)}", style="bold yellow")
    if resent:
        text.append(f"\n{resent}", style="cyan")
    if under_let_go:
        text.append(f"\n  ↳ {safe_text(under_let_go)}", style="yellow")
    key = call_key(flow)
    this_call = {key: flow.number} if key is not None else {}
    for caused in under:
        # As its own row says it: a late answer's row says so after its status.
        late = status_note(caused, this_call)
        status = noted_status(safe_text(caused.status(profile)), safe_text(late) if late else None)
        method = caused.method or connection_text(caused) or "?"
        text.append(f"\n  ↳ #{caused.number} {safe_text(method)} ")
        text.append(status, style="red" if caused.is_error else _ok_style(caused))
        if caused.latency is not None:
            text.append(f"  {format_latency(caused.latency)}", style="dim")
    for maybe in shared:
        # Sent while other calls were in flight too: this one may have caused it.
        method = maybe.method or connection_text(maybe) or "?"
        text.append(f"\n  ? #{maybe.number} {safe_text(method)} ")
        text.append(safe_text(maybe.status(profile)), style="red" if maybe.is_error else "green")
        text.append("  (ambiguous: it or another call in flight)", style="dim")
    for fault in flow.faults:
        fault_text = safe_text(f"{fault.fault} {fault.detail}")
        text.append(f"\nfault injected: {fault_text}", style="magenta")
    if flow.stderr is not None:  # the server's own words on why it failed (a traceback)
        text.append(f"\n{stderr_heading(flow.stderr)}", style="yellow")
        for line in flow.stderr.lines:
            text.append(f"\n  │ {safe_text(line, SUMMARY_CHARS * 2)}")
    if flow.closed_by_proxy is not None:
        closed = flow.closed_by_proxy
        text.append(
            f"\nthe proxy closed this connection at t={fmt_time(closed.t)}: "
            f"{safe_text(closed.reason)}; a server that kept it finds it closed at its next use",
            style="yellow",
        )
    return text


def violations_table(flow: Flow) -> Table:
    # Not expanded: rich then shares a narrow width (a pane beside the table) among all the
    # columns, where an expanding ratio column was left one letter wide.
    table = Table(title="Contract violations", title_justify="left", box=None)
    # Every cell folds rather than being cut.
    table.add_column("rule", overflow="fold")
    table.add_column("severity", no_wrap=True)
    table.add_column("path", overflow="fold")
    table.add_column("message", overflow="fold")
    for violation in flow.violations:
        colour = "red" if violation.severity is Severity.ERROR else "yellow"
        # Text cells, not str: a str cell is read as markup, and messages quote the peer.
        table.add_row(
            Text(safe_text(violation.rule)),
            Text(violation.severity.value, style=colour),
            Text(safe_text(violation.path)),
            Text(safe_text(violation.message)),
        )
    return table


def declared_length(length: Optional[int]) -> str:
    if isinstance(length, int):
        return f" (declared length {length:,})"
    # Only a damaged or hostile recording gets here: show what it says, safely.
    return f" (declared length {safe_text(repr(length))})" if length is not None else ""


def _ok_style(flow: Flow) -> str:
    """The style of a row's status that did not fail: a warning for an answer out of turn
    (`Flow.out_of_turn`), not ok-green."""
    return f"bold {TONE_STYLES[Tone.OUT_OF_TURN]}" if flow.out_of_turn else "green"
