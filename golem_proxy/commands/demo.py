"""``golem-proxy demo``: the headless plugin, the proxy with recording, and a scripted GOLEM
session through it — the whole product in one command, on a machine with nothing else."""

from __future__ import annotations

import argparse
import datetime
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator

import trio
from rich.console import Console

from golem_core.profiles import GOLEM

from ..analysis.stats import compute_stats
from ..analysis.trace import open_flows
from ..catalogues import shipped
from ..live.log import Verbosity
from ..live.log_output import TerminalOutput
from ..live.relay import ProxyOptions
from ..live.session import ProxySession, SessionConfig
from ..net.addresses import Address, Route
from ..testing.demo_session import run_demo_session
from ..testing.plugin_process import PluginProcess, PluginStartError
from ._common import CommandError, integer_arg
from .stats import stats_table

NAME = "demo"
HELP = "Run the headless plugin and the proxy, drive a scripted session, record it."
ORDER = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        metavar="PATH",
        help="recording path (default: recordings/demo-TIMESTAMP.jsonl)",
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


def run(args: argparse.Namespace) -> int:
    if args.out and os.path.lexists(args.out):
        # Checked before the plugin starts: the recorder would refuse it half way through.
        raise CommandError(f"{args.out}: already exists", "the demo never replaces a file")
    # As in `proxy`: the live log must not stall the session when stdout stops reading.
    output = TerminalOutput(sys.stdout)
    try:
        return _run(args, output.console())
    finally:
        output.close()


def _run(args: argparse.Namespace, console: Console) -> int:
    path = args.out or _default_path()
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
        config = SessionConfig(
            routes=routes,
            profile=GOLEM,
            options=ProxyOptions(drain_timeout=1.0),
            record_path=path,
            console=console,
        )
        if args.quiet:
            config.verbosity = Verbosity.QUIET
        # A busy port or an unwritable recording ends as one line (golem_proxy.cli).
        trio.run(_drive, config, console)
    finally:
        plugin.stop()
    with open_flows(path) as trace:
        flows = list(trace.flows())
    console.rule("[bold]session summary")
    console.print(stats_table(compute_stats(flows), f"{path}"))
    violations = sum(len(flow.violations) for flow in flows)
    console.print(
        f"{len(flows)} exchanges on {len(trace.tracker.connections)} connections, "
        f"{sum(flow.is_error for flow in flows)} errors, {violations} contract violations"
    )
    console.rule()
    console.print(f"recorded [bold]{path}[/]. Look at it again with:")
    # ./dev sets this: `golem-proxy` itself is only on the PATH inside the virtualenv.
    launcher = os.environ.get("GOLEM_PROXY_COMMAND", "golem-proxy")
    for command in (
        f"{launcher} tui {path}",
        f"{launcher} show {path} --filter '~e'",
        f"{launcher} check {path} --catalogue {shipped()[0]}",
        f"{launcher} replay {path} --listen 127.0.0.1:0 --gh-listen 127.0.0.1:0",
    ):
        console.print(f"  [cyan]{command}[/]", soft_wrap=True)  # whole lines, to copy
    return 0


async def _drive(config: SessionConfig, console: Console) -> None:
    session = ProxySession(config)
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(session.run)
        for item in bound:
            console.print(f"proxy {item.route.name}: {item.listen} → {item.route.upstream}")
        main, gh = bound[0].listen, bound[1].listen
        with trio.open_signal_receiver(signal.SIGINT) as signals:
            nursery.start_soon(_stop_on_signal, signals, session)
            outcome = await trio.to_thread.run_sync(
                lambda: run_demo_session(
                    (main.host, main.port),
                    (gh.host, gh.port),
                    lambda text: console.print(f"[bold blue]» {text}[/]"),
                )
            )
            console.print(
                f"[bold blue]» session done:[/] {outcome.calls} calls, "
                f"{len(outcome.failures)} failed as the client saw them"
            )
            session.stop()
            await session.finished.wait()
            nursery.cancel_scope.cancel()


async def _stop_on_signal(signals: AsyncIterator[int], session: ProxySession) -> None:
    async for _ in signals:
        session.stop()
        return
