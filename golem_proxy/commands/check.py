"""``golem-proxy check FILE``: every contract violation in a recording, grouped by rule, and
the drift against a method catalogue."""

from __future__ import annotations

import argparse
import socket
from typing import Any, Optional

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from golem_core.blocking import MessageReader, send_message
from golem_core.catalogue import MethodCatalogue
from golem_core.contract import Severity
from golem_core.messages import Response, Role
from golem_core.profiles import GOLEM

from ..analysis.audit import CATALOGUE_RULE_PREFIX, Finding, RuleGroup, audit, group_by_rule
from ..analysis.drift import DriftCollector, DriftReport
from ..analysis.mcp_audit import MAX_PENDING, McpAuditor
from ..analysis.tool_calls import mcp_routes
from ..analysis.trace import FlowReader, TraceError, json_text
from ..catalogues import CatalogueNotFound, load_catalogue
from ..net.addresses import parse_address
from ..terminal import safe_text
from ._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    console,
    fail,
    note_truncated,
    open_trace,
    os_reason,
    severity_text,
    trace_path_arg,
)

NAME = "check"
HELP = "report every contract violation in a recording (and drift against a method catalogue)"
ORDER = 32

LIVE_TIMEOUT = 5.0
_EXAMPLES_PER_RULE = 10


