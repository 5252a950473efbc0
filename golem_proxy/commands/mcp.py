"""``golem-proxy mcp -- COMMAND``: wrap an MCP server, observing both of its hops at once.

Put it in an MCP client's configuration in place of the server's command. It starts COMMAND
as its child and relays the client's stdio to it byte for byte (the MCP hop), starts GOLEM
routes of its own in front of the plugin and points the child at them through the
environment (the GOLEM hop), and records both in one timeline where every GOLEM flow names
the tool call that caused it (docs/mcp.md). Its stdout carries the child's bytes and nothing
else: the live log goes to stderr or ``--log FILE``.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import os
import shlex
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Optional, TextIO

import trio
from rich.console import Console
from rich.text import Text

from golem_core.profiles import GOLEM, MCP

from ..live.attribution import ToolCallTracker
from ..live.console_socket import serve_console
from ..live.intercept_console import InterceptConsole
from ..live.log_output import TerminalOutput
from ..live.proxy_options import BoundRoute
from ..live.session import ProxySession, SessionConfig
from ..live.stdio_relay import ChildStartError, StdioRelay
from ..net.addresses import Address, Route
from ..net.listeners import Listener, open_listener
from ..recording.files import open_private
from ..recording.format import RouteInfo
from ..terminal import safe_text
from ._bound_routes import client_environment, print_intercept, print_routes
from ._common import CommandError, error_line, unwrap
from ._options import add_address, add_timeout
from .proxy import add_session_arguments, session_options, verbosity_of

NAME = "mcp"
HELP = "Wrap an MCP server: relay its stdio, proxy its GOLEM calls, record both layers."
ORDER = 12

MCP_ROUTE = "mcp"
"""The route name of the MCP stdio hop in the session and its recording."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "golem-proxy mcp [OPTIONS] -- COMMAND [ARGS...]"
    add_address(
        parser,
        "--upstream",
        "the plugin's main socket (default 127.0.0.1:9876)",
        default=Address("127.0.0.1", 9876),
    )
    add_address(
        parser,
        "--gh-upstream",
        "the plugin's Grasshopper socket (default 127.0.0.1:9877)",
        default=Address("127.0.0.1", 9877),
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a variable in the server's environment (after the GOLEM_RHINO_HOST, "
        "GOLEM_RHINO_PORT and GOLEM_GH_PORT that point it at the proxy: it can override them)",
    )
    parser.add_argument(
        "--log",
        metavar="FILE",
        help="write the live log to FILE (created private) instead of stderr",
    )
    add_timeout(
        parser,
        "once the client closes stdin, how long the server may take to exit before it "
        "is terminated, then killed (default 5)",
        flag="--exit-timeout",
        default=5.0,
        metavar="SECONDS",
    )
    add_address(
        parser,
        "--console",
        "with --intercept: take the intercept commands on this private Unix socket "
        "(stdin is the MCP client's); golem-proxy intercept unix:PATH talks to it",
        metavar="unix:PATH",
    )
    add_session_arguments(parser)
    parser.add_argument(
        "server", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]", help="the MCP server"
    )


def run(args: argparse.Namespace) -> int:
    argv = list(args.server)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise CommandError("mcp: no server command", "give it after --: golem-proxy mcp -- CMD")
    _check_console(args.intercept, args.console)
    overrides = _env_overrides(args.env)
    tracker = ToolCallTracker(MCP)
    options, record_path = session_options(args, GOLEM)
    options = dataclasses.replace(options, annotate=tracker.annotate)
    routes = [
        Route(GOLEM.channels[0], Address("127.0.0.1", 0), args.upstream),
        Route(GOLEM.channels[1], Address("127.0.0.1", 0), args.gh_upstream),
    ]
    log_stream = _open_log(args.log, args.overwrite)
    output = TerminalOutput(log_stream if log_stream is not None else sys.stderr)
    config = SessionConfig(
        routes=routes,
        profile=GOLEM,
        options=options,
        record_path=record_path,
        overwrite=args.overwrite,
        console=output.console(),
        verbosity=verbosity_of(args),
        layers=(RouteInfo(MCP_ROUTE, "stdio", shlex.join(argv), MCP.name),),
    )
    try:
        return trio.run(_serve, config, argv, overrides, tracker, args.exit_timeout, args.console)
    except BaseException as exc:
        failed = _one_error(exc)
        if failed is None:
            raise
        raise CommandError(failed) from None
    finally:
        output.close()
        if log_stream is not None:
            log_stream.close()


