"""What the reading commands share: consoles, one-line errors, status colours."""

from __future__ import annotations

import os
import sys
from typing import Optional

from rich.console import Console
from rich.text import Text

from golem_core.contract import Severity
from golem_core.profiles import Profile

from ..analysis.filters import Filter, FilterError, parse_filter
from ..analysis.flows import Flow
from ..analysis.trace import Trace, TraceError, load_trace

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


def console(*, stderr: bool = False) -> Console:
    """A rich console; piped output gets a wide fixed width so tables are not squeezed."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or "COLUMNS" in os.environ else 160
    return Console(file=stream, width=width, highlight=False)


def fail(message: str) -> int:
    """Print ``golem-proxy: message`` on stderr and return the usage/IO exit code."""
    console(stderr=True).print(Text(f"golem-proxy: {message}", style="bold red"))
    return EXIT_USAGE


def open_trace(path: str) -> Optional[Trace]:
    """Load a recording, or print why it cannot be read and return None."""
    try:
        trace = load_trace(path)
    except TraceError as exc:
        fail(str(exc))
        return None
    if trace.recording.truncated_tail:
        console(stderr=True).print(
            Text(
                f"note: {path} ends with an incomplete line (the writer stopped); "
                "read up to the last complete line",
                style="yellow",
            )
        )
    return trace


def filtered_flows(
    path: str, expression: Optional[str]
) -> Optional[tuple[Trace, list[Flow], Optional[Filter]]]:
    """Open the recording at ``path``; return it, its flows matching ``expression`` (all for
    None) and the parsed filter. Prints a one-line error and returns None for a bad filter or
    file."""
    try:
        chosen = parse_filter(expression) if expression is not None else None
    except FilterError as exc:
        fail(f"bad filter: {exc}")
        return None
    trace = open_trace(path)
    if trace is None:
        return None
    profile = trace.profile
    return trace, [f for f in trace.flows if chosen is None or chosen.matches(f, profile)], chosen


def status_text(flow: Flow, profile: Profile) -> Text:
    """The status cell: ok green, error codes red, malformed/framing magenta, pending yellow."""
    status = flow.status(profile)
    if status == "ok":
        style = "green"
    elif status == "pending":
        style = "yellow"
    elif status.startswith("malformed") or flow.frame_error is not None:
        style = "magenta"
    elif status == "unanswered":
        style = "yellow"
    else:
        style = "red"
    return Text(status, style=style)


def violation_marker(flow: Flow) -> Text:
    severity = flow.worst_severity
    if severity is None:
        return Text("")
    style = "bold red" if severity is Severity.ERROR else "yellow"
    return Text(f"⚠ {len(flow.violations)}", style=style)


def severity_text(severity: Severity) -> Text:
    return Text(severity.value, style="bold red" if severity is Severity.ERROR else "yellow")


def ms(seconds: Optional[float]) -> str:
    return "" if seconds is None else f"{seconds * 1000:.1f}"


def size(value: Optional[int]) -> str:
    return "" if value is None else str(value)
