"""How ``golem-proxy proxy`` serves a session until Ctrl-C or SIGTERM: observing in this
process (`serve`), or in a process of its own (`serve_forwarding`, ``--observer
child-process``); both announce the session the same way."""

from __future__ import annotations

import dataclasses
import signal
from collections.abc import AsyncIterator
from typing import Optional

import trio
from rich.console import Console
from rich.text import Text

from ..live.hub import EventHub
from ..live.intercept_console import InterceptConsole
from ..live.observer_launch import ObserverSetup
from ..live.observer_process import ObservingProcess
from ..live.proxy_options import BoundRoute
from ..live.relay import Proxy
from ..live.session import ProxySession, SessionConfig, session_header
from ..live.spool import SpoolFile, spool_path
from ..live.spool_end import leave_on_another
from ..recording.shared_file import RecordingFile
from ..terminal import counted, safe_text
from ._bound_routes import (
    environment_hint,
    print_intercept,
    print_routes,
    warn_of_silent_upstreams,
)
from ._live_tui import live_notes

__all__ = [
    "open_forwarding",
    "print_faults",
    "restarts_line",
    "serve",
    "serve_forwarding",
    "stopped_by",
]


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""What stops a session in order, its recording closed: Ctrl-C, a kill, and the terminal
closed (SIGHUP; its default action ended the process with the recording unclosed). Another
one while the connections drain cuts them at once (`_cut_on_another`)."""


async def serve(config: SessionConfig, console: Console) -> str:
    """Run the session until Ctrl-C or SIGTERM; returns the line it ends with."""
    session = ProxySession(config)
    with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(session.run)
            commands_scope = await _announce(config, console, bound, nursery)
            async for signum in signals:
                console.print(Text(STOPPING, "dim"))
                commands_scope.cancel()
                session.stop(stopped_by(signum))
                break
            # Connections drain, then the log catches up: each gets the drain timeout.
            drain = config.options.drain_timeout
            nursery.cancel_scope.deadline = trio.current_time() + 2 * drain + 5
            nursery.start_soon(_cut_on_another, signals, session.proxy, session.finished, console)
    return session.summary()


async def serve_forwarding(
    config: SessionConfig, console: Console, log_buffer: int, *, tui: bool = False
) -> str:
    """``--observer child-process``: forward here, observe in a process of its own
    (live/observer_process.py) until Ctrl-C or SIGTERM. Returns an empty line (the observing
    process prints the summary), or, when observation stopped early, what is known here.
    With ``tui`` the observing process runs the TUI and this one prints nothing while it
    serves (quitting the TUI sends the SIGTERM: commands/_child_tui.py)."""
    proxy, bound, observing = await open_forwarding(config, log_buffer, tui=tui)
    drain = config.options.drain_timeout
    ended: Optional[str] = None
    with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async with trio.open_nursery() as watching:
            watching.start_soon(observing.watch)
            async with trio.open_nursery() as serving:
                served = trio.Event()
                await serving.start(_serve_until_done, proxy, served)
                commands_scope = (
                    trio.CancelScope() if tui else await _announce(config, console, bound, serving)
                )
                async for signum in signals:
                    console.print(Text(STOPPING, "dim"))
                    commands_scope.cancel()
                    proxy.stop()
                    ended = stopped_by(signum)
                    break
                serving.cancel_scope.deadline = trio.current_time() + drain + 5
                serving.start_soon(_cut_on_another, signals, proxy, served, console)
            watching.cancel_scope.cancel()
        # The observing process decodes what is left, then its log catches up: each gets the
        # drain timeout, as in one process (with a spool: as long as it moves on, or until
        # the user stops the session again).
        async with trio.open_nursery() as ending:
            ending.start_soon(leave_on_another, signals, observing.leaving)
            await observing.finish(handing_on=drain, deciding=2 * drain, ended=ended)
            ending.cancel_scope.cancel()
    left = observing.left_line()
    if observing.stopped_reason is None:
        return "; ".join(line for line in (restarts_line(observing), left) if line)
    return (
        f"forwarded {proxy.accepted} connections; observation stopped early "
        f"({observing.stopped_reason}); " + (left or "the recording ends where it did")
    )


STOPPING = "stopping: listeners closed, draining connections (Ctrl-C again: cut them now)…"


async def _serve_until_done(
    proxy: Proxy,
    served: trio.Event,
    *,
    task_status: trio.TaskStatus[list[BoundRoute]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """``proxy.serve``, then ``served`` set."""
    try:
        await proxy.serve(task_status=task_status)
    finally:
        served.set()


async def _cut_on_another(
    signals: AsyncIterator[int], proxy: Proxy, done: trio.Event, console: Console
) -> None:
    """While the stopped session drains (until ``done``): another stop signal (Ctrl-C again,
    a second SIGTERM) waits no more for the connections still open: they are cut at once,
    each saying so, and the session ends as it would after the drain timeout."""

    async def cut_each() -> None:
        async for signum in signals:
            console.print(Text("stopping now: open connections cut", "dim"))
            proxy.cut(f"{stopped_by(signum)} again")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(cut_each)
        await done.wait()
        nursery.cancel_scope.cancel()


def stopped_by(signum: int) -> str:
    """How a session stopped by a signal ended, as its ``session-end`` line says it."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    return f"stopped by {name}"


