"""`mcp-verify`'s stand-in for the plugin: a `ReplayServer`'s routes served as the recording
says the plugin was reachable, call by call (`OutagePlan`).

Before each tool call is sent, `begin` sets every route as it was during that call when
recorded: its open connections closed when the recording had none open then (the plugin's
going away had closed them), the server's next connections accepted and reset when the
proxy reset them (the upstream refused them; reset once the server has written on them,
as its connect had returned when the proxy's reset came, and by the next step at the latest:
that reset was its call's), and the listener closed while the
route was down, so the server's attempts are refused by the system, as they were; and a
connection open then that the plugin had closed while it sat idle is reset, so that the
server's next write meets a reset, as it did; and where the plugin went away in the middle of
the call, owing it answers, the requests it left unanswered (matched as the replay engine
matches them) get none, and the connection's sending side ends once they came, so the server
reads the end of the stream; its later bytes there meet a reset, as the proxy refused them.
A connection the proxy closed for ``--idle-timeout`` before a call is closed as that call
begins (cleanly, as the proxy closed it), so the server's next write finds it closed.
Otherwise a connection is the replay server's to answer, an answer the recording marks late
held until mcp-verify has read its call's answer (`returned`, `late_hold`). A call made
during an outage so never takes a later recorded answer of its method, and the calls after
it get theirs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Optional

import trio

from ..live.log_output import say
from ..net.addresses import Address
from ..net.listeners import Listener, close_abortively, open_listener, reset_when_closed
from ..net.patient_listener import PatientListener
from .engine import Unanswered
from .index import Key
from .late_hold import LateHold
from .matching import canonical_params
from .mcp_script import ClientStep
from .outage_plan import NO_OUTAGE, OutagePlan, PluginEnd, RouteOutage
from .server import ReplayServer

__all__ = ["AppliedIdleClose", "AppliedOutage", "OutageStandIn"]

RESET_WITHIN = 1.0
"""How long a connection to be reset waits for the server's first bytes (GOLEM's client
speaks first; one that does not is reset after this)."""


@dataclass(frozen=True)
class AppliedOutage:
    """A tool call during which the stand-in played a route's outage."""

    index: int
    """The call's request frame index on the MCP hop (`ClientStep.index`)."""
    route: str
    outage: RouteOutage


@dataclass(frozen=True)
class AppliedIdleClose:
    """A tool call before which the stand-in closed a route's connections, as the proxy had
    closed them for ``--idle-timeout`` (`RouteOutage.idle_closed`)."""

    index: int
    """The call's request frame index on the MCP hop (`ClientStep.index`)."""
    route: str
    recorded: int
    """Connections the proxy closed so in the recording."""
    closed: int
    """Connections of the server's the stand-in had open, and closed."""


@dataclass
class _Route:
    name: str
    address: Address
    listening: Optional[trio.CancelScope] = None
    closed: trio.Event = field(default_factory=trio.Event)
    connections: dict[trio.CancelScope, tuple[trio.SocketStream, trio.Event]] = field(
        default_factory=dict
    )
    resets: int = 0
    refuse_after_resets: bool = False
    resetting: dict[trio.CancelScope, trio.Event] = field(default_factory=dict)
    """Connections accepted to be reset, waiting for the server's first bytes: each is
    reset by the task serving it once the scope is cancelled, the event set once it is."""
    ends: list[_End] = field(default_factory=list)
    """The plugin's ends during the current call, each until its requests all came."""


@dataclass
class _End:
    """A `PluginEnd` being played: the keys of its requests not received yet."""

    waiting: list[Key]
    reset_after: bool


