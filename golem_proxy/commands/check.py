"""``golem-proxy check FILE``: every contract violation in a recording, grouped by rule, and
the drift against a method catalogue."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any, Optional

from rich.console import Console
from rich.text import Text

from golem_core.catalogue import MethodCatalogue
from golem_core.contract import Severity

from ..analysis.audit import CATALOGUE_RULE_PREFIX, Finding, RuleGroup, audit, group_by_rule
from ..analysis.coverage import Coverage
from ..analysis.drift import DriftCollector
from ..analysis.flow import Flow
from ..analysis.mcp_audit import MAX_PENDING, McpAuditor, lost_start
from ..analysis.placeholder_calls import recorded_falsely
from ..analysis.server_stderr import ServerStderr, stderr_heading
from ..analysis.tool_calls import mcp_routes
from ..analysis.trace import FlowReader, json_text, open_flows
from ..table_layout import Cell, Column, print_table
from ..terminal import counted, safe_text
from ._check_drift import EXAMPLES_PER_RULE, CatalogueError, fetch_live_catalogue, print_drift
from ._common import (
    CATALOGUE_HELP,
    CATALOGUE_METAVAR,
    EXIT_FINDINGS,
    EXIT_OK,
    catalogue_arg,
    console,
    fail,
    note_truncated,
    severity_text,
)
from ._options import add_recording
from ._progress import file_progress

NAME = "check"
HELP = "report every contract violation in a recording (and drift against a method catalogue)"
ORDER = 32

EXIT_INCOMPLETE = 3
"""No error found, but parts of the session were not inspected (gaps, requests let go,
frames withheld and never recorded, a recording cut short, still being written or with
lines lost, requests still waiting where it ends): not a pass a CI gate may take silently."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recording(parser)
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--catalogue",
        metavar=CATALOGUE_METAVAR,
        type=catalogue_arg,
        help=f"method catalogue: {CATALOGUE_HELP}",
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
    parser.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="exit 0 when parts of the session were not inspected (gaps, requests let go, "
        "frames the proxy withheld, a recording cut short or still being written, lines "
        "lost, requests pending where it ends), as long as nothing found fails; by default "
        f"that exits {EXIT_INCOMPLETE}",
    )


def run(args: argparse.Namespace) -> int:
    try:
        catalogue = _catalogue(args)
    except CatalogueError as exc:
        return fail(str(exc))
    trace = open_flows(args.file)  # TraceError: printed as one line by `golem_proxy.cli`
    collector = DriftCollector(catalogue, trace.profile)
    failures: Counter[str] = Counter()
    said: list[_Said] = []
    with trace, file_progress(trace.fileno(), "checking"):
        mcp = McpAuditor(mcp_routes(trace.route_profiles))
        notes: Counter[str] = Counter()
        coverage = Coverage()
        findings = _audit(
            trace,
            catalogue,
            collector,
            failures=failures,
            mcp=mcp,
            notes=notes,
            seen=coverage,
            said=said,
        )
    coverage.read_end(trace)
    note_truncated(trace)
    if notes["unparsed"]:
        text = (
            f"note: {counted(notes['unparsed'], 'flow')} with a payload too large to parse, "
            "read from its skeleton: its messages were not checked again (the recording's "
            "violations are the proxy's checks of them whole)"
        )
        console(stderr=True).print(Text(text, style="yellow"))
    if mcp.unchecked:
        text = (
            f"note: {mcp.unchecked} tools/call made before any tools/list, past the first "
            f"{MAX_PENDING}: their arguments were not checked against a schema"
        )
        console(stderr=True).print(Text(text, style="yellow"))
    if mcp.redacted_names:
        text = (
            f"note: {mcp.redacted_names} tools/call not checked against a tool's "
            "inputSchema: --redact hid the tool's name (in the call, or in the tools/list "
            "it would be found in)"
        )
        console(stderr=True).print(Text(text, style="yellow"))
    drift = [f for f in findings if f.rule.startswith(CATALOGUE_RULE_PREFIX)]
    contract = group_by_rule(f for f in findings if not f.rule.startswith(CATALOGUE_RULE_PREFIX))
    # A violation the proxy made (--fault, --intercept) is listed, never a peer's to fail on.
    proxy_made = sum(1 for f in findings if not f.counts)
    errors = sum(1 for f in findings if f.counts and f.severity is Severity.ERROR)
    warnings = len(findings) - proxy_made - errors
    failed = errors > 0 or (args.strict and warnings > 0)
    complete = coverage.complete
    collector.add_findings(drift)
    report = collector.report()
    if args.json:
        data = {
            "recording": trace.path,
            "profile": trace.profile.name,
            "flows": trace.flow_count,
            "errors": errors,
            "warnings": warnings,
            "by_proxy": proxy_made,
            "rules": [group.to_json() for group in contract],
            "drift": report.to_json(),
            "failed_flows": {"count": sum(failures.values()), "by_status": dict(failures)},
            "server_stderr": [
                {
                    "flow": number,
                    "status": status,
                    "when": stderr_heading(stderr).rstrip(":"),
                    "lines": list(stderr.lines),
                }
                for number, status, stderr in said
            ],
            "complete": complete,
            "not_inspected": coverage.to_json(),
        }
        console().file.write(json_text(data, indent=2) + "\n")
    else:
        out = console()
        if catalogue is not None or drift:
            print_drift(out, report)
        _print_rules(out, contract, complete)
        if failures:
            out.print(failures_text(failures), soft_wrap=True)
        for number, status, stderr in said:
            out.print(_said_text(number, status, stderr), soft_wrap=True)
        for line in coverage.lines():
            out.print(Text(line, style="yellow"), soft_wrap=True)
        verdict = (
            f"{counted(errors, 'error')}, {counted(warnings, 'warning')} in "
            f"{counted(trace.flow_count, 'flow')}"
        )
        if proxy_made:
            verdict += (
                f"; {counted(proxy_made, 'violation')} made by the proxy itself "
                "(--fault, --intercept), not by a peer: not counted"
            )
        style = "bold red" if failed else "bold green"
        if not complete:  # never a clean pass: the lines above say what was not inspected
            verdict += "; the session was not inspected whole"
            if not (failed or args.allow_incomplete):
                verdict += f" (exit {EXIT_INCOMPLETE}; --allow-incomplete accepts that)"
            style = "bold red" if failed else "bold yellow"
        out.print(Text(verdict, style=style), soft_wrap=True)
    if failed:
        return EXIT_FINDINGS
    return EXIT_OK if complete or args.allow_incomplete else EXIT_INCOMPLETE


