"""`check`'s catalogue side: a catalogue asked of a live plugin (``--catalogue-live``), and the
drift table (`print_drift`): methods and params the recording used that the catalogue does
not know, or knows otherwise."""

from __future__ import annotations

from functools import partial

import trio
from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from golem_core.catalogue import MethodCatalogue
from golem_core.messages import Response, Role
from golem_core.profiles import GOLEM

from ..analysis.drift import DriftReport
from ..net.addresses import parse_address
from ..net.request_client import RequestFailed, Unreachable, request_answer
from ..table_layout import Cell, Column, print_table
from ..terminal import safe_text

__all__ = [
    "EXAMPLES_PER_RULE",
    "LIVE_TIMEOUT",
    "CatalogueError",
    "fetch_live_catalogue",
    "print_drift",
]

LIVE_TIMEOUT = 5.0
EXAMPLES_PER_RULE = 10
"""Flows (or findings) a table row names before it counts the rest."""


class CatalogueError(Exception):
    """The catalogue could not be loaded or fetched; the message is one line."""


def fetch_live_catalogue(where: str, timeout: float = LIVE_TIMEOUT) -> MethodCatalogue:
    """Ask the plugin at ``where`` (HOST:PORT or unix:PATH) for ``list_methods``.

    Raises CatalogueError saying what went wrong."""
    try:
        address = parse_address(where)
    except ValueError as exc:
        raise CatalogueError(f"--catalogue-live: {exc}") from None
    request = GOLEM.encode_payload(GOLEM.request("golem-proxy-check", "list_methods", {}))
    wanted = GOLEM.correlation_key(GOLEM.parse(request, Role.REQUEST))
    ask = partial(request_answer, timeout=timeout)
    try:
        answer = trio.run(ask, address, GOLEM.frame_payload(request), GOLEM, wanted)
    except Unreachable as exc:
        raise CatalogueError(f"cannot ask list_methods at {address} ({exc.why})") from None
    except RequestFailed as exc:
        raise CatalogueError(f"cannot ask list_methods at {address}: {exc}") from None
    reply = answer.message
    # The answer is hostile input like any other: a result of another shape is reported.
    result = reply.result if isinstance(reply, Response) else None
    methods = result.get("methods") if isinstance(result, dict) else None
    if not isinstance(methods, list):
        shown = safe_text(GOLEM.describe(reply), 80)
        raise CatalogueError(f"list_methods at {address}: unexpected answer ({shown})")
    return MethodCatalogue.from_method_list(methods, f"list_methods at {address}")


_LABELS = {
    "unknown-method": ("not registered", "bold red"),
    "missing-required": ("required, not sent", "bold red"),
    "renamed-param": ("other name", "yellow"),
    "shape-mismatch": ("shape differs", "yellow"),
    "unread-param": ("param not read", "yellow"),
}


def print_drift(out: Console, report: DriftReport) -> None:
    """The drift table: one row per method and param, with the source line it comes from.
    Names come from the trace and the catalogue file: printed as inert text, never markup."""
    title = Text(
        safe_text(f"Drift against catalogue {report.catalogue or '(recorded by the proxy)'}")
    )
    unchecked = report.not_checked_note
    if not report.rows:
        if report.note:
            text = Text(safe_text(f"drift unknown: {report.note}"), style="yellow")
        elif unchecked:
            said = f"no drift in the requests read: every method and param is known; {unchecked}"
            text = Text(said, style="yellow")
        else:
            text = Text("no drift: every method and param is known", style="green")
        calm = not (report.note or unchecked)
        out.print(Panel(text, title=title, border_style="green" if calm else "yellow"))
        return
    rows: list[list[Cell]] = []
    for row in report.rows:
        d = row.drift
        label, style = _LABELS[d.kind]
        if row.recorded:
            detail = d.detail  # the recorded message says all that is known
        elif d.kind == "renamed-param":
            detail = f"handler reads `{d.other}`"
        elif d.kind == "shape-mismatch":
            detail = f"handler takes {d.other}; {d.detail}"
        else:
            detail = d.detail
        param = " or ".join(d.param.split("|")) if d.kind == "missing-required" else d.param
        source = f"{d.side}: {d.at}" if d.at and not row.recorded else ""
        texts = (d.method, param, detail, str(len(row.flows)), _flows(row.flows), source)
        rows.append([Text(label, style=style), *(safe_text(text) for text in texts)])
    severe = any(r.drift.kind in ("unknown-method", "missing-required") for r in report.rows)
    title.stylize("bold red" if severe else "bold yellow")
    print_table(out, _DRIFT_COLUMNS, rows, title)
    if report.note:
        out.print(Text(safe_text(f"note: {report.note}"), style="yellow"), soft_wrap=True)
    if unchecked:
        out.print(Text(f"note: {unchecked}", style="yellow"), soft_wrap=True)


# The method is what the reader looks for: the source and detail wrap first.
_DRIFT_COLUMNS = (
    Column("drift", wrap=True, priority=1, floor=10),
    Column("method", wrap=True, priority=3, floor=14),
    Column("param", wrap=True, priority=2, floor=10),
    Column("detail", wrap=True, priority=0, floor=10),
    Column("calls", right=True),
    Column("flows", wrap=True, priority=1, floor=6),
    Column("source", wrap=True, priority=0, floor=18),
)


def _flows(numbers: list[int]) -> str:
    shown = ", ".join(f"#{n}" for n in numbers[:EXAMPLES_PER_RULE])
    return shown + (
        f" … (+{len(numbers) - EXAMPLES_PER_RULE})" if len(numbers) > EXAMPLES_PER_RULE else ""
    )