class OutageStandIn:
    """Serves ``server`` on ``listen`` (route name → address), following ``plan``."""

    def __init__(
        self,
        server: ReplayServer,
        listen: Mapping[str, Address],
        plan: OutagePlan,
        late: Optional[LateHold] = None,
    ) -> None:
        self.server = server
        self.late = late if late is not None else LateHold({})
        self.listen = dict(listen)
        self.plan = plan
        self.applied: list[AppliedOutage] = []
        self.idle_closed: list[AppliedIdleClose] = []
        self._routes: dict[str, _Route] = {}
        self._accepting: Optional[trio.Nursery] = None
        self._handlers: Optional[trio.Nursery] = None

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Listen, report the bound addresses (route → Address) through ``task_status``, and
        serve until cancelled. Raises ListenError when a listener cannot be opened."""
        opened: list[tuple[str, Listener]] = []
        try:
            for name, address in self.listen.items():
                opened.append((name, await open_listener(address)))
        except BaseException:
            with trio.CancelScope(shield=True):
                for _, listener in opened:
                    await listener.aclose()
            raise
        async with trio.open_nursery() as handlers, trio.open_nursery() as accepting:
            self._handlers, self._accepting = handlers, accepting
            for name, listener in opened:
                route = self._routes[name] = _Route(name, listener.address)
                await accepting.start(self._serve, route, listener)
            task_status.started({name: route.address for name, route in self._routes.items()})

    async def begin(self, step: ClientStep) -> None:
        """Set the routes as they were when ``step`` was sent in the recording; for a step
        other than a tool call, only an unused count of resets is dropped. Raises
        ListenError when a route cannot listen again on its address."""
        if step.tool is not None:
            self.late.sending(step.index)
        plan = self.plan.for_step(step.index) if step.tool is not None else None
        for name, route in self._routes.items():
            # The proxy reset such a connection during the call that opened it, which has
            # been answered: the server must find it reset however it looks (a write, or a
            # pool's check of a kept connection before it reuses it), never in this step.
            await self._reset_waiting(route)
            route.ends = []  # an end whose requests did not come during its call is let go
            if plan is None:
                route.resets, route.refuse_after_resets = 0, False
                continue
            outage = plan.get(name, NO_OUTAGE)
            if outage.is_outage:
                self.applied.append(AppliedOutage(step.index, name, outage))
            if outage.idle_closed:
                open_now = len(route.connections)
                self.idle_closed.append(
                    AppliedIdleClose(step.index, name, outage.idle_closed, open_now)
                )
            if outage.drop_open or outage.reset_open or outage.idle_closed:
                await self._drop_connections(route, reset=outage.reset_open)
            route.ends = [self._end(name, end) for end in outage.ends]
            route.resets, route.refuse_after_resets = outage.resets, outage.refused
            if outage.refused and not outage.resets:
                await self._stop_listening(route)
            else:
                await self._listen(route)

    async def returned(self, step: ClientStep) -> None:
        """mcp-verify has read the server's answer to ``step``: the late answers held for
        it go (`LateHold.returned`), before the next step is sent."""
        if step.tool is not None:
            await self.late.returned(step.index)

    def _end(self, route: str, end: PluginEnd) -> _End:
        keys = [self._key(route, payload, live=False) for payload in end.requests]
        return _End([key for key in keys if key is not None], end.reset_after)

    def _key(self, route: str, payload: bytes, *, live: bool = True) -> Optional[Key]:
        """A request's key as the replay engine keys it (a ``live`` one's GUIDs mapped back to
        the recorded ones); None for a payload that is no request."""
        method, params = canonical_params(payload)
        if method is None:
            return None
        engine = self.server.engine
        return engine.index.key(route, method, params, engine.guids if live else None)

    def _unanswered(self, route: _Route, payload: bytes) -> Optional[Unanswered]:
        """What the plugin did with this request, where it went away owing its answer: no
        answer, and the end of its side once the last request it owed came."""
        if not route.ends:
            return None
        key = self._key(route.name, payload)
        for end in route.ends:
            if key in end.waiting:
                end.waiting.remove(key)
                if end.waiting:
                    return Unanswered()
                route.ends.remove(end)
                return Unanswered(end=True, reset_after=end.reset_after)
        return None

    async def _serve(
        self, route: _Route, listener: Listener, *, task_status: Any = trio.TASK_STATUS_IGNORED
    ) -> None:
        assert self._handlers is not None
        closed = trio.Event()
        try:
            with trio.CancelScope() as scope:
                route.listening, route.closed = scope, closed
                task_status.started()
                await trio.serve_listeners(
                    partial(self._handle, route),
                    [
                        PatientListener(
                            listener.listener, f"route {route.name} ({route.address})", say
                        )
                    ],
                    handler_nursery=self._handlers,
                )
        finally:
            # Closed by the task that accepts on it: never under a pending accept.
            with trio.CancelScope(shield=True):
                await listener.aclose()
            closed.set()

    async def _listen(self, route: _Route) -> None:
        if route.listening is not None:
            return
        assert self._accepting is not None
        listener = await open_listener(route.address)
        await self._accepting.start(self._serve, route, listener)

    async def _stop_listening(self, route: _Route) -> None:
        scope, route.listening = route.listening, None
        if scope is not None:
            scope.cancel()
            await route.closed.wait()

    async def _reset_waiting(self, route: _Route) -> None:
        """Reset the route's connections still waiting for the server's first bytes, and
        return once they are reset."""
        for scope in route.resetting:
            scope.cancel()
        for done in list(route.resetting.values()):
            await done.wait()

    async def _drop_connections(self, route: _Route, *, reset: bool = False) -> None:
        """Close the route's connections (``reset``: with a reset, as the proxy answered the
        server's next bytes on a connection the plugin had left), and return once they are
        closed: the server must find them closed when its next request comes."""
        for scope, (stream, _) in route.connections.items():
            if reset:
                reset_when_closed(stream)  # the task serving it closes it, with a reset
            scope.cancel()
        for _, done in list(route.connections.values()):
            await done.wait()

    async def _handle(self, route: _Route, stream: trio.SocketStream) -> None:
        if route.resets:
            route.resets -= 1
            if not route.resets and route.refuse_after_resets:
                # Closed before this one is reset, as the proxy does: a reconnect is refused.
                await self._stop_listening(route)
            scope, done = trio.CancelScope(), trio.Event()
            route.resetting[scope] = done
            try:
                with scope:
                    await _first_bytes(stream)
            finally:
                del route.resetting[scope]
                close_abortively(stream)
                done.set()
            return
        done = trio.Event()
        with trio.CancelScope() as scope:
            route.connections[scope] = (stream, done)
            try:
                overlay = partial(self._unanswered, route)
                hold = self.late.hold if self.late else None
                await self.server.serve_connection(route.name, stream, overlay, hold)
            finally:
                del route.connections[scope]
                done.set()


async def _first_bytes(stream: trio.SocketStream) -> None:
    """Return once the server has written on ``stream`` (or closed it), or `RESET_WITHIN`
    has passed (cancelled sooner as the next step begins: `OutageStandIn.begin`). The
    proxy reset such a connection once the upstream had refused it, a millisecond or more
    after accepting it, as a rule after the server's connect had returned: its first
    exchange met the reset. Reset on accepting, the reset raced the server's connect, and
    a server that words the two failures apart (GOLEM-3DMCP: ``Cannot connect to Rhino
    plugin at …`` or ``Connected to … but ping handshake failed``) said one or the other
    from run to run."""
    with trio.move_on_after(RESET_WITHIN), contextlib.suppress(trio.BrokenResourceError):
        await stream.receive_some(1)
