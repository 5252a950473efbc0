"""How ``golem-proxy mcp`` serves: the MCP server as its child on our stdio, GOLEM routes in
front of the plugin, until the server exits. Observing in this process (`serve`), or in a
process of its own (`serve_forwarding`, ``--observer child-process``): then this process only
forwards both hops and hands every chunk on through the link, and the observing process
decodes, attributes and records them (live/observing.py, live/layer_taps.py). Either way the
faults, the intercept engine and ``--enforce-limits`` decide here, on the forwarding path,
and `_serve_hops` runs the server, the console and the signals the same way."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Optional

import trio
from rich.console import Console
from rich.text import Text

from golem_core.profiles import GOLEM, MCP

from ..events import Event
from ..live.attribution import ToolCallTracker
from ..live.call_feed import CallFeed
from ..live.console_socket import serve_console
from ..live.intercept_console import InterceptConsole
from ..live.proxy_options import BoundRoute
from ..live.relay import Proxy
from ..live.session import ProxySession, SessionConfig
from ..live.spool_end import leave_on_another
from ..live.stdio_child import ChildStartError
from ..live.stdio_relay import StdioRelay
from ..net.addresses import Address
from ..net.listeners import Listener, open_listener
from ..recording.shared_file import RecordingFile, end_session
from ..session_events import SessionEnded
from ..terminal import safe_text
from ._bound_routes import client_environment, print_intercept, print_routes
from ._common import unwrap
from ._proxy_serve import STOP_SIGNALS, open_forwarding, print_faults, stopped_by

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
    console: Optional[Address] = None
    """``--console unix:PATH``: where the intercept commands come (stdin is the client's)."""
    call_feed: Optional[Address] = None
    """``--call-feed unix:PATH``: the stand-in told each tool call (`CallFeed`)."""


@dataclass(frozen=True)
class _Hops:
    """What differs between the two ways of observing: the relay both hops go through, the
    task that serves its routes until `stop` (reporting them bound, then draining), what
    follows the MCP hop's events here (the tracker, in one process), and a task that runs
    beside them (the observing process's watch)."""

    proxy: Proxy
    serve: Callable[..., Awaitable[Any]]
    stop: Callable[[str], None]
    """Stops serving, the session having ended in order, as the words given say."""
    watch: Optional[Callable[[Event], list[Event]]] = None
    beside: Optional[Callable[[], Awaitable[Any]]] = None


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
    config: SessionConfig, plan: ServerPlan, tracker: ToolCallTracker
) -> tuple[int, str]:
    """Observe in this process; returns the server's exit status and the session's closing
    line (the observing process prints its own). ``tracker`` follows the MCP hop and
    annotates the GOLEM routes' frames (``config.options.annotate``). Raises
    ListenError, ChildStartError or OSError (a listener, the recording) before the server
    runs."""
    # Signals are caught from the start: a SIGTERM before the server runs must not kill us
    # with a traceback, and once it runs they are the server's to act on.
    with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async with _console_listener(plan.console) as commands:
            session = ProxySession(config)
            hops = _Hops(session.proxy, session.run, session.stop, watch=tracker.follow)
            status = await _serve_hops(config, plan, hops, commands, signals)
    return status, session.summary()


async def serve_forwarding(
    config: SessionConfig, plan: ServerPlan, log_fd: int, log_buffer: int
) -> int:
    """``--observer child-process``: forward both hops here, observe them in a process of its
    own, whose log goes to ``log_fd`` (where ours goes: never our stdout, the MCP client's).
    Returns the server's exit status. Raises ObserverStartError, ChildStartError, ListenError
    or OSError (a listener, the recording) before the server runs."""
    with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async with _console_listener(plan.console) as commands:
            proxy, _, observing = await open_forwarding(config, log_buffer, stdout=log_fd)
            drain = config.options.drain_timeout
            ended: list[str] = []

            def stop(reason: str) -> None:
                ended.append(reason)
                proxy.stop()

            ran = True
            try:
                hops = _Hops(proxy, proxy.serve, stop, beside=observing.watch)
                return await _serve_hops(config, plan, hops, commands, signals)
            except BaseException as exc:
                if isinstance(unwrap(exc), ChildStartError):
                    # Nothing ran: the observing process's closing line would count a session
                    # that never was, ahead of the error that says why. Stopped as one whose
                    # start failed; the recording ends here, as in one process.
                    ran = False
                    with trio.CancelScope(shield=True):
                        await observing.kill()
                    _end_unrun(observing.record, proxy.now(), ended[-1] if ended else _ended(None))
                raise
            finally:
                # The observing process decodes what is left, then its log catches up: each
                # gets the drain timeout, as in one process.
                if ran:
                    with trio.CancelScope(shield=True):
                        async with trio.open_nursery() as ending:
                            # With a spool, as long as it moves on, or until stopped again.
                            ending.start_soon(leave_on_another, signals, observing.leaving)
                            await observing.finish(
                                handing_on=drain,
                                deciding=2 * drain,
                                ended=ended[0] if ended else None,
                            )
                            ending.cancel_scope.cancel()
                    if observing.left_line():
                        print(f"golem-proxy: {observing.left_line()}", file=sys.stderr)