class CatalogueError(Exception):
    """The catalogue could not be loaded or fetched; the message is one line."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", metavar="FILE", type=trace_path_arg, help="a recording (.jsonl, or sample:NAME)"
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--catalogue",
        metavar="FILE|NAME",
        help="method catalogue: a JSON file or a shipped one (golem-3dmcp@9819b31)",
    )
    source.add_argument(
        "--catalogue-live",
        metavar="HOST:PORT",
        help="ask a running plugin for its methods (list_methods; names only)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 on warnings too, not only on errors"
    )


def run(args: argparse.Namespace) -> int:
    try:
        catalogue = _catalogue(args)
    except CatalogueError as exc:
        return fail(str(exc))
    trace = open_trace(args.file)
    if trace is None:
        return EXIT_USAGE
    collector = DriftCollector(catalogue)
    with trace:
        mcp = McpAuditor(mcp_routes(trace.route_profiles))
        try:
            findings = _audit(trace, catalogue, collector, mcp=mcp)
        except TraceError as exc:
            return fail(str(exc))
    note_truncated(trace)
    if mcp.unchecked:
        text = (
            f"note: {mcp.unchecked} tools/call made before any tools/list, past the first "
            f"{MAX_PENDING}: their arguments were not checked against a schema"
        )
        console(stderr=True).print(Text(text, style="yellow"))
    drift = [f for f in findings if f.rule.startswith(CATALOGUE_RULE_PREFIX)]
    contract = group_by_rule(f for f in findings if not f.rule.startswith(CATALOGUE_RULE_PREFIX))
    errors = sum(1 for f in findings if f.severity is Severity.ERROR)
    warnings = len(findings) - errors
    failed = errors > 0 or (args.strict and warnings > 0)
    collector.add_findings(drift)
    report = collector.report()
    if args.json:
        data = {
            "recording": trace.path,
            "profile": trace.profile.name,
            "flows": trace.flow_count,
            "errors": errors,
            "warnings": warnings,
            "rules": [group.to_json() for group in contract],
            "drift": report.to_json(),
        }
        console().file.write(json_text(data, indent=2) + "\n")
    else:
        out = console()
        if catalogue is not None or drift:
            print_drift(out, report)
        _print_rules(out, contract)
        verdict = f"{errors} error(s), {warnings} warning(s) in {trace.flow_count} flows"
        out.print(Text(verdict, style="bold red" if failed else "bold green"))
    return EXIT_FINDINGS if failed else EXIT_OK


def _audit(
    trace: FlowReader,
    catalogue: Optional[MethodCatalogue],
    drift: DriftCollector,
    piece: int = 1000,
    mcp: Optional[McpAuditor] = None,
) -> list[Finding]:
    """`audit` over the trace ``piece`` flows at a time (memory does not grow with the trace),
    in the order one call over the whole trace gives, and ``mcp`` over its MCP layer; the
    drift of the other flows goes to ``drift``."""
    findings: list[Finding] = []
    unlocated: set[tuple[Any, ...]] = set()
    layers = trace.route_profiles
    if mcp is None:
        mcp = McpAuditor(mcp_routes(layers))
    for events, flows in trace.batches(piece):
        # The catalogue is the plugin's: the flows of another layer (the MCP hop) are not
        # read against it; they are the MCP auditor's.
        drift.add_flows(f for f in flows if f.route not in layers)
        findings += mcp.feed(flows)
        for finding in audit(events, flows, trace.profile, catalogue, layers):
            if finding.flow is None:  # the same report may come in two pieces: keep one
                violation = finding.violation
                key = (
                    finding.conn,
                    finding.direction,
                    violation.message,
                    violation.rule,
                    violation.path,
                )
                if key in unlocated:
                    continue
                unlocated.add(key)
            findings.append(finding)
    findings += mcp.finish()
    findings.sort(key=lambda f: (f.flow is None, f.flow or 0))
    return findings


# -- catalogue -------------------------------------------------------------------------------


def _catalogue(args: argparse.Namespace) -> Optional[MethodCatalogue]:
    if args.catalogue:
        try:
            return load_catalogue(args.catalogue)
        except CatalogueNotFound as exc:
            raise CatalogueError(f"{args.catalogue}: {exc}") from None
        except OSError as exc:
            raise CatalogueError(f"{args.catalogue}: {os_reason(exc)}") from None
        except ValueError as exc:
            raise CatalogueError(f"{args.catalogue}: not a method catalogue ({exc})") from None
    if args.catalogue_live:
        return fetch_live_catalogue(args.catalogue_live)
    return None


def fetch_live_catalogue(where: str, timeout: float = LIVE_TIMEOUT) -> MethodCatalogue:
    """Ask the plugin at ``where`` (HOST:PORT or unix:PATH) for ``list_methods``.

    Raises CatalogueError saying what went wrong."""
    try:
        address = parse_address(where)
    except ValueError as exc:
        raise CatalogueError(f"--catalogue-live: {exc}") from None
    try:
        if address.path is not None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(address.path)
        else:
            sock = socket.create_connection((address.host, address.port), timeout=timeout)
        with sock:
            request = {"id": "golem-proxy-check", "method": "list_methods", "params": {}}
            send_message(sock, request, GOLEM)
            reply = MessageReader(sock, GOLEM).read_message(Role.RESPONSE)
    except OSError as exc:
        raise CatalogueError(f"cannot ask list_methods at {address} ({os_reason(exc)})") from None
    except ValueError as exc:  # golem_core's wire errors are ValueErrors
        raise CatalogueError(f"list_methods at {address}: {exc}") from None
    methods = reply.result.get("methods") if isinstance(reply, Response) else None
    if not isinstance(reply, Response) or not isinstance(methods, list):
        raise CatalogueError(f"list_methods at {address}: unexpected answer {reply!r:.200}")
    return MethodCatalogue.from_method_list(methods, f"list_methods at {address}")


# -- drift -----------------------------------------------------------------------------------

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
    if not report.rows:
        if report.note:
            text = Text(safe_text(f"drift unknown: {report.note}"), style="yellow")
        else:
            text = Text("no drift: every method and param is known", style="green")
        out.print(Panel(text, title=title, border_style="yellow" if report.note else "green"))
        return
    table = Table(show_header=True, expand=False, box=None)
    for column in ("drift", "method", "param", "detail", "calls", "flows", "source"):
        table.add_column(column, justify="right" if column == "calls" else "left")
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
        cells = (d.method, param, detail, str(len(row.flows)), _flows(row.flows))
        source = f"{d.side}: {d.at}" if d.at and not row.recorded else ""
        table.add_row(Text(label, style=style), *(Text(safe_text(c)) for c in (*cells, source)))
    severe = any(r.drift.kind in ("unknown-method", "missing-required") for r in report.rows)
    out.print(Panel(table, title=title, border_style="red" if severe else "yellow"))
    if report.note:
        out.print(Text(safe_text(f"note: {report.note}"), style="yellow"))


def _flows(numbers: list[int]) -> str:
    shown = ", ".join(f"#{n}" for n in numbers[:_EXAMPLES_PER_RULE])
    return shown + (
        f" … (+{len(numbers) - _EXAMPLES_PER_RULE})" if len(numbers) > _EXAMPLES_PER_RULE else ""
    )


# -- rules -----------------------------------------------------------------------------------


def _literal(text: str) -> Text:
    """Text from the trace, shown as it is: no markup, no control characters."""
    return Text(safe_text(text))


def _print_rules(out: Console, groups: list[RuleGroup]) -> None:
    if not groups:
        out.print(Text("no contract violations", style="green"))
        return
    summary = Table(title="Contract violations by rule", title_justify="left")
    summary.add_column("rule")
    summary.add_column("severity")
    summary.add_column("count", justify="right")
    summary.add_column("summary")
    for group in groups:
        summary.add_row(
            _literal(group.rule),
            severity_text(group.severity),
            str(group.count),
            _literal(group.summary),
        )
    out.print(summary)
    for group in groups:
        detail = Table(
            title=_literal(f"{group.rule} ({group.count})"),
            title_justify="left",
            title_style="bold",
        )
        for column in ("flow", "conn", "dir", "method", "path", "message"):
            detail.add_column(column, justify="right" if column in ("flow", "conn") else "left")
        for finding in group.findings[:_EXAMPLES_PER_RULE]:
            detail.add_row(
                "" if finding.flow is None else f"#{finding.flow}",
                "" if finding.conn is None else str(finding.conn),
                finding.direction or "",
                _literal(finding.method or ""),
                _literal(finding.violation.path),
                _literal(finding.violation.message),
            )
        if group.count > _EXAMPLES_PER_RULE:
            detail.caption = f"… and {group.count - _EXAMPLES_PER_RULE} more (--json for all)"
        out.print(detail)
