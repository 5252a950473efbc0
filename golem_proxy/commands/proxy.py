"""``golem-proxy proxy``: relay, decode, log and record a live session."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Mapping
from typing import Optional

from rich.console import Console

from golem_core.catalogue import MethodCatalogue
from golem_core.profiles import PROFILES, Profile, get_profile

from ..analysis.filters import FilterError, parse_filter
from ..live.faults import FaultPlan, FaultSpecError
from ..live.intercept import InterceptEngine, route_scope
from ..live.log import Verbosity
from ..live.log_output import DEFAULT_MAX_LINES, TerminalOutput
from ..live.observer import DEFAULT_BUDGET
from ..live.proxy_options import ProxyOptions
from ..live.session import SessionConfig
from ..live.tap import ObserveLimits
from ..net.addresses import Route, parse_address, parse_route
from ..recording.safe_paths import (
    RecordPathError,
    check_record_target,
    removed_unless_started,
    resolve_record_path,
)
from ..table_layout import print_line
from ._child_tui import check_child_tui, serve_child_tui
from ._common import (
    CATALOGUE_HELP,
    CATALOGUE_METAVAR,
    CommandError,
    catalogue_arg,
    count_arg,
    integer_arg,
    seconds_arg,
)
from ._live_tui import serve_with_tui
from ._options import CHILD_PROCESS, IN_PROCESS, add_observer, check_spool, mebibytes_arg
from ._proxy_serve import serve, serve_forwarding
from ._session_errors import os_problem, run_session

NAME = "proxy"
HELP = "Run the proxy: forward byte for byte, decode on the side, log and record."
ORDER = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--route",
        action="append",
        metavar="[NAME@]LISTEN=UPSTREAM",
        help=(
            "relay LISTEN to UPSTREAM; each side is HOST:PORT or unix:PATH. Repeatable; "
            "replaces the profile's default routes (golem: main 127.0.0.1:19876=127.0.0.1:9876, "
            "gh 127.0.0.1:19877=127.0.0.1:9877; jsonrpc-ndjson: "
            "unix:$XDG_RUNTIME_DIR/golem-proxy/scrybe.sock=unix:${SCRYBE_SOCK:-~/.scrybe/sock})"
        ),
    )
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default="golem",
        help="the protocol on the routes: golem (GOLEM-3DMCP, length-prefixed JSON over TCP; "
        "the default), jsonrpc-ndjson (JSON-RPC 2.0 over NDJSON, the Scrybe 0.6 contract) or "
        "mcp (MCP's JSON-RPC over NDJSON, on a socket: give --route; for a stdio server use "
        "golem-proxy mcp)",
    )
    parser.add_argument(
        "--listen-public",
        action="store_true",
        help="allow listening on non-loopback addresses (anyone who can reach them can use it)",
    )
    parser.add_argument(
        "--tui",
        action="store_true",
        help="show the session in the terminal UI instead of the log",
    )
    add_observer(
        parser,
        default=None,
        help="where decoding, the log and the recording run: child-process (the default: a "
        "process of its own, on another core, fed every forwarded chunk through a pipe; "
        "--fault, --intercept and --enforce-limits still decide in the forwarding process, and "
        "with --tui the observing process draws the TUI) or in-process (with forwarding, "
        "yielding to it; the default for --tui with --intercept, whose held frames the TUI "
        "decides in one process)",
        hold_help="with --observer child-process: how long a connection may wait in one go for "
        "a recording more than 60 ms behind the wire to catch up; past it, that connection's "
        "bytes are forwarded but not observed until it has, and the gap is recorded (default: "
        "no limit: a flooding connection is forwarded at the pace it is recorded, the others "
        "go on)",
    )
    add_session_arguments(parser)


INTERCEPT_DECIDED_HERE = (
    "type accept/edit/drop/answer commands on stdin (? for help), or use the keys of --tui "
    "('' holds nothing until `i` sets a filter there)"
)
"""Where `proxy --intercept`'s decisions are made (`golem-proxy mcp` says its own)."""


