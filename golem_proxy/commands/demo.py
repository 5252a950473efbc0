"""``golem-proxy demo``: the headless plugin, the proxy with recording, and a scripted GOLEM
session through it — the whole product in one command, on a machine with nothing else.

``--profile jsonrpc-ndjson`` does the same for Scrybe without Scrybe: the stand-in app
(`golem_proxy.testing.scrybe_app`) on a Unix socket, the proxy in front of it, and the scripted
session over the whole 0.6 method table (`golem_proxy.testing.scrybe_session`)."""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from typing import Optional

import trio
from rich.console import Console

from golem_core.profiles import GOLEM, JSONRPC_NDJSON, Profile

from ..analysis.flows import Flow
from ..analysis.stats import compute_stats
from ..analysis.trace import open_flows
from ..catalogues import shipped
from ..live.log import Verbosity
from ..live.log_output import TerminalOutput
from ..live.proxy_options import BoundRoute, ProxyOptions
from ..live.session import ProxySession, SessionConfig
from ..net.addresses import Address, Route
from ..recording.safe_paths import RecordPathError, check_record_target
from ..terminal import counted
from ..testing.demo_session import DemoOutcome, run_demo_session
from ..testing.plugin_process import PluginProcess, PluginStartError
from ..testing.scrybe_app import ScrybeApp
from ..testing.scrybe_server import AppServer
from ..testing.scrybe_session import DISK, run_scrybe_session
from ._common import CommandError, integer_arg, print_error, unwrap
from ._options import add_profile
from .stats import print_stats

NAME = "demo"
HELP = (
    "Run the headless plugin (or, with --profile jsonrpc-ndjson, a stand-in Scrybe app) and "
    "the proxy, drive a scripted session, record it."
)
ORDER = 1

EXIT_INTERRUPTED = 130
GOLEM_PINGS = ("ping", "gh.ping")
"""What the client sends first on every connection (main channel, Grasshopper channel)."""
NARRATION_WAIT = 3.0
NARRATION_POLL = 0.005


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        metavar="PATH",
        help="recording path (default: recordings/demo-TIMESTAMP.jsonl)",
    )
    add_profile(
        parser,
        "golem (the headless plugin, default) or jsonrpc-ndjson (a stand-in Scrybe app); "
        "for MCP, golem-proxy mcp wraps a server",
        default=GOLEM.name,
        choices=(GOLEM.name, JSONRPC_NDJSON.name),
    )
    parser.add_argument("--seed", type=integer_arg, default=42, help="plugin seed (default 42)")
    parser.add_argument("--quiet", "-q", action="store_true", help="log problems only")


def _port_or_any(port: int) -> int:
    """``port`` when it is free on loopback, else 0 (let the OS pick)."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return 0
    return port


def _default_path() -> str:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    os.makedirs("recordings", exist_ok=True)
    return os.path.join("recordings", f"demo-{stamp}.jsonl")


class DemoInterrupted(Exception):
    """Ctrl-C stopped the demo's session (which then stopped cleanly)."""


def run(args: argparse.Namespace) -> int:
    if args.out:
        # Checked before the plugin starts: the recorder would refuse it half way through.
        try:
            check_record_target(
                args.out, option="--out", if_exists="the demo never replaces a file"
            )
        except RecordPathError as exc:
            raise CommandError(str(exc)) from None
    # As in `proxy`: the live log must not stall the session when stdout stops reading.
    output = TerminalOutput(sys.stdout)
    path = args.out or _default_path()
    try:
        if args.profile == JSONRPC_NDJSON.name:
            return _run_scrybe(args, path, output.console())
        return _run(args, path, output.console())
    except BaseException as exc:
        # Ctrl-C reaches the plugin too (one process group): whatever failed after it, the
        # cause to report is the interruption (trio may wrap it in an exception group).
        if not isinstance(unwrap(exc), (KeyboardInterrupt, DemoInterrupted)):
            raise
        output.close()
        where = f"; what ran is recorded in {path}" if os.path.exists(path) else ""
        print_error(f"demo interrupted (Ctrl-C){where}")
        return EXIT_INTERRUPTED
    finally:
        output.close()


