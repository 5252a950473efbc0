"""A route's listener, closed while its upstream refuses connections and reopened when it
answers again.

A proxy that accepts every connection and then resets it, because the server behind it is
down, turns one failed call of a reconnecting client into a storm: the GOLEM client takes a
reset for a broken connection and reconnects, three times at each level of a recursion, and
makes 132 to 217 connections in 0.17 s where, direct, it fails once. So, as soon as an
upstream refuses, the route stops listening (the client is refused, as it would be direct),
the upstream is probed every `PROBE_INTERVAL`, and the same address listens again once it
answers. Each change is published once as an `UpstreamStatus` event (logged and recorded).

A connection the kernel completed waits in the listener's backlog until the gate's accept
loop takes it, and its open is published only once its handler starts. A client's connect
returns as soon as the kernel completes it, so an MCP server may connect and write its tool's
answer before the proxy has run the accept loop: `open_completed` lets the gates take what
their backlogs hold, and waits for those handlers to start, so that the stdio hop's bytes
read after the connection was made are handed on behind its open (the tool-call
attribution reads the two in that order: `ConnectionAttribution`).
"""

from __future__ import annotations

import errno
import select
from collections.abc import Awaitable, Callable, Sequence
from typing import Optional

import trio

from ..events import Event, UpstreamStatus
from ..net.addresses import Address, Route
from ..net.listeners import Listener, ListenError, connect_reason, open_listener, probe
from ..net.patient_listener import PatientListener
from ..net.shortage import Room
from .log_output import say

__all__ = ["OPEN_COMPLETED_WAIT", "PROBE_INTERVAL", "RouteGate", "is_refusal", "open_completed"]

PROBE_INTERVAL = 0.1
"""How often a route whose upstream is down tries it again, in seconds."""
PROBE_TIMEOUT = 1.0
"""How long one probe may wait for the upstream to accept."""
OPEN_COMPLETED_WAIT = 0.25
"""How long `open_completed` waits at most. Taking a connection off the backlog needs only
this process's own tasks to run, a few scheduling rounds; the bound is for an accept loop
that backs off (out of file descriptors), which must not hold up forwarding."""
_SPIN_ROUNDS = 16
"""Scheduling rounds `open_completed` yields for before it sleeps between looks."""
_BACKED_OFF_STEP = 0.005
"""Seconds between its looks after those rounds."""

# What a server that is not running answers: nothing listens on the port (TCP), or on the
# path (a stale socket file), or there is no socket file at all.
_REFUSALS = (errno.ECONNREFUSED, errno.ENOENT)


def is_refusal(exc: OSError) -> bool:
    """True when connecting failed because nothing listens there (not a timeout, not a
    resource shortage): the upstream is down."""
    return exc.errno in _REFUSALS


Handle = Callable[[trio.SocketStream], Awaitable[None]]


class RouteGate:
    """Serves one route's listener; see the module docstring. ``publish`` receives the
    `UpstreamStatus` events and ``now`` gives their session time."""

    def __init__(
        self,
        route: Route,
        listener: Listener,
        publish: Callable[[Event], None],
        now: Callable[[], float],
        *,
        allow_public: bool = False,
        probe_interval: float = PROBE_INTERVAL,
        room: Optional[Room] = None,
    ) -> None:
        self.route = route
        self.room = room
        """The process's descriptors, shared with its connects (shortage.py)."""
        self.listener = listener
        self.address: Address = listener.address
        """Where the route listens, the real port of a port-0 route included: reopened
        there."""
        self.publish = publish
        self.now = now
        self.allow_public = allow_public
        self.probe_interval = probe_interval
        self.down = False
        """True while the upstream refuses and the route does not listen."""
        self.listening = True
        self._accepting = trio.CancelScope()
        self._closed = trio.Event()
        self.accepted = 0
        """Connections taken off the listener's backlog."""
        self.handled = 0
        """Connections whose handler has started (and published their open)."""
        self._poller = select.poll()
        self._polled = -1
        self.stuck_at: Optional[int] = None
        """The count of connections accepted when a wait for the backlog ran out (the accept
        loop backs off: out of file descriptors): the backlog is not waited for again until
        the loop takes a connection, so that each chunk of the stdio hop does not wait anew."""

    def completed(self) -> bool:
        """A connection the kernel completed has not reached its handler yet: it waits in
        the listener's backlog, or was accepted and its handler has not started."""
        if self.accepted > self.handled:
            return True
        if not self.listening or self.stuck_at == self.accepted:
            return False
        # A listening socket polls readable while its backlog holds a connection. Asked for
        # every chunk of the stdio hop: the poller is made once for each listener's socket.
        fd = self.listener.listener.socket.fileno()
        if fd < 0:
            # Closed by the accept loop as it ended (trio.serve_listeners closes its
            # listeners), before the gate says so: its backlog went with it.
            return False
        if self._polled != fd:
            self._poller, self._polled = select.poll(), fd
            self._poller.register(fd, select.POLLIN)
        return bool(self._poller.poll(0))

    def _status(self, *, up: bool, detail: str) -> None:
        """Publish the upstream's state as this route sees it now."""
        self.publish(UpstreamStatus(route=self.route.name, t=self.now(), up=up, detail=detail))

    async def serve(self, handle: Handle, handlers: trio.Nursery) -> None:
        """Accept connections for ``handle`` (run in ``handlers``) until cancelled, closing
        the listener while the upstream is down (see `refused`)."""

        async def started(client: trio.SocketStream) -> None:
            # Counted in the handler's first step, which runs on to publish the open before
            # anything else runs (`open_completed` reads the count).
            self.handled += 1
            await handle(client)

        while True:
            self._accepting = trio.CancelScope()
            with self._accepting:
                # Out of file descriptors, it waits and says so in a line, not a traceback
                # a try (trio's serve_listeners logs one for every try, ten a second).
                where = f"route {self.route.name} ({self.address})"
                counted = PatientListener(_Counted(self, self.listener), where, say, room=self.room)
                await trio.serve_listeners(started, [counted], handler_nursery=handlers)
            await self.aclose()
            self._closed.set()
            await self._wait_for_upstream()
            await self._listen_again()
            self.down = False
            self._closed = trio.Event()
            self._status(
                up=True,
                detail=f"upstream {self.route.upstream} answers again: listening on "
                f"{self.address} again",
            )

    async def refused(self, exc: OSError) -> None:
        """The upstream refused a connection of this route (``exc`` says how): stop
        listening, once, and return when the listener is closed, so that the client of
        the refused connection, reset after this, finds the route refusing too."""
        if not self.down:
            self.down = True
            self._accepting.cancel()
            self._status(
                up=False,
                detail=f"upstream {self.route.upstream} refuses connections "
                f"({connect_reason(exc)}): not listening on {self.address} until it "
                f"answers (tried every {self.probe_interval:g} s)",
            )
        # Bounded: a stopping proxy cancels the loop that would say the listener closed.
        with trio.move_on_after(PROBE_TIMEOUT):
            await self._closed.wait()

    async def aclose(self) -> None:
        """Close the listener (and remove its Unix socket file), once."""
        if self.listening:
            self.listening = False
            with trio.CancelScope(shield=True):
                await self.listener.aclose()

    async def _wait_for_upstream(self) -> None:
        while await probe(self.route.upstream, PROBE_TIMEOUT) is not None:
            await trio.sleep(self.probe_interval)

    async def _listen_again(self) -> None:
        """Open the same address again; while it cannot be (another program took the port in
        the meantime), say so once and keep trying."""
        said: Optional[str] = None
        while True:
            try:
                self.listener = await open_listener(self.address, allow_public=self.allow_public)
            except ListenError as exc:
                if str(exc) != said:
                    said = str(exc)
                    self._status(
                        up=False,
                        detail=f"upstream {self.route.upstream} answers again, but {said}; "
                        "trying again",
                    )
                await trio.sleep(self.probe_interval)
                continue
            self.listening = True
            return