def add_session_arguments(
    parser: argparse.ArgumentParser, intercept_decided: str = INTERCEPT_DECIDED_HERE
) -> None:
    """The options of a proxy session that `golem-proxy mcp` takes too: recording, logging,
    checks, faults, interception (``intercept_decided``: where its decisions are made, for
    its help) and the observer's limits."""
    parser.add_argument("--record", metavar="PATH", help="write the session to this recording")
    parser.add_argument(
        "--record-dir",
        metavar="DIR",
        help="confine recordings to DIR: --record is relative to it and may not escape it "
        "through .. or symlinks (default name: session-TIMESTAMP.jsonl; session-TIMESTAMP-2.jsonl, "
        "… when another session took it)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing recording file"
    )
    loudness = parser.add_mutually_exclusive_group()
    loudness.add_argument("--quiet", "-q", action="store_true", help="log problems only")
    loudness.add_argument("--verbose", "-v", action="store_true", help="log every frame too")
    parser.add_argument(
        "--enforce-limits",
        action="store_true",
        help="close a connection that sends an oversized or undecodable frame "
        "(default: report it and forward it anyway)",
    )
    parser.add_argument(
        "--max-frame", type=count_arg, metavar="BYTES", help="frame cap (default: the profile's)"
    )
    parser.add_argument(
        "--redact",
        action="append",
        default=[],
        metavar="[METHOD:]PATH",
        help="replace the value at PATH (e.g. params.code) before it is logged or recorded",
    )
    parser.add_argument(
        "--catalogue",
        metavar=CATALOGUE_METAVAR,
        type=catalogue_arg,
        help="method catalogue: report methods the plugin does not register, params it "
        f"ignores; {CATALOGUE_HELP}",
    )
    parser.add_argument(
        "--idle-timeout",
        type=seconds_arg,
        metavar="SECONDS",
        help="close a connection once nothing crossed it either way for this long (time the "
        "proxy holds a frame, --fault delay or --intercept, does not count; time the plugin "
        "takes to answer does). A client that keeps its connection open between calls (the "
        "MCP server of golem-proxy mcp, between the model's calls) finds it closed at its next "
        "call, which may fail: set it above the longest pause between calls, not only above "
        "the slowest call",
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="SPEC",
        help="inject a fault, e.g. delay:ms=200,method=scene.* or error:code=TIMEOUT "
        "(repeatable; grammar in docs/faults.md)",
    )
    parser.add_argument(
        "--fault-seed",
        type=integer_arg,
        metavar="N",
        help="seed for fault probabilities (default: random, printed at start)",
    )
    parser.add_argument(
        "--intercept",
        metavar="FILTER",
        help="hold the frames FILTER selects (docs/filters.md; ~q requests, ~s responses) "
        f"until decided: {intercept_decided}; the routes then forward frame by frame",
    )
    parser.add_argument(
        "--intercept-timeout",
        type=seconds_arg,
        metavar="SECONDS",
        help="send a frame held this long as it came (default: hold until decided)",
    )
    parser.add_argument(
        "--log-buffer",
        type=int,
        default=DEFAULT_MAX_LINES,
        metavar="LINES",
        help="log lines (at most 4 MiB) that may wait for a terminal or pipe that stopped "
        "reading; past that, lines are dropped and counted, never the proxy slowed "
        f"(default {DEFAULT_MAX_LINES})",
    )
    parser.add_argument(
        "--drain-timeout",
        type=seconds_arg,
        default=2.0,
        metavar="SECONDS",
        help="on Ctrl-C, how long live connections may finish (another Ctrl-C cuts them at "
        "once), and then how long the log may take to show what is left (it says how many "
        "events it could not; default 2)",
    )
    parser.add_argument(
        "--observer-memory",
        type=mebibytes_arg,
        default=DEFAULT_BUDGET,
        metavar="MIB",
        help="what inspection may hold, all connections together; past it, bytes are "
        "forwarded but not decoded and the gap is recorded (default 256)",
    )
    parser.add_argument(
        "--observe-frame-limit",
        type=mebibytes_arg,
        default=ObserveLimits().frame,
        metavar="MIB",
        help="frames larger than this are forwarded whole and recorded as their header, "
        "size and SHA-256 only (default 32)",
    )
    parser.add_argument(
        "--observe-parse-limit",
        type=mebibytes_arg,
        default=ObserveLimits().parse,
        metavar="MIB",
        help="frames whose parse would hold more than this (30 MiB of [[],…] about 1,100) "
        "are forwarded whole and recorded as --observe-frame-limit's are (default 448)",
    )


