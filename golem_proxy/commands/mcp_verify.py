"""``golem-proxy mcp-verify REC -- COMMAND``: the regression test of an MCP server, with
neither a model nor Rhino.

It starts COMMAND, plays it the client side recorded in REC (`golem-proxy mcp --record`),
serves its GOLEM calls from REC's GOLEM layer (the replay engine as a stand-in for Rhino)
or lets them reach a live plugin (``--target``), compares every tool result with the
recorded one (a recorded GOLEM route's address in it read as where the server was pointed for
that route now) and what ``initialize`` and ``tools/list`` tell the model (`mcp_answers`),
prints a table (`_mcp_verify_report`) and exits 0 (all match), 1 (differences) or 2 (could
not run, or a live plugin went away in the middle: its failures are not the server's).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any, Optional

import trio
from rich.console import Console

from golem_core.profiles import GOLEM, get_profile

from ..analysis.trace import json_text
from ..analysis.two_layers import read_two_layers
from ..live.proxy_options import BoundRoute
from ..net.addresses import Address, Route
from ..net.listeners import ListenError
from ..replay.call_scope import CallScopes
from ..replay.diffing import Comparator
from ..replay.engine import MissRecord, ReplayEngine
from ..replay.index import ExchangeTrace, load_exchanges
from ..replay.late_hold import LateHold
from ..replay.live_redaction import LiveRedaction
from ..replay.live_targets import LiveTargets, TargetLost
from ..replay.mcp_child import ChildStartError, McpChild
from ..replay.mcp_script import ClientStep, McpScript, NoMcpLayer, note_endings, read_script
from ..replay.mcp_verify import McpVerifyResult, play
from ..replay.outage_plan import OutagePlan, RouteHistories
from ..replay.outage_standin import AppliedOutage, OutageStandIn
from ..replay.route_addresses import RouteAddresses
from ..replay.server import ReplayServer
from ..replay.setup import ReplayOptions, assign_routes, engine_for
from ..replay.standin_notes import explain, idle_json, late_json
from ._bound_routes import client_environment
from ._common import CommandError, print_error, print_notes, reading
from ._comparing import add_comparison_arguments, comparator_from
from ._mcp_verify_report import render, report_json
from ._options import add_address, add_recording, add_timeout

NAME = "mcp-verify"
HELP = "replay a recorded MCP session to a server build, Rhino stood in, and compare its answers"
ORDER = 42
EXIT_DIFFERENT = 1
ANY_PORT = Address("127.0.0.1", 0)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "golem-proxy mcp-verify REC [OPTIONS] -- COMMAND [ARGS...]"
    add_recording(parser, "a recording of golem-proxy mcp", metavar="REC")
    add_address(
        parser,
        "--target",
        "a live plugin's main socket (default: the recording's GOLEM layer stands in)",
    )
    add_address(
        parser,
        "--gh-target",
        "a live plugin's Grasshopper socket (default: the recording stands in)",
    )
    add_comparison_arguments(
        parser,
        ignore_metavar="PATH",
        ignore_help="leave a path of the tool results out: result.x or TOOL:result.x",
    )
    add_timeout(parser, "seconds to wait for each answer of the server (default 30)")
    add_timeout(
        parser,
        "once done, how long the server may take to exit before it is terminated (default 5)",
        flag="--exit-timeout",
        default=5.0,
        metavar="SECONDS",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "server", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]", help="the MCP server"
    )
    parser.set_defaults(reparse=parser)


@dataclass
class _Run:
    """What one verification needs besides the recording."""

    argv: list[str]
    script: McpScript
    numbers: dict[int, int]
    plan: OutagePlan
    trace: ExchangeTrace
    scopes: CallScopes
    late: LateHold
    comparator: Comparator
    target: Optional[Address]
    gh_target: Optional[Address]
    timeout: float
    exit_timeout: float


def _server_command(args: argparse.Namespace) -> list[str]:
    """The server's command line, with the options given between REC and ``--`` parsed into
    ``args``: argparse hands everything after the positional REC to the remainder."""
    words = list(args.server)
    if "--" in words:
        at = words.index("--")
        head, argv = words[:at], words[at + 1 :]
    elif words and words[0].startswith("-"):
        head, argv = words, []
    else:
        head, argv = [], words
    if head:
        again = args.reparse.parse_args([*head, args.file])
        if again.server:
            raise CommandError(f"mcp-verify: unexpected {again.file!r} before --")
        for name, value in vars(again).items():
            if name not in ("file", "server"):
                setattr(args, name, value)
    return argv


def run(args: argparse.Namespace) -> int:
    argv = _server_command(args)
    if not argv:
        raise CommandError(
            "mcp-verify: no server command", "give it after --: golem-proxy mcp-verify REC -- CMD"
        )
    comparator = comparator_from(args)
    with reading(args.file):
        # The GOLEM routes' lines are followed in the pass that reads the client's side.
        histories = RouteHistories()
        try:
            script = read_script(args.file, histories.add)
        except NoMcpLayer as exc:
            raise CommandError(str(exc)) from None
        plan = histories.plan(script)
        trace = load_exchanges(args.file)
        layers = read_two_layers(args.file)
        # A request the recording left unanswered says why, as its row does in every view.
        note_endings(script, layers.mcp)
        scopes = CallScopes.of(layers, trace)
        late = LateHold.of(layers, trace)
        numbers = {index: call.number for index, call in scopes.calls.items()}
    if not script.tool_calls:
        raise CommandError(f"{args.file}: no tool calls to verify")
    job = _Run(
        argv,
        script,
        numbers,
        plan,
        trace,
        scopes,
        late,
        comparator,
        args.target,
        args.gh_target,
        args.timeout,
        args.exit_timeout,
    )
    live = LiveTargets(
        {"--target": args.target, "--gh-target": args.gh_target}, len(script.tool_calls)
    )
    try:
        result, misses, standin = trio.run(_verify, job, live)
    finally:
        trace.close()
    outages = _outages(job, standin.applied)
    played = _played(job, standin, result)
    addresses = comparator.addresses
    lost = live.lost
    if args.json:
        report = report_json(result, misses, outages, addresses, lost, played)
        report["notes"] = layers.notes
        print(json_text(report, indent=2))
    else:
        render(result, misses, Console(highlight=False), outages, addresses, lost, played)
    # On stderr, as every reader says them (a recording cut short, lines lost or out of
    # order); they change no exit status.
    print_notes(layers.notes)
    if lost is not None:
        went = (
            f"mcp-verify: the live plugin at {lost.address} ({lost.option}) went away during "
            f"{lost.call}: {lost.reason}"
        )
        # That call is not compared: the plugin's failure, or the build's call that ended
        # it (GOLEM has a shutdown method); the calls after it were not played.
        said = f"{lost.call} not compared, {_not_played(lost)}"
        if not any(not check.ok for check in result.tool_checks):
            # Nothing compared differed: exit 2, as a plugin never reached, so a CI gate
            # does not call the plugin's failure a regression.
            raise CommandError(went, said)
        # The build's own differences before it stand: a regression, however it ended.
        print_error(f"{went} ({said})")
        return EXIT_DIFFERENT
    return 0 if result.ok else EXIT_DIFFERENT


def _not_played(lost: TargetLost) -> str:
    count = lost.not_played
    return f"{count} tool call{'' if count == 1 else 's'} after it not played"


async def _verify(
    job: _Run, live: LiveTargets
) -> tuple[McpVerifyResult, list[dict[str, Any]], OutageStandIn]:
    unreachable = await live.unreachable()
    if unreachable is not None:
        option, address, reason = unreachable
        raise CommandError(
            f"mcp-verify: cannot reach the live plugin at {address} ({option})", reason
        )
    engine = engine_for(job.trace, ReplayOptions(reuse_hint=None))
    listen = assign_routes(job.trace, ANY_PORT, ANY_PORT)
    # The stand-in answers from the recording, and plays its outages as they were.
    standin = OutageStandIn(ReplayServer(engine, listen), listen, job.plan, job.late)

    async def before_step(step: ClientStep) -> None:
        # The stand-in serves the call in flight its own recorded exchanges (`call_scope`);
        # a notification leaves the scope of the request before it.
        if step.is_request:
            engine.scope = job.scopes.for_index(step.index if step.tool is not None else None)
        await standin.begin(step)

    failed: Optional[str] = None
    result = McpVerifyResult()
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(standin.run)
        main, gh = _endpoints(bound, job.target, job.gh_target)
        # The server names what it dialled; the recording's server named the route then.
        pointed = {GOLEM.channels[0]: main, GOLEM.channels[1]: gh}
        job.comparator.addresses = RouteAddresses.between(job.trace.header.routes, pointed)
        child = McpChild(job.argv, _environment(main, gh))
        try:
            await child.start(nursery)
        except ChildStartError as exc:
            failed = str(exc)
        else:
            try:
                result = await play(
                    job.script,
                    child,
                    job.comparator,
                    numbers=job.numbers,
                    timeout=job.timeout,
                    before_step=before_step,
                    answered=standin.returned,
                    after_check=live.after_check,
                    redaction=LiveRedaction(get_profile("mcp"), job.trace.header.redact),
                )
            except ListenError as exc:
                failed = f"the stand-in could not listen again: {exc}"
            result.exit_status = await child.stop(job.exit_timeout)
            result.stderr_tail = child.stderr_tail
        nursery.cancel_scope.cancel()
    if failed is not None:
        raise CommandError(f"mcp-verify: {failed}")
    _blame(result, engine.misses())
    result.standin_ahead = engine.order.notes()
    return result, _misses(engine), standin


def _blame(result: McpVerifyResult, misses: list[MissRecord]) -> None:
    """Fail the run for every GOLEM request the stand-in could not answer, and each tool
    call for those it sent: the call that changed is named, whatever its result reads."""
    result.standin_misses = len(misses)
    checks = {check.number: check for check in result.tool_checks if check.number is not None}
    for miss in misses:
        call = miss.scope.call if miss.scope is not None else None
        check = checks.get(call.number) if call is not None else None
        if check is None:
            continue
        check.sent_unrecorded.append(miss.describe_sent())
        check.route_addresses = []


def _endpoints(
    bound: dict[str, Address], target: Optional[Address], gh_target: Optional[Address]
) -> tuple[Address, Address]:
    """Where the server's main and Grasshopper sockets go: a live plugin when given, else
    the stand-in."""
    main_route, gh_route = GOLEM.channels[0], GOLEM.channels[1]
    standing_in = list(bound.values())
    main = target or bound.get(main_route, standing_in[0])
    gh = gh_target or bound.get(gh_route, standing_in[-1])
    return main, gh


def _environment(main: Address, gh: Address) -> dict[str, str]:
    """Ours, with the variables that point the server at ``main`` and ``gh`` (the golem
    profile names them: GOLEM_RHINO_HOST, GOLEM_RHINO_PORT, GOLEM_GH_PORT)."""
    routes = [
        BoundRoute(Route(GOLEM.channels[0], main, main), main),
        BoundRoute(Route(GOLEM.channels[1], gh, gh), gh),
    ]
    return dict(os.environ, **client_environment(routes, GOLEM))


def _misses(engine: ReplayEngine) -> list[dict[str, Any]]:
    return [miss.to_json() for miss in engine.misses()]


def _played(job: _Run, standin: OutageStandIn, result: McpVerifyResult) -> dict[str, Any]:
    """What the stand-in played of the recording's late answers and idle closes, on the
    routes the server was pointed at it, said on the calls (`standin_notes.explain`) and
    listed: ``late`` and ``idle_close``."""
    live = _live_routes(job)
    idle = [item for item in standin.idle_closed if not live.get(item.route, False)]
    explain(result.tool_checks, job.late, idle, job.numbers)
    tools = {step.index: step.tool or "?" for step in job.script.tool_calls}
    return {"late": late_json(job.late), "idle_close": idle_json(idle, job.numbers, tools)}


def _live_routes(job: _Run) -> dict[str, bool]:
    """Which GOLEM routes go to a live plugin (``--target``, ``--gh-target``)."""
    return {
        GOLEM.channels[0]: job.target is not None,
        GOLEM.channels[1]: job.gh_target is not None,
    }


def _outages(job: _Run, applied: list[AppliedOutage]) -> list[dict[str, Any]]:
    """The tool calls during which the stand-in played a route's outage, on the routes the
    server was pointed at it (a live plugin given for a channel plays none)."""
    live = _live_routes(job)
    tools = {step.index: step.tool for step in job.script.tool_calls}
    return [
        {
            "number": job.numbers.get(item.index),
            "tool": tools.get(item.index),
            "route": item.route,
            "resets": item.outage.resets,
            "refused": item.outage.refused,
            "reset_open": item.outage.reset_open,
            "ended": bool(item.outage.ends),
        }
        for item in applied
        if not live.get(item.route, False)
    ]
