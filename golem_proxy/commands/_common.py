"""What the reading commands share: consoles, one-line errors, status colours."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Optional

from rich.console import Console
from rich.text import Text

from golem_core.contract import Severity
from golem_core.profiles import Profile

from ..analysis.filters import Filter, FilterError, parse_filter
from ..analysis.flows import Flow
from ..analysis.trace import FlowReader, TraceError, open_flows
from ..terminal import safe_text

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
    # soft_wrap: one line however long (a path and a line number make it long).
    console(stderr=True).print(Text(f"golem-proxy: {message}", style="bold red"), soft_wrap=True)
    return EXIT_USAGE


def open_trace(path: str) -> Optional[FlowReader]:
    """Open a recording and read its header, or print why it cannot be read and return
    None. Reading it may still raise TraceError (a damaged line further on)."""
    try:
        return open_flows(path)
    except TraceError as exc:
        fail(str(exc))
        return None


def note_truncated(reader: FlowReader) -> None:
    """Say so on stderr when the recording's last line was incomplete (once it was read)."""
    if reader.truncated_tail:
        console(stderr=True).print(
            Text(
                f"note: {safe_text(reader.path)} ends with an incomplete line (the writer "
                "stopped); read up to the last complete line",
                style="yellow",
            )
        )


def filtered_flows(
    path: str, expression: Optional[str]
) -> Optional[tuple[FlowReader, Iterator[Flow], Optional[Filter]]]:
    """Open the recording at ``path``; return it, its flows matching ``expression`` (all for
    None) as they are read, and the parsed filter. Prints a one-line error and returns None
    for a bad filter or file; reading the flows may raise TraceError."""
    try:
        chosen = parse_filter(expression) if expression is not None else None
    except FilterError as exc:
        fail(f"bad filter: {exc}")
        return None
    reader = open_trace(path)
    if reader is None:
        return None
    profile = reader.profile
    flows = reader.flows()
    if chosen is not None:
        flows = (f for f in flows if chosen.matches(f, profile))
    return reader, flows, chosen


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
    return Text(safe_text(status), style=style)


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