def routes_from_args(
    specs: Optional[list[str]], profile: Profile, env: Optional[Mapping[str, str]] = None
) -> list[Route]:
    """The routes to serve: ``--route`` specs, else the profile's defaults. The n-th spec is
    named after the profile's n-th default route. Raises ValueError for a bad spec, or when
    there is no route at all."""
    defaults = profile.default_routes(os.environ if env is None else env)
    if not specs:
        if not defaults:
            raise ValueError(f"--profile {profile.name} has no default route: give --route")
        return [Route(d.name, parse_address(d.listen), parse_address(d.upstream)) for d in defaults]
    routes = []
    for number, spec in enumerate(specs):
        default_name = defaults[number].name if number < len(defaults) else f"route{number + 1}"
        routes.append(parse_route(spec, default_name))
    return routes


def check_routes(routes: list[Route]) -> None:
    """Refuse a route that relays to itself (SCRYBE_SOCK already pointing at the proxy, for
    instance): every connection would loop back into the proxy; and a name given to two
    routes: the recording's events name their route, and could not tell them apart. Raises
    ValueError."""
    names = [route.name for route in routes]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"proxy --route: two routes are named {name}: name each its own")
    for route in routes:
        if route.listen == route.upstream:
            raise ValueError(
                f"route {route.name} would relay {route.listen} to itself "
                "(is the client variable already pointing at the proxy?)"
            )


def prepare_socket_directories(routes: list[Route]) -> None:
    """Create the private directory of a default Unix listen path (e.g.
    $XDG_RUNTIME_DIR/golem-proxy) when it does not exist yet; the listener then still checks
    that the directory is the user's."""
    for route in routes:
        if route.listen.path is not None:
            directory = os.path.dirname(os.path.abspath(route.listen.path))
            if not os.path.isdir(directory):
                os.makedirs(directory, mode=0o700, exist_ok=True)


def run(args: argparse.Namespace) -> int:
    errors = Console(stderr=True, highlight=False)
    try:
        profile = get_profile(args.profile)
        try:
            routes = routes_from_args(args.route, profile)
        except ValueError as exc:
            raise CommandError(f"proxy --route: {exc}") from None
        check_routes(routes)
        if not args.route:
            prepare_socket_directories(routes)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(os_problem(exc)) from None
    options, record_path = session_options(args, profile)
    with removed_unless_started(reserved_record(args, record_path)):
        public = [r for r in routes if not r.listen.is_loopback()]
        if public and not args.listen_public:
            raise CommandError(
                f"refusing to listen on {public[0].listen}",
                "not a loopback address; pass --listen-public to listen there",
            )
        if public:
            errors.print(
                "[bold yellow]golem-proxy: warning:[/] listening on non-loopback addresses "
                f"({', '.join(str(r.listen) for r in public)}): anyone who can reach them can "
                "drive the plugin through this proxy"
            )
        config = SessionConfig(
            routes=routes,
            profile=profile,
            options=dataclasses.replace(options, allow_public=args.listen_public),
            record_path=record_path,
            overwrite=args.overwrite or reserved_record(args, record_path) is not None,
            verbosity=verbosity_of(args),
        )
        child = observer_place(args) == CHILD_PROCESS
        check_spool(args, child, record_path)
        if child and args.tui:
            check_child_tui(args)
        if args.tui:
            if child:
                return serve_child_tui(config, errors, args.log_buffer)
            return serve_with_tui(config, errors)
        # The log writes through a queue and a thread of its own: a terminal or pipe that stops
        # reading costs log lines, never a stalled relay (see live/log_output.py).
        output = TerminalOutput(sys.stdout, max_lines=args.log_buffer)
        console = config.console = output.console()
        try:
            if child:
                summary = run_session(
                    config.record_path, serve_forwarding, config, console, args.log_buffer
                )
            else:
                summary = run_session(config.record_path, serve, config, console)
        finally:
            output.close()
    # On stderr, as replay's: it stays in sight when the log goes to a file. Folded to a
    # terminal's width; one line in a pipe or a file. (The observing process prints its own.)
    if summary:
        print_line(errors, summary)
    return 0