class _Counted(trio.abc.Listener[trio.SocketStream]):
    """A gate's listener, counting each connection it takes off the backlog in the step that
    takes it. trio's own accept, when a connection already waits, takes it and then yields:
    for that scheduling round the connection was in neither the backlog nor the count, and
    `open_completed` returned before its open (a connection made while the loop was busy
    handing on the one before, or before it first ran)."""

    def __init__(self, gate: RouteGate, listener: Listener) -> None:
        self.gate = gate
        self.listener = listener.listener
        self.raw = listener.raw

    async def accept(self) -> trio.SocketStream:
        """The next connection, as `trio.SocketListener.accept` gives it. Raises
        trio.ClosedResourceError once the listener is closed, and OSError on an error that
        is not the connection's own (EMFILE…: `PatientListener` waits those out)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            try:
                sock, _ = self.raw.accept()
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self.raw)
                continue
            except OSError as exc:
                if exc.errno == errno.EBADF:
                    raise trio.ClosedResourceError("the listener is closed") from None
                if exc.errno in _CONNECTION_ERRORS:
                    continue  # that connection's own failure: the listener goes on
                raise
            self.gate.accepted += 1
            # Counted: yielding now (as every accept must) leaves open_completed nothing to miss.
            await trio.lowlevel.cancel_shielded_checkpoint()
            return trio.SocketStream(trio.socket.from_stdlib_socket(sock))

    async def aclose(self) -> None:
        await self.listener.aclose()


# What accept(2) reports about the connection it would have taken, rather than the listener:
# Linux passes a pending network error of the new connection on as accept's, and a firewall
# may refuse it (EPERM); trio's SocketListener goes on past the same.
_CONNECTION_ERRORS = frozenset(
    getattr(errno, name)
    for name in (
        *("EPERM", "ECONNABORTED", "EPROTO", "ENETDOWN", "ENOPROTOOPT", "EHOSTDOWN"),
        *("ENONET", "EHOSTUNREACH", "EOPNOTSUPP", "ENETUNREACH", "ENOSR", "ETIMEDOUT"),
        *("ESOCKTNOSUPPORT", "EPROTONOSUPPORT", "ECONNRESET"),
    )
    if hasattr(errno, name)
)


async def open_completed(gates: Sequence[RouteGate], wait: float = OPEN_COMPLETED_WAIT) -> None:
    """Return once every connection the kernel completed on ``gates`` by now has had its
    handler started, its open published (at most ``wait`` seconds): what is handed on after
    this comes after those opens, as it came after those connects. A gate whose backlog
    outlasts the wait is not waited for again until its accept loop takes a connection
    (`RouteGate.stuck_at`)."""
    if not any(gate.completed() for gate in gates):
        return  # as a rule: no time spent beyond a poll of each listener
    with trio.move_on_after(wait):
        rounds = 0
        while any(gate.completed() for gate in gates):
            # A few scheduling rounds let the accept loop run; then it is backing off, and
            # spinning would take a core from it and from everything else.
            rounds += 1
            await trio.sleep(0 if rounds < _SPIN_ROUNDS else _BACKED_OFF_STEP)
        return
    for gate in gates:
        if gate.completed() and gate.accepted == gate.handled:
            gate.stuck_at = gate.accepted
