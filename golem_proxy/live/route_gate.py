"""A route's listener, closed while its upstream refuses connections and reopened when it
answers again.

A proxy that accepts every connection and then resets it, because the server behind it is
down, turns one failed call of a reconnecting client into a storm: the GOLEM client takes a
reset for a broken connection and reconnects, three times at each level of a recursion, and
makes 132 to 217 connections in 0.17 s where, direct, it fails once. So, as soon as an
upstream refuses, the route stops listening (the client is refused, as it would be direct),
the upstream is probed every `PROBE_INTERVAL`, and the same address listens again once it
answers. Each change is published once as an `UpstreamStatus` event (logged and recorded).
"""

from __future__ import annotations

import errno
from collections.abc import Awaitable, Callable
from typing import Optional

import trio

from ..events import Event, UpstreamStatus
from ..net.addresses import Address, Route
from ..net.listeners import Listener, ListenError, connect_reason, open_listener, probe

__all__ = ["PROBE_INTERVAL", "RouteGate", "is_refusal"]

PROBE_INTERVAL = 0.1
"""How often a route whose upstream is down tries it again, in seconds."""
PROBE_TIMEOUT = 1.0
"""How long one probe may wait for the upstream to accept."""

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
    ) -> None:
        self.route = route
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

    def _status(self, *, up: bool, detail: str) -> None:
        """Publish the upstream's state as this route sees it now."""
        self.publish(UpstreamStatus(route=self.route.name, t=self.now(), up=up, detail=detail))

    async def serve(self, handle: Handle, handlers: trio.Nursery) -> None:
        """Accept connections for ``handle`` (run in ``handlers``) until cancelled, closing
        the listener while the upstream is down (see `refused`)."""
        while True:
            self._accepting = trio.CancelScope()
            with self._accepting:
                # serve_listeners backs off on EMFILE/ENFILE/ENOMEM/ENOBUFS and keeps going.
                await trio.serve_listeners(
                    handle, [self.listener.listener], handler_nursery=handlers
                )
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
