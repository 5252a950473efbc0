"""The TUI of ``proxy --tui --observer child-process``, run by the observing process
(live/observing.py): the app in this process's main thread, the session (the handoff from the
forwarding process, decoded, recorded) in the TUI's worker thread, feeding the app through its
hub as in one process (`hub_sink`).

Quitting the TUI ends the whole session, as it does in one process: this process asks the
forwarding process to stop (SIGTERM, as a user's would), which drains its connections and closes
the handoff pipe; the session here then decodes and records what is left and ends. The session
ending otherwise (the forwarding process was stopped) closes the TUI, so the terminal is given
back before the forwarding process stops waiting for this one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from collections.abc import Awaitable, Mapping
from typing import Callable, Optional

import trio
from rich.console import Console
from rich.text import Text

from golem_core.profiles import Profile

from ..live.observer_launch import ObserverSetup
from ..live.observing import observe
from ..live.session import ProxySession, SessionConfig
from ..recording.payload_places import PayloadPlaces
from ..table_layout import print_line
from .app import GolemProxyApp
from .bridge import EventBuffer, SourceInfo, TrioThreadSource, hub_sink
from .flow_bound import FlowBound
from .payloads import LeftToRecording, PayloadBudget
from .reloading import RESTART_LINE_WAIT, ReloadGate, read_back

__all__ = ["ForwardedSessionSource", "observe_with_tui"]

READY_WAIT = 10.0
"""Seconds the TUI waits for its session to be ready before it starts anyway."""
FINISH_GRACE = 10.0
"""Seconds past the drain timeouts the session may take to end after the TUI quits."""


class ForwardedSessionSource(TrioThreadSource):
    """The session that the forwarding process feeds, as the TUI's event source. Unlike a
    session in one process it is not cancelled when the TUI stops: `stop` asks the forwarding
    process to stop, and the session ends when the handoff does (nothing handed on is lost).
    ``on_end`` is called from the worker thread once the session is over."""

    def __init__(
        self,
        main: Callable[[EventBuffer], Awaitable[None]],
        *,
        forwarding_pid: int,
        description: str,
        on_end: Callable[[], None] = lambda: None,
        route_profiles: Optional[Mapping[str, Profile]] = None,
    ) -> None:
        super().__init__(main, description=description, route_profiles=route_profiles)
        self.forwarding_pid = forwarding_pid
        self.on_end = on_end
        self.quitting = False
        """The TUI is quitting (rather than closing because the session ended)."""
        self._ahead: Optional[threading.Thread] = None

    def start_ahead(self, sink: EventBuffer) -> None:
        """Run the session now, in a thread of its own, rather than once the TUI has started
        (50-100 ms later): the forwarding process waits for it to be ready, and at a restart
        what crosses meanwhile is a gap in the recording. `run` then waits for it."""
        self._ahead = threading.Thread(
            target=super().run, args=(sink,), name="session", daemon=True
        )
        self._ahead.start()

    def run(self, sink: EventBuffer) -> None:
        try:
            if self._ahead is None:
                super().run(sink)
            else:
                self._ahead.join()
        finally:
            self.on_end()

    def stop(self) -> None:
        """The TUI is quitting (its unmount; Textual waits for this source's thread): ask
        the forwarding process to stop, as Ctrl-C would (once; not after the session ended)."""
        already, self.quitting = self.quitting, True
        if already or self.done.is_set():
            return
        # Only the process that started us: once it is gone we have a new parent, and the
        # pipe has ended anyway.
        if os.getppid() == self.forwarding_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.forwarding_pid, signal.SIGTERM)


def observe_with_tui(
    config: SessionConfig,
    setup: ObserverSetup,
    pipe_fd: int,
    control: socket.socket,
    record_read_fd: int = -1,
    spool_fd: int = -1,
) -> int:
    """Run the TUI over the session until the user quits it or the session ends, then print
    the session's closing line on stderr. Returns the exit code (1: the session failed).
    Taking over from an observing process that died, the TUI first shows the session so far,
    read back from the recording (``record_read_fd``; reloading.py)."""
    summaries: list[str] = []
    # Bound already: the forwarding process listens before it starts this one.
    live_on = "live on " + ", ".join(str(bound.listen) for bound in setup.bound)

    async def serve(sink: EventBuffer) -> None:
        why = setup.restarted_because
        sink.describe(SourceInfo(live_on, setup.notes))
        places = config.payload_places
        lighten = LeftToRecording(places, config.profile, config.route_profiles())
        live = hub_sink(sink, lighten)
        gate, end = None, -1
        if why and setup.continues_recording and record_read_fd >= 0:
            # Where the dead process's lines end, as the forwarding process found it when it
            # cut a torn last line off (before this session writes any).
            end = setup.recorded_up_to
        if end >= 0:
            gate = ReloadGate(live)
        elif why:
            cause = "it could not be read back" if setup.continues_recording else "no --record"
            not_shown = f"the rows before it are not shown ({cause})"
            sink.describe(
                SourceInfo(live_on, (*setup.notes, f"observation restarted ({why}); {not_shown}"))
            )

        def attach(session: ProxySession) -> None:
            session.hub.attach_sink(live if gate is None else gate.push)

        ready = trio.Event()
        stop = threading.Event()

        def on_ready() -> None:
            ready.set()
            session_ready.set()

        async def read_back_then_open(gate: ReloadGate) -> None:
            # Once the take-over is done: the reading back's share of the interpreter is not
            # taken from the session's start, which is the gap in the recording.
            await ready.wait()
            try:
                note = await trio.to_thread.run_sync(
                    read_back,
                    record_read_fd,
                    end,
                    sink,
                    why,
                    stop,
                    config.record_path,
                    RESTART_LINE_WAIT,
                )
            finally:  # the live rows flow whatever became of the reading back
                gate.open()
                sink.count_missed(gate.dropped)
            sink.describe(SourceInfo(live_on, (*setup.notes, note)))

        async with trio.open_nursery() as nursery:
            if gate is not None:
                nursery.start_soon(read_back_then_open, gate)
            try:
                summaries.append(
                    await observe(
                        config,
                        setup,
                        pipe_fd,
                        control,
                        attach,
                        record_read_fd,
                        on_ready=on_ready,
                        spool_fd=spool_fd,
                    )
                )
            finally:  # the session is over: so is reading back what came before it
                stop.set()
                nursery.cancel_scope.cancel()

    app: Optional[GolemProxyApp] = None
    session_ready = threading.Event()

    def close_app() -> None:
        # The forwarding process stopped: leave the terminal as it was before it stops
        # waiting for this process.
        if app is not None and not source.quitting:
            with contextlib.suppress(Exception):  # the app may be closing already
                app.call_from_thread(app.exit)

    source = ForwardedSessionSource(
        serve,
        forwarding_pid=os.getppid(),
        description=live_on,
        on_end=close_app,
        route_profiles=config.route_profiles(),
    )
    # `r` sends a request again as a new client of the proxy, on the flow's own route, so the
    # forwarding process forwards it and this session records it like any other (in one
    # process it goes through the session itself).
    through = {item.route.name: item.listen for item in setup.bound}
    # The large payloads the recorder writes are read back from the file when needed, not
    # kept (payloads.py): the recorder notes where they lie.
    places = PayloadPlaces(config.record_path) if config.record_path is not None else None
    config.payload_places = places
    budget = PayloadBudget(recording=config.record_path)
    buffer = EventBuffer(source.buffer_limit)
    source.start_ahead(buffer)
    # The app is made and started (its styles, the first layout) once the forwarding process
    # is told the session is ready: sharing the interpreter with it doubled a take-over's gap.
    deadline = time.monotonic() + READY_WAIT
    while not session_ready.wait(0.01) and not source.done.is_set():
        if time.monotonic() > deadline:
            break
    app = GolemProxyApp(
        source,
        config.profile,
        "golem-proxy",
        route_targets=through,
        payload_budget=budget,
        buffer=buffer,
        flow_bound=FlowBound(recording=config.record_path),
    )
    try:
        app.run()
    finally:
        source.stop()
    errors = Console(stderr=True, highlight=False)
    if not source.done.is_set():
        errors.print("[dim]stopping: listeners closed, draining connections…[/]")
    source.done.wait(3 * config.options.drain_timeout + FINISH_GRACE)
    if source.error is not None:
        errors.print(Text(f"golem-proxy: {source.describe_error(source.error)}"))
        return 1
    for line in summaries:
        print_line(errors, line)
    return 0