def _run(args: argparse.Namespace, path: str, console: Console) -> int:
    plugin = PluginProcess(port=_port_or_any(9876), gh_port=_port_or_any(9877), seed=args.seed)
    console.rule("[bold]golem-proxy demo")
    try:
        plugin.start()
    except PluginStartError as exc:
        # Its message ends with what the plugin printed last: the reason, on one line.
        said = [line.strip() for line in str(exc).partition(":")[2].splitlines() if line.strip()]
        raise CommandError(
            "the headless plugin did not start", said[-1] if said else None
        ) from None
    try:
        console.print(f"headless plugin: {plugin.ready_line}", soft_wrap=True)
        routes = [
            Route("main", Address("127.0.0.1", _port_or_any(19876)), plugin.main),
            Route("gh", Address("127.0.0.1", _port_or_any(19877)), plugin.gh),
        ]
        config = _session_config(args, routes, GOLEM, path, console)
        # A busy port or an unwritable recording ends as one line (golem_proxy.cli).
        outcome = trio.run(_drive, config, console, _golem_script)
    finally:
        plugin.stop()
    launcher = _launcher()
    _summary(console, path, outcome)
    _hints(
        console,
        path,
        [
            f"{launcher} check {path} --catalogue {shipped()[0]}",
            f"{launcher} replay {path} --listen 127.0.0.1:0 --gh-listen 127.0.0.1:0",
        ],
    )
    return 0


def _session_config(
    args: argparse.Namespace, routes: list[Route], profile: Profile, path: str, console: Console
) -> SessionConfig:
    """The demo's proxy session on ``routes``: recorded to ``path``, quick to drain, quiet
    with ``--quiet``."""
    config = SessionConfig(
        routes=routes,
        profile=profile,
        options=ProxyOptions(drain_timeout=1.0),
        record_path=path,
        console=console,
    )
    if args.quiet:
        config.verbosity = Verbosity.QUIET
    return config


def _run_scrybe(args: argparse.Namespace, path: str, console: Console) -> int:
    """The Scrybe demo: the stand-in app and the proxy on Unix sockets in a private directory
    of their own (short: a socket path must stay under 108 bytes)."""
    console.rule("[bold]golem-proxy demo · jsonrpc-ndjson (a stand-in Scrybe app)")
    directory = tempfile.mkdtemp(prefix="golem-proxy-demo-")
    try:
        app = AppServer(os.path.join(directory, "app.sock"), ScrybeApp(dict(DISK)))
        console.print(f"stand-in Scrybe app: unix:{app.path}", soft_wrap=True)
        route = Route(
            JSONRPC_NDJSON.channels[0],
            Address(path=os.path.join(directory, "proxy.sock")),
            Address(path=app.path),
        )
        config = _session_config(args, [route], JSONRPC_NDJSON, path, console)
        outcome = trio.run(_drive, config, console, _scrybe_script, app)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    launcher = _launcher()
    _summary(console, path, outcome)
    # Absolute, so that they work from any directory (the demo's own sockets are gone).
    sockets = tempfile.gettempdir()
    replay_socket = os.path.join(sockets, "golem-proxy-scrybe-replay.sock")
    app_socket = os.path.join(sockets, "scrybe-stand-in.sock")
    proxy_socket = os.path.join(sockets, "golem-proxy-scrybe.sock")
    _hints(
        console,
        path,
        [
            f"{launcher} check {path}",
            f"{launcher} replay {path} --listen unix:{replay_socket}"
            f"  # then a client with SCRYBE_SOCK={replay_socket}",
            f"python -m golem_proxy.testing.scrybe_server {app_socket}  # the stand-in app",
            f"{launcher} proxy --profile jsonrpc-ndjson --route "
            f"unix:{proxy_socket}=unix:{app_socket}  # the proxy in front of it",
        ],
    )
    return 0


def _golem_script(bound: list[BoundRoute], outcome: DemoOutcome) -> None:
    main, gh = bound[0].listen, bound[1].listen
    run_demo_session((main.host, main.port), (gh.host, gh.port), outcome=outcome)


def _scrybe_script(bound: list[BoundRoute], outcome: DemoOutcome) -> None:
    assert bound[0].listen.path is not None
    run_scrybe_session(bound[0].listen.path, outcome)


def _launcher() -> str:
    # ./dev sets this: `golem-proxy` itself is only on the PATH inside the virtualenv.
    return os.environ.get("GOLEM_PROXY_COMMAND", "golem-proxy")


