"""``golem-proxy proxy``: relay, decode, log and record a live session."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Optional

import trio
from rich.console import Console
from rich.markup import escape

from golem_core.catalogue import MethodCatalogue
from golem_core.profiles import PROFILES, get_profile

from ..addresses import Route, default_routes, parse_route
from ..faults import FaultPlan, FaultSpecError
from ..log import Verbosity
from ..net import ListenError
from ..relay import BoundRoute, ProxyOptions
from ..safe_paths import resolve_record_path
from ..session import ProxySession, SessionConfig

NAME = "proxy"
HELP = "Run the proxy: forward byte for byte, decode on the side, log and record."
ORDER = 10

ROUTE_NAMES = ("main", "gh")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--route",
        action="append",
        metavar="[NAME@]LISTEN=UPSTREAM",
        help=(
            "relay LISTEN to UPSTREAM; each side is HOST:PORT or unix:PATH. Repeatable; "
            "replaces the default routes (main 127.0.0.1:19876=127.0.0.1:9876, "
            "gh 127.0.0.1:19877=127.0.0.1:9877)"
        ),
    )
    parser.add_argument("--profile", choices=sorted(PROFILES), default="golem")
    parser.add_argument("--record", metavar="PATH", help="write the session to this recording")
    parser.add_argument(
        "--record-dir",
        metavar="DIR",
        help="confine recordings to DIR: --record is relative to it and may not escape it "
        "through .. or symlinks (default name: session-TIMESTAMP.jsonl)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing recording file"
    )
    loudness = parser.add_mutually_exclusive_group()
    loudness.add_argument("--quiet", "-q", action="store_true", help="log problems only")
    loudness.add_argument("--verbose", "-v", action="store_true", help="log every frame too")
    parser.add_argument(
        "--listen-public",
        action="store_true",
        help="allow listening on non-loopback addresses (anyone who can reach them can use it)",
    )
    parser.add_argument(
        "--enforce-limits",
        action="store_true",
        help="close a connection that sends an oversized or undecodable frame "
        "(default: report it and forward it anyway)",
    )
    parser.add_argument(
        "--max-frame", type=int, metavar="BYTES", help="frame cap (default: the profile's)"
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
        metavar="FILE",
        help="method catalogue: report methods the plugin does not register, params it ignores",
    )
    parser.add_argument(
        "--idle-timeout", type=float, metavar="SECONDS", help="close idle connections"
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
        type=int,
        metavar="N",
        help="seed for fault probabilities (default: random, printed at start)",
    )
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="on Ctrl-C, how long live connections may finish (default 2)",
    )


def routes_from_args(specs: Optional[list[str]], profile_name: str) -> list[Route]:
    """The routes to serve. Raises ValueError for a bad spec or none for a non-GOLEM profile."""
    if not specs:
        if profile_name != "golem":
            raise ValueError(f"--profile {profile_name} has no default route: give --route")
        return default_routes()
    routes = []
    for number, spec in enumerate(specs):
        default_name = ROUTE_NAMES[number] if number < len(ROUTE_NAMES) else f"route{number + 1}"
        routes.append(parse_route(spec, default_name))
    return routes


def environment_hint(bound: list[BoundRoute], profile_name: str) -> str:
    """What the client needs in its environment to go through the proxy."""
    by_name = {b.route.name: b.listen for b in bound}
    parts = []
    if profile_name == "golem":
        if "main" in by_name and not by_name["main"].is_unix:
            parts.append(f"GOLEM_RHINO_PORT={by_name['main'].port}")
        if "gh" in by_name and not by_name["gh"].is_unix:
            parts.append(f"GOLEM_GH_PORT={by_name['gh'].port}")
    elif bound and bound[0].listen.is_unix:
        parts.append(f"SCRYBE_SOCK={bound[0].listen.path}")
    return " ".join(parts)


def run(args: argparse.Namespace) -> int:
    console = Console(stderr=False, highlight=False)
    errors = Console(stderr=True, highlight=False)
    try:
        routes = routes_from_args(args.route, args.profile)
        catalogue = MethodCatalogue.load(args.catalogue) if args.catalogue else None
        faults = FaultPlan.parse(args.fault, args.fault_seed) if args.fault else None
        record_path = resolve_record_path(args.record, args.record_dir)
    except (FaultSpecError, ValueError, OSError) as exc:
        errors.print(f"[red]error:[/] {exc}")
        return 2
    public = [r for r in routes if not r.listen.is_loopback()]
    if public and not args.listen_public:
        errors.print(
            f"[red]error:[/] {public[0].listen} is not a loopback address; "
            "pass --listen-public to listen there"
        )
        return 2
    if public:
        errors.print(
            "[bold yellow]warning:[/] listening on non-loopback addresses "
            f"({', '.join(str(r.listen) for r in public)}): anyone who can reach them can "
            "drive the plugin through this proxy"
        )
    verbosity = Verbosity.NORMAL
    if args.quiet:
        verbosity = Verbosity.QUIET
    elif args.verbose:
        verbosity = Verbosity.VERBOSE
    config = SessionConfig(
        routes=routes,
        profile=get_profile(args.profile),
        options=ProxyOptions(
            enforce_limits=args.enforce_limits,
            allow_public=args.listen_public,
            drain_timeout=args.drain_timeout,
            idle_timeout=args.idle_timeout,
            cap=args.max_frame,
            catalogue=catalogue,
            redact=tuple(args.redact),
            faults=faults,
        ),
        record_path=record_path,
        overwrite=args.overwrite,
        console=console,
        verbosity=verbosity,
    )
    try:
        trio.run(_serve, config, console)
    except (ListenError, OSError) as exc:
        errors.print(f"[red]error:[/] {exc}")
        return 2
    return 0


async def _serve(config: SessionConfig, console: Console) -> None:
    session = ProxySession(config)
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(session.run)
            for item in bound:
                console.print(f"[bold]{item.route.name}[/]: {item.listen} → {item.route.upstream}")
            hint = environment_hint(bound, config.profile.name)
            if hint:
                console.print(f"client environment: [bold]{hint}[/]")
            if config.record_path:
                console.print(f"recording to {config.record_path}")
            plan = config.options.faults
            if plan is not None:
                rules = "; ".join(rule.spec for rule in plan.rules)
                console.print(
                    f"[bold blue]faults[/]: {escape(rules)} (seed {plan.seed}: "
                    f"reproduce with --fault-seed {plan.seed})",
                    soft_wrap=True,
                )
            console.print("[dim]Ctrl-C to stop[/]")
            sys.stdout.flush()
            async for _ in signals:
                console.print("[dim]stopping: listeners closed, draining connections…[/]")
                session.stop()
                break
            nursery.cancel_scope.deadline = trio.current_time() + config.options.drain_timeout + 5