def observer_place(args: argparse.Namespace) -> str:
    """Where the session observes: ``--observer`` as given, else a process of its own, but for
    a TUI that decides held frames (``--tui --intercept``), which does so in one process."""
    if args.observer is not None:
        return str(args.observer)
    return IN_PROCESS if args.tui and args.intercept is not None else CHILD_PROCESS


def session_options(
    args: argparse.Namespace, profile: Profile
) -> tuple[ProxyOptions, Optional[str]]:
    """The session's options and recording path from the options `add_session_arguments`
    defines. Raises CommandError (a bad fault spec or filter, an unreadable catalogue, a
    recording that exists without --overwrite)."""
    try:
        catalogue: Optional[MethodCatalogue] = args.catalogue  # loaded by catalogue_arg
        faults = FaultPlan.parse(args.fault, args.fault_seed, profile) if args.fault else None
        intercept = _intercept_engine(args, profile)
        record_path = resolve_record_path(args.record, args.record_dir)
    except (FaultSpecError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(os_problem(exc)) from None
    if record_path is not None and reserved_record(args, record_path) is None:
        try:
            check_record_target(record_path, overwrite=args.overwrite)
        except RecordPathError as exc:
            raise CommandError(str(exc)) from None
    options = ProxyOptions(
        enforce_limits=args.enforce_limits,
        drain_timeout=args.drain_timeout,
        idle_timeout=args.idle_timeout,
        cap=args.max_frame,
        catalogue=catalogue,
        redact=tuple(args.redact),
        faults=faults,
        intercept=intercept,
        observer_memory=args.observer_memory,
        observer_hold=args.observer_hold,
        observer_restarts=args.observer_restarts,
        observer_spool=args.observer_spool,
        spool_limit=args.spool_limit,
        observe=ObserveLimits(frame=args.observe_frame_limit, parse=args.observe_parse_limit),
    )
    return options, record_path


def reserved_record(args: argparse.Namespace, record_path: Optional[str]) -> Optional[str]:
    """``record_path`` when `session_options` created it, empty, as a name of
    ``--record-dir``'s own (no ``--record``): the session replaces that file, and removes it
    if it never starts (`removed_unless_started`); None for a path the user named."""
    return record_path if args.record is None and args.record_dir is not None else None


def verbosity_of(args: argparse.Namespace) -> Verbosity:
    """The log's verbosity from ``--quiet`` / ``--verbose``."""
    if args.quiet:
        return Verbosity.QUIET
    if args.verbose:
        return Verbosity.VERBOSE
    return Verbosity.NORMAL


def _intercept_engine(args: argparse.Namespace, profile: Profile) -> Optional[InterceptEngine]:
    """The intercept engine of the run, with ``--intercept`` only: its routes forward frame by
    frame (a frame is sent once it is whole), which the plain relay never does, so a session
    that may intercept says so when it starts. ``--intercept ''`` holds nothing yet; `i` in
    the TUI sets the filter at run time."""
    if args.intercept is None and args.intercept_timeout is not None:
        raise CommandError("--intercept-timeout needs --intercept FILTER")
    if args.intercept is None:
        return None
    try:
        chosen = parse_filter(args.intercept) if args.intercept else None
    except FilterError as exc:
        raise CommandError(f"--intercept: bad filter: {exc}") from None
    routes = None if getattr(args, "tui", False) else route_scope(chosen)
    return InterceptEngine(profile, chosen, timeout=args.intercept_timeout, routes=routes)