def restarts_line(observing: ObservingProcess) -> str:
    """What the session's end says of observing processes replaced (empty: none was)."""
    if not observing.restarted:
        return ""
    return (
        f"the observing process was replaced {counted(observing.restarted, 'time')}: the "
        "recording has a gap at each (golem-proxy show lists them)"
    )


async def _announce(
    config: SessionConfig, console: Console, bound: list[BoundRoute], nursery: trio.Nursery
) -> trio.CancelScope:
    """Print where the session listens and what it does; start reading intercept commands.
    Returns the scope that stops reading them."""
    # Route names, paths and fault specs come from the command line: Text, not markup,
    # so a `[` in a socket path prints as itself.
    print_routes(console, bound)
    await warn_of_silent_upstreams(bound)
    hint = environment_hint(bound, config.profile)
    if hint:
        console.print(
            Text.assemble("client environment: ", (safe_text(hint), "bold")),
            soft_wrap=True,
        )
    if config.record_path:
        console.print(Text(f"recording to {safe_text(config.record_path)}"), soft_wrap=True)
    print_faults(console, config)
    commands_scope = trio.CancelScope()
    engine = config.options.intercept
    if engine is not None:
        print_intercept(console, engine, "type ? and Enter for the commands")
        nursery.start_soon(_take_commands, InterceptConsole(engine), console, commands_scope)
    console.print(Text("Ctrl-C to stop", "dim"))
    return commands_scope


def print_faults(console: Console, config: SessionConfig) -> None:
    """One line for the session's fault plan, if it has one: its rules, and the seed that
    makes a run with ``p=`` again (random unless ``--fault-seed`` gave it)."""
    plan = config.options.faults
    if plan is not None:
        rules = "; ".join(rule.spec for rule in plan.rules)
        console.print(
            Text.assemble(
                ("faults", "bold blue"),
                f": {safe_text(rules)} (seed {plan.seed}: reproduce with --fault-seed {plan.seed})",
            ),
            soft_wrap=True,
        )


async def _take_commands(
    commands: InterceptConsole, console: Console, scope: trio.CancelScope
) -> None:
    with scope:
        await commands.run(lambda text: console.print(text, soft_wrap=True))


async def open_forwarding(
    config: SessionConfig, log_buffer: int, *, tui: bool = False, stdout: Optional[int] = None
) -> tuple[Proxy, list[BoundRoute], ObservingProcess]:
    """Bind the session's routes and start the observing process (`_start_observing`), the
    relay's link; returns the relay, what its routes are bound to and that process. Raises
    ListenError, ObserverStartError or OSError; then nothing is left open."""
    proxy = Proxy(config.routes, config.profile, EventHub(), config.options)
    bound = await proxy.bind()
    proxy.start_time = trio.current_time()
    observing = await _start_observing(config, proxy, bound, log_buffer, tui=tui, stdout=stdout)
    proxy.link = observing.link
    return proxy, bound, observing


async def _start_observing(
    config: SessionConfig,
    proxy: Proxy,
    bound: list[BoundRoute],
    log_buffer: int,
    *,
    tui: bool,
    stdout: Optional[int],
) -> ObservingProcess:
    """Create the recording and start the observing process with the session's setup (its
    layers too), running the TUI with ``tui``, else logging to ``stdout`` (a descriptor; None:
    ours). Raises ObserverStartError or OSError; then nothing is left open and ``proxy`` is
    unbound."""
    record: Optional[RecordingFile] = None
    spool: Optional[SpoolFile] = None
    try:
        header = None
        if config.record_path is not None:
            header = session_header(config, bound)
            # The observing process writes it; this one keeps its descriptors to end it with
            # a line of its own if that process dies (live/observer_process.py).
            record = RecordingFile.create(config.record_path, overwrite=config.overwrite)
            if config.options.observer_spool:
                spool = SpoolFile.create(
                    spool_path(config.record_path),
                    overwrite=config.overwrite,
                    need=config.options.spool_limit,
                )
        # The faults and the intercept engine decide here, on the forwarding path; the
        # observing process decodes what they let through (and cannot take the engine's
        # trio state anyway).
        observing_options = dataclasses.replace(
            config.options,
            faults=None,
            intercept=None,
            acted_on_elsewhere=config.options.acts_on_frames,
        )
        setup = ObserverSetup(
            config.profile.name, tuple(bound), observing_options, header, config.record_path,
            config.verbosity, log_buffer, layers=config.layers, tui=tui,
            notes=live_notes(list(bound), config) if tui else (), spool=spool is not None,
        )  # fmt: skip
        observing = await ObservingProcess.start(
            setup, record, proxy.now, stdout=stdout, spool=spool
        )
    except BaseException:
        if spool is not None:
            spool.remove()
        if record is not None:
            # Nothing the failed start made stays: a recording written beside the one it
            # replaces, or one made where none was.
            record.discard()
        await proxy.unbind()
        raise
    if record is not None:
        # Only now, its header written and its observing process ready, may the recording
        # replace a file given to --overwrite: a start that failed leaves that file whole.
        try:
            record.put_in_place()
        except BaseException:
            with trio.CancelScope(shield=True):
                await observing.kill()
            record.close()
            await proxy.unbind()
            raise
    return observing
