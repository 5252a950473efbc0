"""The relay: accept clients on each route, connect each to its upstream, forward bytes.

Forwarding is byte-exact and comes first: each direction reads into a reused buffer and writes
straight to the other socket, then hands a copy of the chunk to the tap. Nothing is decoded or
re-encoded on this path (with ``enforce_limits`` the tap checks a chunk before it is sent).
Half-closes are propagated with ``shutdown(SHUT_WR)``; a reset or a refused upstream resets
the client side, so a client sees what it would see without the proxy in between.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional

import trio

from golem_core.catalogue import MethodCatalogue
from golem_core.profiles import Profile

from ..events import ConnectionClosed, ConnectionOpened, Direction, Event
from ..net.addresses import Address, Route
from ..net.listeners import Listener, close_abortively, connect, open_listener
from ..net.sockio import write_all
from .fault_relay import FaultRelay
from .faults import FaultPlan
from .hub import EventHub
from .redact import Redactor
from .tap import ConnectionTap, TapWorker

__all__ = ["BoundRoute", "Proxy", "ProxyOptions"]

RECV_SIZE = 65536
"""A read's size while traffic is light (one frame of a request/response exchange)."""
RECV_SIZE_BULK = 1024 * 1024
"""A read's size once a read filled its buffer: the kernel holds more (a large frame in
flight), and one scheduler round per MiB rather than per 64 KiB is what lets the relay (and
the tap behind it) keep up with a peer that writes a 16 MiB frame in one go."""
_MAX_STREAK = 16
_MAX_STREAK_BYTES = RECV_SIZE_BULK
"""A pump that keeps finding data yields after this many chunks or bytes (fairness)."""


@dataclass(frozen=True)
class ProxyOptions:
    enforce_limits: bool = False
    allow_public: bool = False
    connect_timeout: float = 10.0
    drain_timeout: float = 2.0
    """How long live connections may go on after shutdown begins."""
    idle_timeout: Optional[float] = None
    """Close a connection with no traffic in either direction for this long (off by default)."""
    cap: Optional[int] = None
    catalogue: Optional[MethodCatalogue] = None
    redact: tuple[str, ...] = ()
    faults: Optional[FaultPlan] = None
    """``--fault`` rules; routes they can act on forward frame by frame (`fault_relay`)."""


@dataclass(frozen=True)
class BoundRoute:
    """A route with the address its listener is really bound to."""

    route: Route
    listen: Address


@dataclass
class _Connection:
    conn: int
    route: Route
    client: trio.SocketStream
    upstream: Optional[trio.SocketStream] = None
    bytes: dict[Direction, int] = field(
        default_factory=lambda: {Direction.C2S: 0, Direction.S2C: 0}
    )
    eof: dict[Direction, bool] = field(
        default_factory=lambda: {Direction.C2S: False, Direction.S2C: False}
    )
    reason: str = ""
    abnormal: bool = False
    last_activity: float = 0.0
    reset: set[str] = field(default_factory=set)
    """Sides ("client", "upstream") to close with a reset rather than a clean FIN."""

    def note(self, reason: str, abnormal: bool = False) -> None:
        if not self.reason:  # the first cause is the one worth reporting
            self.reason = reason
            self.abnormal = abnormal