def _end_unrun(record: Optional[RecordingFile], t: float, reason: str) -> None:
    """End the recording of a session in which nothing ran (the server could not be started)
    with its ``session-end`` line, nothing counted, as one process ends it; and close it."""
    if record is None or record.closed:
        return
    try:
        end_session(
            record,
            SessionEnded(
                t=t,
                reason=reason,
                exchanges=0,
                errors=0,
                violations=0,
                unanswered=0,
                not_recorded=0,
            ),
        )
    except OSError as exc:
        print(f"golem-proxy: the recording could not be ended ({exc})", file=sys.stderr)
    record.close()


@asynccontextmanager
async def _console_listener(address: Optional[Address]) -> AsyncIterator[Optional[Listener]]:
    """``--console``'s listener (None without one) for the run, closed after it. Opened
    before the server starts: a socket that cannot be made stops the run at once."""
    commands = await open_listener(address) if address is not None else None
    try:
        yield commands
    finally:
        if commands is not None:
            with trio.CancelScope(shield=True):
                await commands.aclose()


async def _serve_hops(
    config: SessionConfig,
    plan: ServerPlan,
    hops: _Hops,
    commands: Optional[Listener],
    signals: AsyncIterator[int],
) -> int:
    """Serve the GOLEM routes and run the server on our stdio until it exits, deciding held
    frames on ``commands``; then drain. Returns the server's exit status."""
    console = config.console
    assert console is not None
    engine = config.options.intercept
    exited: Optional[int] = None
    stopped: list[int] = []
    not_started = ""
    async with trio.open_nursery() as tasks:
        if hops.beside is not None:
            tasks.start_soon(hops.beside)
        async with trio.open_nursery() as serving:
            bound = await serving.start(hops.serve)
            feed = None
            try:
                if plan.call_feed is not None:
                    # Bounded as the hop's frames are: a line past the cap is not held.
                    cap = config.options.cap if config.options.cap is not None else MCP.default_cap
                    feed = await CallFeed.connect(plan.call_feed, hops.proxy.redactor, cap)
                env = child_environment(bound, plan.overrides, os.environ)
                relay = StdioRelay(
                    plan.argv,
                    env,
                    hops.proxy,
                    MCP,
                    route=MCP_ROUTE,
                    watch=hops.watch,
                    exit_timeout=plan.exit_timeout,
                    feed=feed,
                )
                try:
                    await relay.start()
                except ChildStartError as exc:
                    not_started = str(exc)
                    raise
                _announce(console, bound, env, relay, config)
                if commands is not None and engine is not None:
                    where = safe_text(str(commands.address))
                    print_intercept(console, engine, f"commands: golem-proxy intercept {where}")
                    tasks.start_soon(serve_console, commands, InterceptConsole(engine))
                tasks.start_soon(_forward_signals, signals, relay, stopped)
                status = exited = await relay.run()
            finally:
                if feed is not None:
                    await feed.aclose()
                hops.stop(_ended(exited, stopped, not_started))
            # Whatever the GOLEM connections still wait for, their reader was the server, now
            # gone: waiting for it (the drain timeout) would only keep a client that stops us
            # (SIGTERM, then SIGKILL 2 s later for the Python MCP SDK) waiting too.
            hops.proxy.cut("the MCP server exited", "the plugin")
            serving.cancel_scope.deadline = trio.current_time() + config.options.drain_timeout + 5
        tasks.cancel_scope.cancel()
    return status


def _ended(
    status: Optional[int], stopped: Optional[list[int]] = None, not_started: str = ""
) -> str:
    """How the session ended, as its ``session-end`` line says it: the server's exit
    (`exit_status`: 128 + N for signal N), after the signal that stopped us if one did; the
    server that could not be started (``not_started``: why), or not relayed to the end."""
    if not_started:
        return f"the MCP server did not start: {not_started}"
    if status is None:
        return "stopped before the MCP server exited"
    exited = f"the MCP server exited with status {status}"
    return f"{stopped_by(stopped[0])}; {exited}" if stopped else exited


async def _forward_signals(
    signals: AsyncIterator[int], relay: StdioRelay, stopped: list[int]
) -> None:
    """The client (or the user) asked us to stop: the server's group gets the signal, and a
    bounded time to act on it (`StdioRelay.stop`)."""
    async for signum in signals:
        stopped.append(signum)
        relay.stop(signum)


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
    print_faults(console, config)
