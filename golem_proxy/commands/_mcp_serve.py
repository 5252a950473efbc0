"""How ``golem-proxy mcp`` serves: the MCP server as its child on our stdio, GOLEM routes in
front of the plugin, until the server exits. Observing in this process (`serve`), or in a
process of its own (`serve_forwarding`, ``--observer child-process``): then this process only
forwards both hops and hands every chunk on through the link, and the observing process
decodes, attributes and records them (live/observing.py, live/layer_taps.py)."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Optional

import trio
from rich.console import Console
from rich.text import Text

from golem_core.profiles import GOLEM, MCP

from ..live.attribution import ToolCallTracker
from ..live.console_socket import serve_console
from ..live.intercept_console import InterceptConsole
from ..live.observer_process import ObservingProcess
from ..live.proxy_options import BoundRoute
from ..live.relay import Proxy
from ..live.session import ProxySession, SessionConfig
from ..live.stdio_relay import StdioRelay
from ..net.addresses import Address
from ..net.listeners import Listener, open_listener
from ..terminal import safe_text
from ._bound_routes import client_environment, print_intercept, print_routes
from ._proxy_serve import open_forwarding

__all__ = ["MCP_ROUTE", "ServerPlan", "child_environment", "serve", "serve_forwarding"]

MCP_ROUTE = "mcp"
"""The route name of the MCP stdio hop in the session and its recording."""


@dataclass(frozen=True)
class ServerPlan:
    """The MCP server to run and how."""

    argv: list[str]
    overrides: dict[str, str]
    """``--env``."""
    exit_timeout: float


def child_environment(
    bound: list[BoundRoute], overrides: Mapping[str, str], base: Mapping[str, str]
) -> dict[str, str]:
    """The server's environment: ours, then the variables that point it at the proxy's GOLEM
    routes, then ``--env``."""
    env = dict(base)
    env.update(client_environment(bound, GOLEM))
    env.update(overrides)
    return env


async def serve(
    config: SessionConfig,
    plan: ServerPlan,
    tracker: ToolCallTracker,
    console_address: Optional[Address],
) -> int:
    """Observe in this process; returns the server's exit status. ``tracker`` follows the
    MCP hop and annotates the GOLEM routes' frames (``config.options.annotate``)."""
    session = ProxySession(config)
    # Opened before the server starts: a socket that cannot be made stops the run at once.
    commands = await open_listener(console_address) if console_address is not None else None
    try:
        return await _serve_with(session, config, plan, tracker, commands)
    finally:
        if commands is not None:
            with trio.CancelScope(shield=True):
                await commands.aclose()


async def _serve_with(
    session: ProxySession,
    config: SessionConfig,
    plan: ServerPlan,
    tracker: ToolCallTracker,
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
                env = child_environment(bound, plan.overrides, os.environ)
                relay = StdioRelay(
                    plan.argv,
                    env,
                    session.proxy,
                    MCP,
                    route=MCP_ROUTE,
                    watch=tracker.watch,
                    exit_timeout=plan.exit_timeout,
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


async def serve_forwarding(
    config: SessionConfig, plan: ServerPlan, log_fd: int, log_buffer: int
) -> int:
    """``--observer child-process``: forward both hops here, observe them in a process of its
    own, whose log goes to ``log_fd`` (where ours goes: never our stdout, the MCP client's).
    Returns the server's exit status. Raises ObserverStartError, ChildStartError, OSError
    (a listener, the recording) before the server runs."""
    # Caught from the start, as in one process (`serve`): once the server runs they are its.
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        proxy, bound, observing = await open_forwarding(config, log_buffer, stdout=log_fd)
        drain = config.options.drain_timeout
        try:
            return await _forward(config, plan, proxy, bound, observing, signals)
        finally:
            # The observing process decodes what is left, then its log catches up: each gets
            # the drain timeout, as in one process.
            with trio.CancelScope(shield=True):
                await observing.finish(handing_on=drain, deciding=2 * drain)


async def _forward(
    config: SessionConfig,
    plan: ServerPlan,
    proxy: Proxy,
    bound: list[BoundRoute],
    observing: ObservingProcess,
    signals: AsyncIterator[int],
) -> int:
    """Serve the GOLEM routes and run the server on our stdio until it exits; then drain."""
    console = config.console
    assert console is not None
    async with trio.open_nursery() as watching:
        watching.start_soon(observing.watch)
        async with trio.open_nursery() as serving:
            await serving.start(proxy.serve)
            try:
                env = child_environment(bound, plan.overrides, os.environ)
                relay = StdioRelay(
                    plan.argv, env, proxy, MCP, route=MCP_ROUTE, exit_timeout=plan.exit_timeout
                )
                await relay.start()
                _announce(console, bound, env, relay, config)
                watching.start_soon(_forward_signals, signals, relay)
                status = await relay.run()
            finally:
                proxy.stop()
            serving.cancel_scope.deadline = trio.current_time() + config.options.drain_timeout + 5
        watching.cancel_scope.cancel()
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
