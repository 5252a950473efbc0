"""A proxy session: the relay plus its consumers (log, recorder, any other subscriber), with
an orderly stop: listeners close, live connections drain, the tap finishes, consumers see every
remaining event, and the recording is flushed last, ending with a ``session-end`` line (how
the session ended, what it counted: a recording without it was cut short)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Optional, Protocol

import trio
from rich.console import Console
from rich.text import Text

from golem_core.profiles import Profile, get_profile

from ..events import Event, SessionEnded
from ..net.addresses import Route
from ..recording.format import Header, RecordingWriter, RouteInfo
from ..recording.payload_places import PayloadPlaces
from ..terminal import safe_text
from .hub import EventHub, Subscription
from .log import EventLog, Verbosity
from .proxy_options import BoundRoute, ProxyOptions
from .recorder import Recorder
from .relay import Proxy
from .tally import SessionTally

__all__ = ["EventSource", "ProxySession", "SessionConfig", "session_header"]

Consumer = Callable[[Subscription], Awaitable[None]]

STOP_LIMIT = 250_000
"""Events a consumer may have queued while the session stops (see `ProxySession.stop`)."""


@dataclass
class SessionConfig:
    routes: Sequence[Route]
    profile: Profile
    options: ProxyOptions = field(default_factory=ProxyOptions)
    record_path: Optional[str] = None
    overwrite: bool = False
    console: Optional[Console] = None
    verbosity: Verbosity = Verbosity.NORMAL
    log_buffer: int = 2_000
    layers: tuple[RouteInfo, ...] = ()
    """Routes served outside the relay that share the session and its recording (the MCP
    stdio hop of `golem-proxy mcp`), named in the header after the relay's routes."""
    record_fd: Optional[int] = None
    """The recording, already open (the forwarding process opened it and keeps a copy of the
    descriptor): written here from its header on, instead of creating ``record_path``."""
    header: Optional[Header] = None
    """The recording's header when another process decided it (its start time, routes)."""
    continues_recording: bool = False
    """``record_fd`` holds the header and the lines of an observing process that died: this
    session appends to it, from the line the forwarding process names once it takes over
    (`golem_proxy.live.link_resume.Resumption`), and writes no header."""
    took_over: bool = False
    """This session's observing process replaced one that died: what it counts (its closing
    line) is since then, not the whole session's."""
    payload_places: Optional[PayloadPlaces] = None
    """Where the recorder notes the place of each large payload it writes, for a live view
    that reads them back from the file rather than keeping them (the TUI's)."""

    def route_profiles(self) -> dict[str, Profile]:
        """The routes whose frames are parsed with a profile of their own (the layers'),
        by name; every other route's with ``profile``."""
        return {
            layer.name: get_profile(layer.profile)
            for layer in self.layers
            if layer.profile is not None
        }


class EventSource(Protocol):
    """Where the session's events come from: the relay (`Proxy`), or the handoff from the
    forwarding process when observation runs in a process of its own (observing.py)."""

    start_time: float
    bound: list[BoundRoute]

    async def bind(self) -> list[BoundRoute]: ...

    async def unbind(self) -> None: ...

    async def serve(
        self, *, task_status: trio.TaskStatus[list[BoundRoute]] = trio.TASK_STATUS_IGNORED
    ) -> None: ...

    def stop(self) -> None: ...

    @property
    def idle(self) -> bool:
        """Everything handed to the source so far is decoded and published."""
        ...


