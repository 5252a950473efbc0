"""What `mcp-verify` prints: its table and the lines under it, or its JSON."""

from __future__ import annotations

from typing import Any, Optional

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..replay.call_scope import summary_of
from ..replay.live_targets import TargetLost
from ..replay.mcp_verify import McpCheck, McpVerifyResult
from ..replay.route_addresses import RouteAddresses
from ..replay.standin_notes import played_lines
from ..replay.state_order import ahead_lines
from ..terminal import safe_text

__all__ = ["render", "report_json"]


def report_json(
    result: McpVerifyResult,
    misses: list[dict[str, Any]],
    outages: list[dict[str, Any]],
    addresses: RouteAddresses,
    lost: Optional[TargetLost] = None,
    played: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    played = played or {}
    return {
        "ok": result.ok and lost is None,
        "target_lost": lost.to_json() if lost is not None else None,
        "tool_calls": len(result.tool_checks),
        "differing": [check.name for check in result.tool_checks if check.differs],
        "failed_as_recorded": [
            check.name for check in result.tool_checks if check.as_recorded is not None
        ],
        "not_played": [check.name for check in result.tool_checks if check.not_played],
        "differing_requests": _differing_requests(result),
        "checks": [check.to_json() for check in result.checks],
        "non_json_lines": result.non_json_lines,
        "first_non_json": result.first_non_json or None,
        "standin_misses": misses,
        "standin_ahead": result.standin_ahead,
        "standin_outage": outages,
        "standin_late": played.get("late", []),
        "standin_idle_close": played.get("idle_close", []),
        "route_addresses": addresses.to_json(),
        "exit_status": result.exit_status,
    }


def render(
    result: McpVerifyResult,
    misses: list[dict[str, Any]],
    console: Console,
    outages: Optional[list[dict[str, Any]]] = None,
    addresses: Optional[RouteAddresses] = None,
    lost: Optional[TargetLost] = None,
    played: Optional[dict[str, Any]] = None,
) -> None:
    """The table (tool, #, outcome, first difference), what else went wrong, what matched
    only with the route addresses swapped, a summary (none when a live plugin went away
    in the middle: the command says that in its one line)."""
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("tool", style="bold magenta", overflow="fold")
    table.add_column("#", justify="right")
    table.add_column("result")
    table.add_column("first difference", overflow="fold")
    for check in result.checks:
        if check.not_played:  # the failure is the step's before it, said on its row
            verdict, said = Text("not played", "yellow"), check.first_difference()
        elif check.as_recorded is not None:
            verdict = Text("failed as recorded", "red")
            said = f"{check.first_difference()}; {check.as_recorded}"
        elif not check.ok:
            verdict, said = Text("differs", "red"), check.first_difference()
            if check.cause is not None:  # what may explain it comes first
                said = f"{check.cause}: {said}"
        elif check.not_compared is not None:
            verdict, said = Text("not compared", "yellow"), check.not_compared
        elif check.notes:
            noted = "; ".join(note.describe() for note in check.notes)
            verdict, said = Text("match", "green"), f"told, not failing: {noted}"
        else:
            verdict, said = Text("match", "green"), ""
        if check.played:  # why a recorded failure matched: the stand-in played it so
            said = "; ".join([*([said] if said else []), *check.played])
        table.add_row(
            Text(safe_text(check.name)),
            "" if check.number is None else str(check.number),
            verdict,
            Text(safe_text(said)),
        )
    console.print(table)
    if result.non_json_lines:
        console.print(
            Text(
                f"the server wrote {result.non_json_lines} line(s) to stdout that are not "
                f"JSON-RPC (first: {safe_text(result.first_non_json, 120)!r}): a client "
                "reports each as an error and drops it, or fails on it",
                "bold red",
            )
        )
    if outages:
        console.print(Text(_outage_text(outages), "yellow"))
    for line in played_lines(played or {}):
        console.print(Text(safe_text(line), "yellow"))
    mapped = [check for check in result.checks if check.route_addresses]
    if mapped and addresses is not None:
        console.print(Text(_addresses_text(mapped, addresses), "dim"))
    if misses:
        # Each fails the run: what the build sent that the recording never had would reach
        # Rhino too (and what the recording had, under another call, is not this call's).
        console.print(
            Text(
                f"the build sent {len(misses)} GOLEM request(s) the stand-in had no recorded "
                "answer for (each answered with an error):",
                "bold red",
            )
        )
        for miss in misses:
            console.print(Text("  " + _miss_text(miss)))
    if result.standin_ahead:
        # A warning, not a failure: the answer may not depend on what was not sent.
        console.print(Text("the stand-in answered out of recorded order:", "yellow"))
        for line in ahead_lines(result.standin_ahead):
            console.print(Text("  " + safe_text(line)))
    if any(check.differences for check in result.checks):
        # The table is a preview: say so, and where the rest is.
        console.print(
            Text(
                "each row shows its first difference, values cut at 60 characters (…): "
                "--json lists every difference whole",
                "dim",
            )
        )
    problems = [check for check in result.checks if check.problem is not None]
    if problems and result.stderr_tail.strip():
        console.print(Text("the server's last words on stderr:", "yellow"))
        # Line by line: one Text of them all escaped each newline (`\n` printed as such).
        for line in result.stderr_tail.strip()[-2000:].splitlines():
            console.print(Text(safe_text(line)))
    tools = result.tool_checks
    differing = [check.name for check in tools if check.differs]
    others = _differing_requests(result)
    if lost is not None:
        if differing:  # the build's differences before the plugin went away
            names = safe_text(", ".join(dict.fromkeys(differing)))
            compared = sum(1 for check in tools if check.not_compared is None)
            console.print(
                Text(
                    f"mcp-verify: {len(differing)} of the {compared} tool calls compared "
                    f"before the live plugin went away differ: {names}",
                    "red",
                )
            )
        return
    unknown = sum(1 for check in tools if check.ok and check.not_compared is not None)
    if result.ok and unknown:
        console.print(
            f"[green]mcp-verify: all {len(tools) - unknown} tool calls compared match[/green]; "
            f"{unknown} could not be compared (the rows say why)"
        )
    elif result.ok:
        console.print(f"[green]mcp-verify: all {len(tools)} tool calls match[/green]")
    elif summary := _summary(tools, others, unknown):
        console.print(Text("mcp-verify: " + "; ".join(summary), "red"))
    elif misses:
        console.print(
            Text(
                f"mcp-verify: the tool calls match, but the build sent {len(misses)} GOLEM "
                "request(s) the stand-in had no recorded answer for",
                "red",
            )
        )
    else:
        console.print(Text("mcp-verify: the tool calls match, the session did not", "red"))


def _summary(tools: list[McpCheck], others: list[str], unknown: int) -> list[str]:
    """The clauses of the summary of a run whose checks failed: the tool calls that differ,
    those that failed as the recorded calls did, those not played (after a step the server
    left unanswered: the reason is that step's), then the other requests that differ; none
    when every check passed (the run failed otherwise)."""
    clauses: list[str] = []
    unplayed = [check for check in tools if check.not_played]
    alike = [check.name for check in tools if check.as_recorded is not None]
    kinds = [
        ("differ", [check.name for check in tools if check.differs], ""),
        ("failed as recorded", alike, ""),
        ("not played", [check.name for check in unplayed], unplayed and unplayed[0].problem),
    ]
    for said, names, why in kinds:
        if names:
            # The first clause says of how many; the reason of those not played is one.
            of = "" if clauses else f" of {len(tools)} tool calls"
            listed = f": {_names(names)}" if not why else f" ({_names(names)}): {why}"
            clauses.append(f"{len(names)}{of} {said}{listed}")
    if not clauses and others:
        qualifier = "compared " if unknown else ""
        clauses.append(f"the {len(tools) - unknown} tool calls {qualifier}match")
    if others:
        # What the model is told (the tools, the server) changed, whatever the results.
        verb = "differs" if len(others) == 1 else "differ"
        clauses.append(f"{safe_text(', '.join(others))} {verb}")
    return [safe_text(clause) for clause in clauses]


def _names(names: list[str]) -> str:
    return ", ".join(dict.fromkeys(names))


def _miss_text(miss: dict[str, Any]) -> str:
    """One miss as the JSON has it, in words: the call it came in, what was sent, why."""
    call = miss.get("tool_call")
    if "tool_call" not in miss:  # not told by call (a stand-in that served any answer)
        return safe_text(f"{miss['route']} {miss['method']}: {miss['message']}")
    during = (
        f"#{call['number']} {call['tool']} {summary_of(call['arguments'])}"
        if isinstance(call, dict)
        else "outside any tool call"
    )
    sent = f"{miss['method']} {summary_of(miss.get('params'))}"
    return safe_text(f"{during} sent {sent} on {miss['route']}: {miss['message']}")


def _differing_requests(result: McpVerifyResult) -> list[str]:
    """The methods of the requests other than tool calls whose answers differ, each once."""
    return list(
        dict.fromkeys(check.name for check in result.checks if check.tool is None and check.differs)
    )


def _outage_text(outages: list[dict[str, Any]]) -> str:
    # One mention per call, in order, whatever its routes.
    calls = dict.fromkeys((item["number"], item["tool"]) for item in outages)
    named = ", ".join(
        f"#{number} {tool}" if number is not None else str(tool) for number, tool in calls
    )
    return safe_text(
        f"the plugin was down during {len(calls)} recorded tool call(s) ({named}): the "
        "stand-in ended, reset or refused their GOLEM connections as the recording shows"
    )


def _addresses_text(mapped: list[McpCheck], addresses: RouteAddresses) -> str:
    """Which calls matched with a recorded route address read as the route's address now,
    and which addresses those were."""
    calls = ", ".join(
        f"#{check.number} {check.name}" if check.number is not None else check.name
        for check in mapped
    )
    routes = {route for check in mapped for route in check.route_addresses}
    pairs = ", ".join(
        f"{pair.route} {pair.recorded} → {pair.live}"
        for pair in addresses.pairs
        if pair.route in routes
    )
    return safe_text(
        f"{len(mapped)} tool result(s) ({calls}) matched with a GOLEM route's recorded "
        f"address read as this run's: {pairs}"
    )