def _audit(
    trace: FlowReader,
    catalogue: Optional[MethodCatalogue],
    drift: DriftCollector,
    piece: int = 1000,
    failures: Optional[Counter[str]] = None,
    mcp: Optional[McpAuditor] = None,
    notes: Optional[Counter[str]] = None,
    seen: Optional[Coverage] = None,
    said: Optional[list[_Said]] = None,
) -> list[Finding]:
    """`audit` over the trace ``piece`` flows at a time (memory does not grow with the trace),
    in the order one call over the whole trace gives, and ``mcp`` over its MCP layer; the
    drift of the other flows goes to ``drift``, every failed flow (`Flow.is_error`) is
    counted in ``failures`` by what failed (`Flow.failure`); ``notes`` counts
    the flows read from a skeleton (``unparsed``), whose messages are not checked again;
    ``seen`` what was not inspected (gaps, requests let go, frames withheld); ``said`` the
    server's stderr the first `SAID_ROWS` failed rows carry (`Flow.stderr`)."""
    findings: list[Finding] = []
    unlocated: set[tuple[Any, ...]] = set()
    recorded_mcp: set[tuple[Any, ...]] = set()
    layers = trace.route_profiles
    if mcp is None:
        mcp = McpAuditor(mcp_routes(layers))
    for events, flows in trace.batches(piece):
        # The catalogue is the plugin's: the flows of another layer (the MCP hop) are not
        # read against it; they are the MCP auditor's.
        drift.add_flows(f for f in flows if f.route not in layers)
        if notes is not None:
            notes["unparsed"] += sum(1 for flow in flows if _unparsed(flow))
        if seen is not None:
            seen.add(events, flows)
        if failures is not None:
            failures.update(
                flow.failure(trace.profile_for(flow.route)) for flow in flows if flow.is_error
            )
        if said is not None:
            for flow in flows:
                if flow.stderr is not None and len(said) < SAID_ROWS:
                    said.append(
                        (flow.number, flow.failure(trace.profile_for(flow.route)), flow.stderr)
                    )
        found_again = mcp.feed(flows)
        by_number = {flow.number: flow for flow in flows}
        for finding in audit(events, flows, trace.profile, catalogue, layers):
            row = by_number.get(finding.flow) if finding.flow is not None else None
            if row is not None and recorded_falsely(row, finding.rule):
                continue  # recorded taking a redacted name for a tool: `mcp.redacted_names`
            if lost_start(mcp, finding.flow, finding.rule):
                continue  # recorded as if a gap had shown no `initialize` was sent
            if finding.rule.startswith(MCP_RULES):  # recorded as the session ran
                recorded_mcp.add(_mcp_key(finding))
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
        # What the session decided and recorded is found again here: counted once.
        findings += [f for f in found_again if _mcp_key(f) not in recorded_mcp]
    findings += mcp.finish()
    findings.sort(key=lambda f: (f.flow is None, f.flow or 0))
    return findings


