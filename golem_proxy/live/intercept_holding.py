"""A frame ``--intercept`` holds on a faulted or intercepted route (fault_relay.py): the steps
the engine announces while it holds it, and its loss when the client goes away meanwhile. A
request held and lost is recorded all the same, though never forwarded (its flow needs it); a
response lost is recorded undelivered before its step is said; a client that resets or closes
while a frame is held ends the connection at once (docs/intercept.md). While a request is held,
what the client sends behind it is read on as it comes (read_on.py), so that it keeps the time
it was sent."""

from __future__ import annotations

from typing import Callable, Optional

import trio

from golem_core.framing import Frame

from ..events import Direction, InterceptKind
from .action_events import ActionEvents
from .connection import Connection
from .intercept import ConnectionIntercept, HeldFrame
from .intercept_decisions import Ruling
from .peer_state import until_peer_gone
from .read_on import ReadOn
from .unsent import Unsent

__all__ = ["InterceptHolding"]


class InterceptHolding:
    """Mixed into `FaultRelay`, whose connection, writers' locks and held frame these use."""

    conn: Connection
    intercept: Optional[ConnectionIntercept]
    locks: dict[Direction, trio.Lock]
    scope: trio.CancelScope
    unsent: Unsent
    actions: ActionEvents
    now: Callable[[], float]
    _held_request: Optional[tuple[Frame, float]]
    _held_recorded: bool
    _lost_response: Optional[tuple[str, Optional[str]]]
    read_on: ReadOn

    def _announce_held(self, held: HeldFrame, kind: InterceptKind, detail: str) -> None:
        withheld = False
        if kind is InterceptKind.LOST and held.direction is Direction.C2S:
            self._record_held()  # first: the step lands on the flow of the frame it lost
            # Recorded though never forwarded, it is `withheld`, as a dropped request is:
            # what the plugin received is rebuilt without it.
            withheld = self._held_recorded
        elif kind is InterceptKind.LOST:
            # The server's answer, read and never sent on: recorded (`_frame`, under its
            # writer's lock) before the step is said, so that the step lands on its flow.
            self._lost_response = (detail, held.method)
            return
        self.actions.step(
            held.direction, kind, detail, held.method, withheld, message_id=held.message.id
        )

    def _said(
        self,
        direction: Direction,
        kind: InterceptKind,
        detail: str,
        method: Optional[str],
        ruling: Optional[Ruling] = None,
    ) -> None:
        """Publish the step that decided (or lost) the frame of ``direction`` held last,
        with the id of its message as the intercept read it (`ProxyAction.message_id`)."""
        typed = self.intercept.typed[direction] if self.intercept is not None else None
        withheld = ruling is not None and ruling.withheld
        ident = None if typed is None else typed.id
        self.actions.step(direction, kind, detail, method, withheld, ruling, ident)

    def _record_held(self) -> None:
        """Record the request held now, though never forwarded, as a dropped request is (its
        bytes do not count as forwarded): before the end of the client's stream, which the
        tap must see after every frame the client sent. Once."""
        if self._held_request is None or self._held_recorded:
            return
        frame, t = self._held_request
        self._held_recorded = True
        self.conn.observe(Direction.C2S, frame.raw, t, frame)

    # A client that goes away while its frame is held.
    def _holding_response(self, direction: Direction) -> bool:
        return (
            direction is Direction.C2S
            and self.intercept is not None
            and self.intercept.holding(Direction.S2C)
        )

    def _mark_gone(self, why: str) -> None:
        if self.intercept is not None and self.intercept.gone is None:
            self.intercept.gone = why

    async def _client_closed(self) -> None:
        """The client closed while a frame was held for or from it: record its end of stream
        and end the connection (the upstream gets a clean FIN), so the frame is lost."""
        conn = self.conn
        self._mark_gone("the client closed the connection")
        async with self.locks[Direction.C2S]:
            self._record_held()
            self.unsent.record_behind(Direction.C2S)  # before the end of stream, as sent
            conn.eof[Direction.C2S] = True
            conn.observe(Direction.C2S, b"", self.now())
        conn.note("client closed while a frame was held", True)
        self.scope.cancel()

    async def _watch_client(self) -> None:
        """While a request is held: read on what the client sends behind it, for its pump to
        go through once the request went on (`ReadOn`), and end the connection the moment the
        client resets or closes. Past what it reads on, only peeks, so the bytes the client
        sends stay for the pump."""
        read_on = self.read_on
        end = await read_on.until_end(keep_end=False)
        if end is None and read_on.ended:  # read on behind an earlier hold, not met yet
            end = read_on.end_read()
        reset: Optional[OSError]
        if end is None:  # as much as it reads on: the rest stays in the kernel meanwhile
            reset = await until_peer_gone(self.conn.client.socket)
        else:
            reset = end if isinstance(end, OSError) else None
        if reset is None:
            await self._client_closed()
            return
        self._mark_gone("the client reset the connection")
        self.conn.source_failed(Direction.C2S, reset, self.scope)