def _check_console(intercept: Optional[str], console: Optional[Address]) -> None:
    """Raises CommandError unless ``--intercept`` and ``--console unix:PATH`` come together."""
    if intercept is not None and console is None:
        raise CommandError(
            "mcp --intercept: needs --console unix:PATH",
            "stdin is the MCP client's: held frames are decided through that socket",
        )
    if console is not None and intercept is None:
        raise CommandError("mcp --console: needs --intercept FILTER")
    if console is not None and not console.is_unix:
        raise CommandError(f"mcp --console: {console} is not unix:PATH", "a private Unix socket")


def _env_overrides(specs: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name or "\0" in spec:
            raise CommandError(f"mcp --env: {spec!r} is not NAME=VALUE")
        found[name] = value
    return found


def _open_log(path: Optional[str], overwrite: bool) -> Optional[TextIO]:
    if path is None:
        return None
    try:
        raw = open_private(path, overwrite=overwrite)
    except OSError as exc:
        line = error_line(exc) or str(exc)
        why = "pass --overwrite to replace it" if isinstance(exc, FileExistsError) else None
        raise CommandError(f"mcp --log: {line}", why) from None
    return io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace", line_buffering=True)


def _one_error(exc: BaseException) -> Optional[str]:
    """One line for what stopped the run before the server ran (a server that could not be
    started, a listener or recording file that could not be opened), or None for a bug."""
    inner = unwrap(exc)
    line = error_line(inner)
    return f"mcp: {line}" if line is not None and isinstance(inner, ChildStartError) else line


def child_environment(
    bound: list[BoundRoute], overrides: Mapping[str, str], base: Mapping[str, str]
) -> dict[str, str]:
    """The server's environment: ours, then the variables that point it at the proxy's GOLEM
    routes, then ``--env``."""
    env = dict(base)
    env.update(client_environment(bound, GOLEM))
    env.update(overrides)
    return env


async def _serve(
    config: SessionConfig,
    argv: list[str],
    overrides: dict[str, str],
    tracker: ToolCallTracker,
    exit_timeout: float,
    console_address: Optional[Address],
) -> int:
    session = ProxySession(config)
    # Opened before the server starts: a socket that cannot be made stops the run at once.
    commands = await open_listener(console_address) if console_address is not None else None
    try:
        return await _serve_with(session, config, argv, overrides, tracker, exit_timeout, commands)
    finally:
        if commands is not None:
            with trio.CancelScope(shield=True):
                await commands.aclose()


async def _serve_with(
    session: ProxySession,
    config: SessionConfig,
    argv: list[str],
    overrides: dict[str, str],
    tracker: ToolCallTracker,
    exit_timeout: float,
    commands: Optional[Listener],
) -> int:
    console = config.console
    assert console is not None
    engine = config.options.intercept
    # Signals are caught from the start: a SIGTERM before the server runs must not kill us
    # with a traceback, and once it runs they are the server's to act on.
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(session.run)
            try:
                env = child_environment(bound, overrides, os.environ)
                relay = StdioRelay(
                    argv,
                    env,
                    session.proxy,
                    MCP,
                    route=MCP_ROUTE,
                    watch=tracker.watch,
                    exit_timeout=exit_timeout,
                )
                await relay.start()
                _announce(console, bound, env, relay, config)
                if commands is not None and engine is not None:
                    where = safe_text(str(commands.address))
                    print_intercept(console, engine, f"commands: golem-proxy intercept {where}")
                    nursery.start_soon(serve_console, commands, InterceptConsole(engine))
                nursery.start_soon(_forward_signals, signals, relay)
                status = await relay.run()
            finally:
                session.stop()
            nursery.cancel_scope.deadline = trio.current_time() + config.options.drain_timeout + 5
            await session.finished.wait()
            nursery.cancel_scope.cancel()
    return status


async def _forward_signals(signals: AsyncIterator[int], relay: StdioRelay) -> None:
    """The client (or the user) asked us to stop: the server decides how, we follow it."""
    async for signum in signals:
        relay.send_signal(signum)


def _announce(
    console: Console,
    bound: list[BoundRoute],
    env: Mapping[str, str],
    relay: StdioRelay,
    config: SessionConfig,
) -> None:
    print_routes(console, bound)
    pointing = " ".join(f"{name}={env[name]}" for name in client_environment(bound, GOLEM))
    console.print(
        Text.assemble(
            ("mcp", "bold"),
            f": stdio ↔ {safe_text(relay.description, 200)} (pid {relay.pid}) with ",
            (safe_text(pointing), "bold"),
        ),
        soft_wrap=True,
    )
    if config.record_path:
        console.print(Text(f"recording to {safe_text(config.record_path)}"), soft_wrap=True)