def _summary(console: Console, path: str, outcome: DemoOutcome) -> None:
    """The recording's statistics, its counts, and why it has the exchanges it has."""
    with open_flows(path) as trace:
        flows = list(trace.flows())
    console.rule("[bold]session summary")
    print_stats(console, compute_stats(flows), f"{path}")
    violations = sum(len(flow.violations) for flow in flows)
    console.print(
        f"{counted(len(flows), 'exchange')} on "
        f"{counted(trace.tracker.connections_seen, 'connection')}, "
        f"{counted(sum(flow.is_error for flow in flows), 'error')}, "
        f"{counted(violations, 'contract violation')}"
    )
    console.print(_exchanges_explained(flows, outcome), soft_wrap=True)


def _hints(console: Console, path: str, more: list[str]) -> None:
    """The commands that look at the recording again: the TUI and its errors, as after every
    demo, then ``more``, what this demo's profile adds."""
    launcher = _launcher()
    console.rule()
    console.print(f"recorded [bold]{path}[/]. Look at it again with:")
    for command in [f"{launcher} tui {path}", f"{launcher} show {path} --filter '~e'", *more]:
        console.print(f"  [cyan]{command}[/]", soft_wrap=True)  # whole lines, to copy


def _exchanges_explained(flows: list[Flow], outcome: DemoOutcome) -> str:
    """Why the recording has more exchanges than the session made tool calls: each
    connection's ping handshake, and the malformed frame the session sends on purpose."""
    pings = sum(1 for flow in flows if flow.method in GOLEM_PINGS)
    malformed = sum(1 for flow in flows if flow.method is None)
    other = len(flows) - outcome.calls - pings - malformed
    parts = [counted(outcome.calls, outcome.noun)]
    if pings:
        parts.append(f"{counted(pings, 'ping')} (the client's handshake on each connection)")
    if malformed:
        parts.append(f"{counted(malformed, 'malformed frame')} (a client bug, sent on purpose)")
    if other:
        parts.append(f"{counted(other, 'other exchange')}")
    return f"the {counted(len(flows), 'exchange')}: " + ", ".join(parts)


Script = Callable[[list[BoundRoute], DemoOutcome], None]


async def _drive(
    config: SessionConfig, console: Console, script: Script, app: Optional[AppServer] = None
) -> DemoOutcome:
    """Run the proxy session (and ``app``, the stand-in server behind it) and the scripted
    client through it, in a thread; returns what the client did. Raises DemoInterrupted on
    Ctrl-C (after the session stopped and its recording is whole)."""
    session = ProxySession(config)
    interrupted = trio.Event()
    outcome = DemoOutcome()

    def narrate(text: str) -> None:  # in the client's thread
        held = outcome.open_connections
        trio.from_thread.run(_narrate, session, held, console, f"[bold blue]» {text}[/]")

    outcome.narrate = narrate
    async with trio.open_nursery() as nursery:
        if app is not None:
            await nursery.start(app.serve)
        bound = await nursery.start(session.run)
        for item in bound:
            console.print(
                f"proxy {item.route.name}: {item.listen} → {item.route.upstream}", soft_wrap=True
            )
        with trio.open_signal_receiver(signal.SIGINT) as signals:
            nursery.start_soon(_stop_on_signal, signals, session, interrupted)
            try:
                await trio.to_thread.run_sync(lambda: script(bound, outcome))
            except Exception:
                if not interrupted.is_set():
                    raise
            session.stop("the demo's session was done")
            await session.finished.wait()
            nursery.cancel_scope.cancel()
    if interrupted.is_set():
        raise DemoInterrupted
    console.print(
        f"[bold blue]» session done:[/] {counted(outcome.calls, outcome.noun)}, "
        f"{len(outcome.failures)} failed as the client saw them"
    )
    return outcome


async def _narrate(session: ProxySession, held: int, console: Console, markup: str) -> None:
    """Print a line of narration after the log lines of everything the client did before it:
    wait (a few seconds at most) until the proxy has seen closed every connection but the
    ``held`` ones the client still has open, and has decoded and logged all it forwarded."""
    with trio.move_on_after(NARRATION_WAIT):
        while session.proxy.live_connections > held or not session.caught_up():
            await trio.sleep(NARRATION_POLL)
    console.print(markup)


async def _stop_on_signal(
    signals: AsyncIterator[int], session: ProxySession, interrupted: trio.Event
) -> None:
    async for _ in signals:
        interrupted.set()
        session.stop("stopped by SIGINT")
        return