class Proxy:
    """Serves every route until cancelled; see `serve`."""

    def __init__(
        self,
        routes: Sequence[Route],
        profile: Profile,
        hub: EventHub,
        options: ProxyOptions = ProxyOptions(),
    ) -> None:
        self.routes = list(routes)
        self.profile = profile
        self.hub = hub
        self.options = options
        self.redactor = Redactor(list(options.redact)) if options.redact else None
        self.tap_worker = TapWorker()
        self.bound: list[BoundRoute] = []
        self.start_time = 0.0
        self._listeners: list[tuple[Listener, Route]] = []
        self._listeners_closed = False
        self._accepting = trio.CancelScope()
        self._ids = itertools.count(1)
        self._live: set[int] = set()
        self._all_closed = trio.Event()
        self._all_closed.set()

    @property
    def live_connections(self) -> int:
        return len(self._live)

    def now(self) -> float:
        return trio.current_time() - self.start_time

    def publish(self, event: Event) -> None:
        self.hub.publish(event, self.now())

    async def bind(self) -> list[BoundRoute]:
        """Open every listener (once). Raises ListenError saying which one failed."""
        if self._listeners:
            return list(self.bound)
        try:
            for route in self.routes:
                listener = await open_listener(route.listen, allow_public=self.options.allow_public)
                self._listeners.append((listener, route))
                self.bound.append(BoundRoute(route, listener.address))
        except BaseException:
            await self._close_listeners()
            raise
        return list(self.bound)

    async def unbind(self) -> None:
        """Close the listeners opened by `bind` (when a session fails to start)."""
        await self._close_listeners()

    async def _close_listeners(self) -> None:
        if self._listeners_closed:
            return
        self._listeners_closed = True
        with trio.CancelScope(shield=True):
            for listener, _ in self._listeners:
                await listener.aclose()

    async def serve(
        self, *, task_status: trio.TaskStatus[list[BoundRoute]] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Bind (if not yet done), report the bound routes through ``task_status``, serve.

        After `stop()` the listeners close at once and live connections get
        ``options.drain_timeout`` seconds to finish before they are cut; the tap then decodes
        whatever is left. Cancelling it instead cuts everything at once. Raises ListenError
        (before reporting started)."""
        await self.bind()
        if not self.start_time:
            self.start_time = trio.current_time()
        try:
            async with trio.open_nursery() as handlers:
                handlers.start_soon(self.tap_worker.run)
                with self._accepting:
                    async with trio.open_nursery() as acceptors:
                        for listener, route in self._listeners:
                            acceptors.start_soon(self._accept_loop, listener, route, handlers)
                        task_status.started(list(self.bound))
                # `stop()` was called: no new connections; the live ones get a deadline.
                await self._close_listeners()
                with trio.move_on_after(self.options.drain_timeout):
                    await self._all_closed.wait()
                handlers.cancel_scope.cancel()
        finally:
            await self._close_listeners()
            self.tap_worker.drain_now()

    def stop(self) -> None:
        """Stop accepting at once; connections still open get ``options.drain_timeout``
        seconds to finish, then `serve` cuts them and returns."""
        self._accepting.cancel()

    async def _accept_loop(self, listener: Listener, route: Route, handlers: trio.Nursery) -> None:
        while True:
            try:
                client = await listener.listener.accept()
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    await trio.sleep(0.1)  # out of descriptors: back off, keep serving
                    continue
                raise
            handlers.start_soon(self._handle, client, route)

    async def _handle(self, client: trio.SocketStream, route: Route) -> None:
        conn = _Connection(next(self._ids), route, client)
        self._live.add(conn.conn)
        self._all_closed = trio.Event() if self._all_closed.is_set() else self._all_closed
        self.publish(
            ConnectionOpened(
                conn.conn, route.name, _peer_name(client), str(route.upstream), self.now()
            )
        )
        try:
            with trio.move_on_after(self.options.connect_timeout):
                try:
                    conn.upstream = await connect(route.upstream)
                except OSError as exc:
                    conn.note(f"upstream {route.upstream} unreachable: {exc.strerror or exc}", True)
            if conn.upstream is None:
                conn.note(f"upstream {route.upstream} did not answer in time", True)
                conn.reset.add("client")
                return
            await self._relay(conn)
        finally:
            await self._finish(conn)

    async def _relay(self, conn: _Connection) -> None:
        assert conn.upstream is not None
        tap = ConnectionTap(
            conn.conn,
            conn.route.name,
            self.profile,
            self.publish,
            catalogue=self.options.catalogue,
            redactor=self.redactor,
            cap=self.options.cap,
        )
        conn.last_activity = trio.current_time()
        pump = self._pump
        plan = self.options.faults
        if plan is not None and plan.applies_to(conn.route.name):
            faults = plan.connection(conn.conn, conn.route.name, self.profile)
            pump = FaultRelay(self, conn, tap, faults).pump
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump, conn, tap, Direction.C2S, nursery.cancel_scope)
            nursery.start_soon(pump, conn, tap, Direction.S2C, nursery.cancel_scope)
            if self.options.idle_timeout is not None:
                nursery.start_soon(self._idle_watch, conn, nursery.cancel_scope)
        # A direction that ended without EOF (reset, cancel) still ends for the decoder, so a
        # frame cut in half is reported as truncated.
        for direction, ended in conn.eof.items():
            if not ended:
                with trio.CancelScope(shield=True):
                    await self.tap_worker.submit(tap, direction, b"", self.now())

    async def _pump(
        self,
        conn: _Connection,
        tap: ConnectionTap,
        direction: Direction,
        scope: trio.CancelScope,
    ) -> None:
        assert conn.upstream is not None
        if direction is Direction.C2S:
            source, sink, source_name, sink_name = conn.client, conn.upstream, "client", "upstream"
        else:
            source, sink, source_name, sink_name = conn.upstream, conn.client, "upstream", "client"
        src = source.socket.fileno()
        dst = sink.socket
        enforce = self.options.enforce_limits
        streak = streak_bytes = 0
        size = RECV_SIZE
        while True:
            # Plain os.read/os.write on the non-blocking sockets, waiting only when the kernel
            # says so: a chunk costs one scheduler round, not the three of trio's socket
            # methods (each of which checkpoints on success too).
            try:
                chunk = os.read(src, size)
            except BlockingIOError:
                streak = streak_bytes = 0
                size = RECV_SIZE
                await trio.lowlevel.wait_readable(src)
                continue
            except OSError as exc:
                conn.note(f"{source_name} reset the connection ({exc.strerror or exc})", True)
                conn.reset.add(sink_name)
                scope.cancel()
                return
            now = trio.current_time()
            conn.last_activity = now
            if not chunk:
                conn.eof[direction] = True
                await self.tap_worker.submit(tap, direction, b"", now - self.start_time)
                if not conn.reason and not conn.eof[_other(direction)]:
                    conn.note(f"{source_name} closed")
                with contextlib.suppress(OSError):
                    dst.shutdown(trio.socket.SHUT_WR)
                if conn.eof[_other(direction)]:
                    scope.cancel()
                return
            size = RECV_SIZE_BULK if len(chunk) == size else RECV_SIZE
            t = now - self.start_time
            if enforce:
                verdict = tap.process(direction, chunk, t)
                if verdict is not None:
                    conn.note(f"closed by --enforce-limits: {verdict.reason}", True)
                    scope.cancel()
                    return
            try:
                await write_all(dst.fileno(), chunk)
            except OSError as exc:
                conn.note(f"{sink_name} went away ({exc.strerror or exc})", True)
                conn.reset.add(source_name)
                scope.cancel()
                return
            conn.bytes[direction] += len(chunk)
            if not enforce:
                await self.tap_worker.submit(tap, direction, chunk, t)
            streak += 1
            streak_bytes += len(chunk)
            if streak >= _MAX_STREAK or streak_bytes >= _MAX_STREAK_BYTES:
                # Data keeps coming: let other connections run too.
                streak = streak_bytes = 0
                await trio.lowlevel.checkpoint()

    async def _idle_watch(self, conn: _Connection, scope: trio.CancelScope) -> None:
        timeout = self.options.idle_timeout
        assert timeout is not None
        while True:
            deadline = conn.last_activity + timeout
            if trio.current_time() >= deadline:
                conn.note(f"idle for {timeout:g} s (--idle-timeout)", True)
                scope.cancel()
                return
            await trio.sleep_until(deadline)

    async def _finish(self, conn: _Connection) -> None:
        for name, stream in (("client", conn.client), ("upstream", conn.upstream)):
            if stream is None:
                continue
            if name in conn.reset:
                close_abortively(stream)
            else:
                stream.socket.close()
        if not conn.reason:
            conn.note("proxy shutting down", True)
        closed = ConnectionClosed(
            conn.conn,
            conn.route.name,
            conn.reason,
            self.now(),
            conn.bytes[Direction.C2S],
            conn.bytes[Direction.S2C],
            conn.abnormal,
        )
        self.tap_worker.submit_event(self.publish, closed)
        self._live.discard(conn.conn)
        if not self._live:
            self._all_closed.set()


def _other(direction: Direction) -> Direction:
    return Direction.S2C if direction is Direction.C2S else Direction.C2S


def _peer_name(stream: trio.SocketStream) -> str:
    try:
        peer = stream.socket.getpeername()
    except OSError:
        return "?"
    if isinstance(peer, tuple):
        return f"{peer[0]}:{peer[1]}"
    if peer:
        return f"unix:{peer}"
    # A Unix client socket has no name; the peer's process id is what tells two clients (the
    # CLI and the MCP server, say) apart, where the OS reports it (Linux SO_PEERCRED).
    peercred = getattr(trio.socket, "SO_PEERCRED", None)
    if peercred is None:
        return "unix"
    try:
        pid, _, _ = struct.unpack(
            "3i", stream.socket.getsockopt(trio.socket.SOL_SOCKET, peercred, struct.calcsize("3i"))
        )
    except OSError:
        return "unix"
    return f"unix:pid={pid}"
