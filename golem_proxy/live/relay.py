"""The relay: accept clients on each route, connect each to its upstream, forward bytes.

Each connection is forwarded by pumps.py: byte-exact, forwarding first, the observer handed
the same chunks after, never making them wait. How a connection ends, half-closes and resets
included, is `Connection`'s job, shared with the faulted pumps. A connection whose upstream
cannot be reached has what its client sent recorded, undelivered, before it is reset
(unreachable.py).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from typing import Optional

import trio

from golem_core.profiles import Profile

from ..events import (
    UPSTREAM_UNREACHABLE,
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    UpstreamStatus,
)
from ..net.addresses import Route
from ..net.listeners import BoundSocket, ListenError, bind_listener, connect, connect_reason
from ..net.peer_name import peer_name
from ..net.shortage import Room, ShortWait
from .connection import Connection
from .enforce_limits import limit_check_tap
from .fault_relay import FaultRelay
from .hub import EventHub
from .observer import Observer
from .observer_link import ObserverLink
from .proxy_options import BoundRoute, ProxyOptions, new_tap
from .pumps import PlainPump, Pump, pump_both
from .read_on import ReadOnBudget
from .read_up import ReadUp
from .redact import Redactor
from .resend_connection import ResendConnection
from .route_gate import RouteGate, is_refusal, open_completed
from .tap import ConnectionTap
from .unreachable import UnsentBudget, UnsentHandOn, UnsentRead, waited_for_room

__all__ = ["Proxy"]

MIN_DECODE_TIME = 0.25
"""At a stop, what is still queued for decoding gets at least this long (a session's last
few frames), even when the connections used the whole drain timeout."""
CUT_GRACE = 0.2
"""After `Proxy.cut`, how long the connections still open may take to end by themselves:
what their peers closed at that moment (and an answer already on its way) still ends as it
would, unhurried by the cut."""


class Proxy(ResendConnection):
    """Serves every route until cancelled; see `serve`."""

    def __init__(
        self,
        routes: Sequence[Route],
        profile: Profile,
        hub: EventHub,
        options: Optional[ProxyOptions] = None,
    ) -> None:
        options = options if options is not None else ProxyOptions()
        self.routes = list(routes)
        self.profile = profile
        self.hub = hub
        self.options = options
        self.redactor = Redactor(list(options.redact)) if options.redact else None
        self.observer = Observer(options.observer_memory)
        self.link: Optional[ObserverLink] = None
        """With an observing process of its own (``--observer child-process``): what every
        connection's bytes and every event are handed to, instead of `observer` and `hub`."""
        self.bound: list[BoundRoute] = []
        self.start_time = 0.0
        self._gates: list[RouteGate] = []
        """One per route: its listener, closed while the upstream refuses (route_gate.py)."""
        self._unlistened: list[tuple[Route, BoundSocket]] = []
        """The routes bound by `bind`, not listening until `serve`."""
        self._listeners_closed = False
        self._accepting = trio.CancelScope()
        self._ids = itertools.count(1)
        self._request_ids = profile.request_ids()
        """Fresh ids for requests sent again (`resend`), one source for the session."""
        self._live: dict[int, Connection] = {}
        self._read_up = ReadUp()
        """What `settle_routes` waits for the pumps to read (read_up.py)."""
        self._draining = trio.CancelScope()
        """Bounds the wait for the live connections once stopped (`serve`, `cut`)."""
        self._cut: Optional[tuple[str, str]] = None
        """Why the connections still open are not waited for, and whose answer they would
        have waited for (`cut`)."""
        self.accepted = 0
        """Connections accepted since the start."""
        self.room = Room()
        """The process's descriptors, as its listeners and its connects share them."""
        self._unsent_budget = UnsentBudget()
        """What the clients of unreachable upstreams may have read at once (unreachable.py)."""
        self.read_on_budget = ReadOnBudget()
        """What the pumps holding a frame may read on behind it at once, all connections
        together (read_on.py)."""
        self._all_closed = trio.Event()
        self._all_closed.set()

    @property
    def idle(self) -> bool:
        """Every byte forwarded so far is decoded and its events published."""
        return self.observer.idle

    @property
    def live_connections(self) -> int:
        return len(self._live)

    def new_connection_id(self) -> int:
        """A connection number of this session, for a hop served outside the relay (the MCP
        stdio hop of `golem-proxy mcp`): numbers stay unique across the recording."""
        return next(self._ids)

    def now(self) -> float:
        return trio.current_time() - self.start_time

    async def settle_routes(self) -> None:
        """Return once every connection the kernel completed on the routes by now has been
        accepted and its open published (bounded: `route_gate.open_completed`), and what
        their clients wrote by now has been read and handed on (bounded: `read_up.ReadUp`):
        a hop served outside the relay calls it before handing on bytes it read, which came
        after those connects and writes."""
        await open_completed(self._gates)
        await self._read_up.before(self._live)

    def publish(self, event: Event) -> None:
        if self.link is not None:
            self.link.publish(event)
            return
        connections = self.options.connections
        if isinstance(event, UpstreamStatus) and connections is not None:
            # In wire order with the MCP hop's bytes, as the routes' opens and closes: the
            # tool calls made until the route listens again are marked (`ToolCallTracker`).
            tracker = connections.tracker

            def follow_then_publish() -> None:
                tracker.upstream(event)
                self.hub.publish(event, self.now())

            if self.options.enforce_limits:  # every byte is decoded as it is forwarded
                follow_then_publish()
            else:
                self.observer.after_queued(follow_then_publish)
            return
        self.hub.publish(event, self.now())

    async def bind(self) -> list[BoundRoute]:
        """Bind every listener (once), to learn its address (the port of ``:0``), without
        accepting yet: until `serve` listens, a client is refused as if no proxy ran, rather
        than accepted and kept waiting while the session starts. Raises ListenError saying
        which one failed."""
        if self.bound:
            return list(self.bound)
        try:
            for route in self.routes:
                allow_public = self.options.allow_public
                socket = await bind_listener(route.listen, allow_public=allow_public)
                self._unlistened.append((route, socket))
                self.bound.append(BoundRoute(route, socket.address))
        except BaseException:
            await self._close_listeners()
            raise
        return list(self.bound)

    def _listen(self) -> None:
        """Make the bound listeners accept. Raises ListenError (another process took a port
        bound but not listening yet)."""
        allow_public = self.options.allow_public
        try:
            while self._unlistened:
                route, socket = self._unlistened.pop(0)
                listener = socket.listen()
                self._gates.append(
                    RouteGate(
                        route, listener, self.publish, self.now,
                        allow_public=allow_public, room=self.room,
                    )
                )  # fmt: skip
        except ListenError:
            for _, socket in self._unlistened:
                socket.close()
            self._unlistened.clear()
            raise

    async def unbind(self) -> None:
        """Close the listeners opened by `bind` (when a session fails to start)."""
        await self._close_listeners()

    async def _close_listeners(self) -> None:
        if self._listeners_closed:
            return
        self._listeners_closed = True
        for _, socket in self._unlistened:
            socket.close()
        self._unlistened.clear()
        with trio.CancelScope(shield=True):
            for gate in self._gates:
                await gate.aclose()

    async def serve(
        self, *, task_status: trio.TaskStatus[list[BoundRoute]] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Bind (if not yet done), report the bound routes through ``task_status``, serve.

        After `stop()` the listeners close at once and live connections get
        ``options.drain_timeout`` seconds to finish before they are cut; the tap then decodes
        whatever is left. Cancelling it instead cuts everything at once. Raises ListenError
        (before reporting started)."""
        await self.bind()
        try:
            self._listen()
        except BaseException:
            await self._close_listeners()
            raise
        if not self.start_time:
            self.start_time = trio.current_time()
        stopping: Optional[float] = None
        try:
            async with trio.open_nursery() as handlers:
                handlers.start_soon(self.observer.run)
                with self._accepting:
                    async with trio.open_nursery() as acceptors:
                        for gate in self._gates:
                            acceptors.start_soon(self._serve_route, gate, handlers)
                        task_status.started(list(self.bound))
                # `stop()` was called: no new connections; the live ones get a deadline.
                stopping = trio.current_time()
                await self._close_listeners()
                drained_by = stopping + self.options.drain_timeout
                self._draining.deadline = min(self._draining.deadline, drained_by)
                with self._draining:
                    await self._all_closed.wait()
                self._say_cut()
                handlers.cancel_scope.cancel()
        finally:
            await self._close_listeners()
            self._read_up.close()  # its epoll descriptor: one a session, in a long-lived process
            # Decoding what is still queued shares the drain timeout: a flood of tiny frames
            # may need far longer to decode than to forward, and what is left is recorded as
            # a gap rather than holding up the exit.
            if stopping is None:
                self.observer.drain_now()
            else:
                spent = trio.current_time() - stopping
                self.observer.drain_now(max(self.options.drain_timeout - spent, MIN_DECODE_TIME))

    def stop(self) -> None:
        """Stop accepting at once; connections still open get ``options.drain_timeout``
        seconds to finish, then `serve` cuts them and returns."""
        self._accepting.cancel()

    def cut(self, why: str, answering: str = "the upstream") -> None:
        """Stop, and wait for no connection (`CUT_GRACE` at most, whatever the drain timeout):
        their client is gone (``why``: the MCP server whose connections they are exited), so
        no one would read what they still wait for. Each one cut says so in its close: an
        answer from ``answering`` in flight was not waited for."""
        self._cut = (why, answering)
        self._draining.deadline = min(self._draining.deadline, trio.current_time() + CUT_GRACE)
        self.stop()

    def _say_cut(self) -> None:
        """The connections about to be cut, after `cut`: their close says why (a connection
        with no other reason yet would read "proxy shutting down", and one whose client closed
        "client closed", hiding that an answer was given up)."""
        if self._cut is None:
            return
        why, answering = self._cut
        for conn in self._live.values():
            # What ended a side first (the client's close) comes first, then the cut and what
            # it did not wait for: the answer, or the close of the side still open.
            first = f"{conn.reason}; " if conn.reason else ""
            if conn.awaiting_reply:
                conn.reason = f"{first}{why}; {answering}'s answer was not waited for"
                conn.abnormal = True
            elif conn.eof[Direction.C2S] and not conn.eof[Direction.S2C]:
                conn.reason = f"{first}{why}; {answering}'s close was not waited for"
            else:
                conn.note(f"{why}; the connection was not waited for", True)

    async def _serve_route(self, gate: RouteGate, handlers: trio.Nursery) -> None:
        async def handle(client: trio.SocketStream) -> None:
            await self._handle(client, gate.route, gate)

        await gate.serve(handle, handlers)

    async def _handle(
        self, client: trio.SocketStream, route: Route, gate: Optional[RouteGate] = None
    ) -> None:
        conn = Connection(next(self._ids), route, client)
        self.accepted += 1
        self._live[conn.conn] = conn
        self._read_up.add(conn)
        self._all_closed = trio.Event() if self._all_closed.is_set() else self._all_closed
        opened = ConnectionOpened(
            conn=conn.conn,
            route=route.name,
            client=peer_name(client),
            upstream=str(route.upstream),
            t=self.now(),
        )
        if self.link is None and not self.options.enforce_limits:
            # Its open goes behind the bytes forwarded before it are decoded (the exchanges
            # whose answers went by before it are logged first), and so does its close, even
            # when it never reaches an upstream (refused). Handed on in order with the bytes,
            # or decoded as they are forwarded, it needs no queue.
            conn.observer = self.observer
        conn.publish_in_order(self.publish, opened)
        self._follow_opened(conn, opened)
        try:
            unreachable = "did not answer in time"
            wait = ShortWait()
            with trio.move_on_after(self.options.connect_timeout):
                try:
                    conn.upstream = await self.room.connect(
                        functools.partial(connect, route.upstream), wait
                    )
                except OSError as exc:
                    unreachable = connect_reason(exc)
                    conn.note(f"upstream {route.upstream} unreachable: {unreachable}", True)
                    if gate is not None and is_refusal(exc):
                        # Closed before this client is reset: its reconnect is refused, as
                        # it would be without the proxy.
                        await gate.refused(exc)
            if wait.short is not None:  # this process, not the upstream, ran short
                unreachable = waited_for_room(wait, conn, route.upstream)
            if conn.upstream is None:
                conn.note(f"upstream {route.upstream} {unreachable}", True)
                await self._unsent(conn, f"{UPSTREAM_UNREACHABLE}: {unreachable}")
                conn.reset.add("client")
                return
            await self._relay(conn)
        finally:
            self._finish(conn)

    def _observe(self, conn: Connection) -> None:
        """Set up ``conn``'s observation: in a process of its own, or its tap here."""
        conn.inline = self.options.enforce_limits
        if self.link is not None:
            # Observed in a process of its own: this one forwards and hands on what it sent
            # (see observer_link), deciding here only what must be decided before forwarding.
            conn.link = self.link
        else:
            conn.tap = self._tap(conn.conn, conn.route.name)
            conn.observer = self.observer

    async def _unsent(self, conn: Connection, why: str) -> None:
        """``conn``'s upstream could not be reached (``why``): record what its client sent,
        never forwarded, undelivered, as it is read (unreachable.py)."""
        hand_on = UnsentHandOn(conn, self.start_time, why, functools.partial(self._observe, conn))
        reading = UnsentRead(self._unsent_budget, self.options.observe.frame, hand_on)
        try:
            await reading(conn.client.socket.fileno())
            hand_on.end(reading)
        finally:
            reading.release()

    async def _relay(self, conn: Connection) -> None:
        assert conn.upstream is not None
        conn.last_activity = trio.current_time()
        conn.hold_idle_fin = not self.profile.clients_read_past_answers
        self._observe(conn)
        if conn.inline:
            conn.judge = limit_check_tap(conn.conn, conn.route.name, self.profile, self.options)
        # Observed in a process of its own, a large frame's body may go by the kernel's way.
        framing = self.profile.framing if self.link is not None else None
        pump: Pump = PlainPump(self.start_time, self.options.enforce_limits, framing).pump
        name = conn.route.name
        plan = self.options.faults
        engine = self.options.intercept
        faults = None
        if plan is not None and plan.applies_to(name):
            faults = plan.connection(
                conn.conn, name, self.profile, self.options.observe.parse, self.redactor
            )
        intercept = None
        if engine is not None and engine.applies_to(name):
            intercept = engine.connection(
                conn.conn, name, self.options.observe.parse, self.redactor
            )
        if faults is not None or intercept is not None:
            pump = FaultRelay(
                self.profile,
                self.options.cap,
                self.now,
                self.publish,
                conn,
                faults,
                intercept,
                self.read_on_budget,
            ).pump
        await pump_both(conn, pump, self.now, self.options.idle_timeout)

    def _tap(self, conn: int, route: str) -> ConnectionTap:
        return new_tap(conn, route, self.profile, self.publish, self.options, self.redactor)

    def _follow_opened(self, conn: Connection, opened: ConnectionOpened) -> None:
        """Show ``opened`` to ``options.connections`` in wire order: after the bytes forwarded
        before it are decoded (the MCP hop's tool calls among them), as its close will be."""
        connections = self.options.connections
        if connections is None or self.link is not None:
            return  # the observing process follows them (`HandoffSource`)
        if self.options.enforce_limits:
            connections.opened(opened)  # every byte is decoded as it is forwarded
            return
        self.observer.after_queued(functools.partial(connections.opened, opened))

    def _publish_closed(self, conn: Connection, closed: ConnectionClosed) -> None:
        connections = self.options.connections
        if connections is not None:
            # Read once everything the connection forwarded was decoded.
            closed = connections.closed(closed, conn.tap is not None and conn.tap.carried)
        self.publish(closed)

    def _finish(self, conn: Connection) -> None:
        self._read_up.remove(conn)
        conn.close_sockets()
        conn.observe_close(
            conn.closed_event(self.now()), functools.partial(self._publish_closed, conn)
        )
        self._live.pop(conn.conn, None)
        if not self._live:
            self._all_closed.set()