MCP_RULES = "mcp."
"""The MCP layer's rules: decided by `McpAuditor` here, and as the session ran
(live/mcp_rules_live.py) where it could."""


def _mcp_key(finding: Finding) -> tuple[Any, ...]:
    """What makes two findings of the MCP layer's rules the same one."""
    return (finding.flow, finding.direction, finding.rule, finding.violation.path)


SAID_ROWS = 3
"""The failed rows whose server's stderr `check` prints: the first say why the server failed;
a chatty server's later ones are for `show`."""

_Said = tuple[int, str, ServerStderr]
"""A failed row's number, its failure and the server's stderr it carries."""


def _said_text(number: int, status: str, stderr: ServerStderr) -> Text:
    """``#1 unanswered: the server's stderr before …:`` and the lines, indented."""
    text = Text(f"#{number} {safe_text(status, 80)}: {stderr_heading(stderr)}", style="red")
    for line in stderr.lines:
        text.append("\n  │ ")
        text.append(safe_text(line), style="yellow")
    return text


def failures_text(failures: Counter[str]) -> Text:
    """One line: how many flows failed (their outcome, an error in a result included) and
    what failed (`Flow.failure`: the status, or a malformed request answered without error).
    Failures are what the peers did, not contract violations: they do not change the exit
    code."""
    total = sum(failures.values())
    parts = ", ".join(f"{n} {safe_text(status, 80)}" for status, n in failures.most_common())
    flows = "flow" if total == 1 else "flows"
    return Text(f"{total} {flows} failed: {parts}", style="red")


def _catalogue(args: argparse.Namespace) -> Optional[MethodCatalogue]:
    if args.catalogue is not None:
        return args.catalogue  # type: ignore[no-any-return]  # loaded by catalogue_arg
    if args.catalogue_live:
        return fetch_live_catalogue(args.catalogue_live)
    return None


def _literal(text: str) -> str:
    """Text from the trace, shown as it is: no control characters (and, being a plain
    string in a table cell, never read as markup)."""
    return safe_text(text)


def _print_rules(out: Console, groups: list[RuleGroup], complete: bool) -> None:
    if not groups:
        if complete:
            out.print(Text("no contract violations", style="green"))
        else:
            out.print(Text("no contract violations in what was inspected", style="yellow"))
        return
    rows: list[list[Cell]] = [
        [
            _literal(group.rule),
            Text("by proxy", style="cyan") if group.by_proxy else severity_text(group.severity),
            str(group.count),
            _literal(group.summary),
        ]
        for group in groups
    ]
    print_table(out, _SUMMARY_COLUMNS, rows, Text("Contract violations by rule", style="italic"))
    for group in groups:
        out.print()
        heading = Text(_literal(f"{group.rule} ({group.count})"), style="bold")
        rows = [
            [
                "" if finding.flow is None else f"#{finding.flow}",
                "" if finding.conn is None else str(finding.conn),
                finding.direction or "",
                _literal(finding.method or ""),
                _literal(finding.violation.path),
                _finding_message(finding),
            ]
            for finding in group.findings[:EXAMPLES_PER_RULE]
        ]
        print_table(out, _FINDING_COLUMNS, rows, heading)
        if group.count > EXAMPLES_PER_RULE:
            more = f"… and {group.count - EXAMPLES_PER_RULE} more (--json for all)"
            out.print(Text(more, style="dim"), soft_wrap=True)


def _finding_message(finding: Finding) -> Text:
    """The finding's message, after whose doing it is when the proxy made it."""
    text = Text()
    if finding.by_proxy is not None:
        by = _literal(finding.by_proxy)
        text.append(f"the proxy's doing ({by}), not the frame's sender's: ", style="cyan")
    text.append(_literal(finding.violation.message))
    return text


_SUMMARY_COLUMNS = (
    Column("rule", wrap=True, priority=2, floor=12),
    Column("severity"),
    Column("count", right=True),
    Column("summary", wrap=True, priority=1, floor=16),
)
_FINDING_COLUMNS = (
    Column("flow", right=True),
    Column("conn", right=True, short="c"),
    Column("dir"),
    Column("method", wrap=True, priority=3, floor=14),
    Column("path", wrap=True, priority=1, floor=10),
    Column("message", wrap=True, priority=0, floor=16),
)


def _unparsed(flow: Flow) -> bool:
    """Whether a message of ``flow`` is a skeleton (a payload too large to parse)."""
    return any(frame is not None and frame.elided for frame in (flow.request, flow.response))