class ProxySession:
    """Runs one proxy session. Call `stop()` (from the same trio run) to end it gracefully."""

    def __init__(
        self, config: SessionConfig, source: Optional[Callable[[EventHub], EventSource]] = None
    ) -> None:
        self.config = config
        self.hub = EventHub()
        self.proxy: Proxy
        """The relay (not set when ``source`` gives the events: the observing process)."""
        self.source: EventSource
        if source is None:
            self.proxy = self.source = Proxy(
                config.routes, config.profile, self.hub, config.options
            )
        else:
            self.source = source(self.hub)
        self.writer: Optional[RecordingWriter] = None
        self.recorder: Optional[Recorder] = None
        self.tally = SessionTally()
        """What the session saw (exchanges, errors, violations), for its closing line."""
        if config.took_over:
            self.tally.took_over()
        self.hub.attach_sink(self.tally)
        self._log: Optional[Subscription] = None
        self.finished = trio.Event()
        """Set once the session stopped and every consumer saw the last event."""
        self._extra: list[tuple[str, float, Consumer]] = []
        self._ending: Optional[tuple[str, Optional[float]]] = None
        """Why the session stopped in order, and when on the events' clock if the source
        said (the observing process: the forwarding process's clock), once `stop` is called:
        the recording then ends with its ``session-end`` line."""

    def add_consumer(self, name: str, consumer: Consumer, buffer: float = 10_000) -> None:
        """Subscribe ``consumer`` to the event stream (before `run`)."""
        self._extra.append((name, buffer, consumer))

    def stop(self, reason: str = "stopped", *, t: Optional[float] = None) -> None:
        """Stop gracefully: no new connections, live ones drain (``drain_timeout``), the
        recording is flushed and ends with a ``session-end`` line saying ``reason`` (the
        first one given; ``t``: when, on the events' clock, else the session's time once it
        drained), and the consumers get another ``drain_timeout`` to take what is left (the
        log then says how many events it could not show)."""
        if self._ending is None:
            self._ending = (reason, t)
        # What the relay decodes while it drains comes in one burst: queue it for the
        # consumers rather than drop it, within their byte bound and STOP_LIMIT events.
        self.hub.widen(STOP_LIMIT)
        self.source.stop()

    async def run(
        self, *, task_status: trio.TaskStatus[list[BoundRoute]] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve until `stop()`; then drain and flush. Raises ListenError or OSError (for the
        recording file) before reporting started."""
        config = self.config
        bound = await self.source.bind()
        self.source.start_time = trio.current_time()
        if config.record_path is not None or config.record_fd is not None:
            header = config.header or self._header(bound)
            try:
                if config.record_fd is not None:
                    self.writer = RecordingWriter(
                        os.fdopen(config.record_fd, "wb"),
                        header,
                        after_seq=0 if config.continues_recording else None,
                        from_tap=True,
                    )
                else:
                    assert config.record_path is not None
                    self.writer = RecordingWriter.create(
                        config.record_path, header, overwrite=config.overwrite, from_tap=True
                    )
            except BaseException:
                await self.source.unbind()
                raise
        async with trio.open_nursery() as consumers:
            recorder = self.recorder = (
                Recorder(self.writer, places=config.payload_places) if self.writer else None
            )
            flushing = trio.CancelScope()
            if recorder is not None:
                self.hub.attach_sink(recorder, first=True)
                consumers.start_soon(_flush_until_cancelled, recorder, flushing)
            if config.console is not None:
                log = EventLog(
                    config.console,
                    config.profile,
                    config.verbosity,
                    # The session's start, where another process decided it: an observing
                    # process (restarted, or just slow to start) stamps with its own clock's
                    # start otherwise, seconds late.
                    started_wall=_wall_start(config.header),
                    route_profiles=config.route_profiles(),
                    acts_on_frames=config.options.acts_on_frames,
                )
                subscription = self._log = self.hub.subscribe(
                    "log", config.log_buffer, log.may_show
                )
                consumers.start_soon(_isolated, "log", _log_events(self.hub, subscription, log))
            for name, buffer, consumer in self._extra:
                consumers.start_soon(_isolated, name, consumer(self.hub.subscribe(name, buffer)))
            try:
                await self.source.serve(task_status=task_status)
            finally:
                self.hub.close()
                if recorder is not None:
                    recorder.close(self._session_end(recorder))
                flushing.cancel()
                # The consumers catch up within a deadline: a log far behind must not keep
                # the process alive (it says what it did not show: `_log_events`).
                consumers.cancel_scope.deadline = trio.current_time() + config.options.drain_timeout
        self.finished.set()

    def _session_end(self, recorder: Recorder) -> Optional[SessionEnded]:
        """The recording's last line when the session stopped in order (`stop`), after every
        event: what the closing line counts, and why it stopped."""
        if self._ending is None:
            return None
        reason, t = self._ending
        if t is None:
            t = trio.current_time() - self.source.start_time
        tally, since_restart = self.tally, self.config.took_over
        return SessionEnded(
            t=max(t, recorder.last_t),
            reason=reason,
            exchanges=tally.exchanges,
            errors=tally.errors,
            violations=tally.violations,
            unanswered=tally.unanswered,
            not_recorded=recorder.total_missed,
            unobserved=tally.gaps.counted(),
            since_restart=since_restart,
        )

    def caught_up(self) -> bool:
        """Every byte forwarded so far is decoded and the log printed every event published
        so far: what is printed now lands after them (the demo's narration)."""
        if not self.source.idle:
            return False
        if self._log is None:
            return True
        # An empty buffer is not enough: an event handed straight to the waiting log task is
        # printed only when that task runs, and then it is no longer waiting.
        waiting = self._log.receive_channel.statistics()
        return waiting.current_buffer_used == 0 and waiting.tasks_waiting_receive > 0

    @property
    def ended_in_order(self) -> bool:
        """`stop` was called: the recording ends with its ``session-end`` line."""
        return self._ending is not None

    def summary(self, cut_short: Optional[str] = None) -> str:
        """The line the session ends with: what it recorded and where (call once finished);
        ``cut_short``: why the recording has no ``session-end`` line, when it has none."""
        recorder = self.recorder
        # A session with a hop served outside the relay is `golem-proxy mcp`'s.
        command = "mcp" if self.config.layers else "proxy"
        if recorder is None:
            return self.tally.summary(
                self.config.record_path, command=command, since_restart=self.config.took_over
            )
        failure = None if recorder.error is None else str(recorder.error)
        return self.tally.summary(
            self.config.record_path,
            recorder.total_missed,
            failure,
            command=command,
            since_restart=self.config.took_over,
            cut_short=None if self.ended_in_order else cut_short,
        )

    def _header(self, bound: list[BoundRoute]) -> Header:
        return session_header(self.config, bound)


def session_header(config: SessionConfig, bound: list[BoundRoute]) -> Header:
    """The recording's header for a session serving ``bound`` (and its ``layers``)."""
    routes = [RouteInfo(b.route.name, str(b.listen), str(b.route.upstream)) for b in bound]
    routes.extend(config.layers)
    return Header.new(
        config.profile.name, routes, config.options.redact, ends_with_session_end=True
    )


async def _isolated(name: str, consumer: Awaitable[None]) -> None:
    """Run a consumer; if it fails, say so once and let the proxy go on without it."""
    try:
        await consumer
    except Exception as exc:
        text = f"golem-proxy: the {name} stopped, the proxy goes on ({type(exc).__name__}: {exc})"
        with contextlib.suppress(Exception):
            sys.stderr.write(text.encode("utf-8", "backslashreplace").decode("utf-8") + "\n")


async def _flush_until_cancelled(recorder: Recorder, scope: trio.CancelScope) -> None:
    with scope:
        await recorder.flush_periodically()


async def _log_events(hub: EventHub, subscription: Subscription, log: EventLog) -> None:
    """Feed the log. Nothing the log does may end the session: an event that cannot be shown
    is reported by its type, and once the log's output is gone (a closed pipe) the log stops
    listening. Cancelled before it caught up (the session stopped and its deadline passed),
    it says how many events it did not show."""
    in_hand = 0  # taken from the queue, not handled yet
    try:
        async for batch in subscription.batches():
            in_hand = len(batch)
            for event in batch:
                if in_hand % _CHECK_EVERY == 0:
                    # A batch may be the whole backlog of a stop: the deadline must reach it.
                    await trio.lowlevel.checkpoint_if_cancelled()
                in_hand -= 1
                if log.stopped:
                    hub.unsubscribe(subscription)
                    in_hand = 0
                    return
                _show(log, event)
    finally:
        if not log.stopped:
            with contextlib.suppress(Exception):
                log.flush_repeats()
        left = in_hand + subscription.waiting + subscription.missed
        if left and not log.stopped:
            with contextlib.suppress(Exception):
                log.console.print(
                    Text(
                        f"… {left} events not shown (the proxy stopped before the log caught "
                        "up; a longer --drain-timeout gives it more time)",
                        "yellow",
                    ),
                    soft_wrap=True,
                )


_CHECK_EVERY = 64


def _show(log: EventLog, event: Event) -> None:
    """Show one event; one that cannot be shown is reported by its type."""
    try:
        log.handle(event)
    except Exception as exc:
        # If even this fails, the console itself is broken: the relay goes on anyway.
        with contextlib.suppress(Exception):
            log.console.print(
                Text(f"(a {type(event).__name__} event could not be shown: ")
                + Text(safe_text(f"{type(exc).__name__}: {exc}", limit=200) + ")"),
                soft_wrap=True,
            )


def _wall_start(header: Optional[Header]) -> Optional[float]:
    """The wall time (seconds since the epoch) ``header``'s ``t`` counts from; None without a
    header, or one that names no time."""
    started = header.started if header is not None else None
    return started.timestamp() if started is not None else None
