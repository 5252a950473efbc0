"""Forwarding one connection of the relay (relay.py): both directions pumped until it ends
(`pump_both`), each by the plain pump (`PlainPump`) or by a route's frame-by-frame one
(fault_relay.py), and a connection idle too long cut (`idle_watch`).

The plain pump is byte-exact and comes first: it reads a chunk and writes it straight to the
other socket, then hands the same chunk to the observer, which never makes it wait
(observer.py). Observed in a process of its own, a large frame's body from the server goes by
the kernel's way instead (body_splice.py), with the same outcome. Nothing is decoded or
re-encoded on this path (with ``enforce_limits`` a tap of its own checks a chunk before it is
sent, `enforce_limits.stopped_by_limits`). How a connection ends, half-closes and resets included,
is `Connection`'s job, shared with the faulted pumps.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Optional

import trio

from golem_core.framing import Framing

from ..events import Direction
from .body_splice import ENDED, READ_INSTEAD, BodySplicer, body_splicer
from .chunks import RECV_SIZE_BULK, ChunkReader
from .connection import Connection
from .enforce_limits import stopped_by_limits

__all__ = ["PlainPump", "Pump", "idle_watch", "pump_both"]

Pump = Callable[[Connection, Direction, trio.CancelScope], Awaitable[None]]

_MAX_STREAK = 16
_MAX_STREAK_BYTES = RECV_SIZE_BULK
"""A pump that keeps finding data yields after this many chunks or bytes (fairness)."""


async def pump_both(
    conn: Connection, pump: Pump, now: Callable[[], float], idle_timeout: Optional[float]
) -> None:
    """Forward both directions until the connection ends; then end, for the observer, a
    direction that ended without EOF."""
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump, conn, Direction.C2S, nursery.cancel_scope)
            nursery.start_soon(pump, conn, Direction.S2C, nursery.cancel_scope)
            if idle_timeout is not None:
                nursery.start_soon(idle_watch, conn, idle_timeout, nursery.cancel_scope)
    finally:
        # Cancelled from outside, not by the pumps' own scope (gone with the nursery): the
        # proxy's stop, whatever ended a side before it (a client's half-close).
        stopped = trio.current_effective_deadline() == -math.inf
        # A direction that ended without EOF, its source not reset either, was ended by the
        # proxy: a frame it cuts is the proxy's doing, not its sender's (`ended_by_proxy`).
        # Said also when the proxy's stop cancels this (the close then ends the streams).
        for direction, ended in conn.eof.items():
            how = "" if ended else conn.ended_by_proxy(direction, stopped)
            if how:
                conn.mark_cut(direction, now(), how)
    # A direction that ended without EOF (reset, cancel) still ends for the decoder, so a
    # frame cut in half is reported as truncated.
    for direction, ended in conn.eof.items():
        if not ended:
            conn.observe(direction, b"", now())


class PlainPump:
    """Forwards a direction of a connection as its bytes come: no fault, no interception."""

    def __init__(
        self, start_time: float, enforce_limits: bool, framing: Optional[Framing] = None
    ) -> None:
        self.start_time = start_time
        """The session's start (`trio.current_time`): a chunk's ``t`` counts from it."""
        self.enforce_limits = enforce_limits
        """Each chunk is checked before it is sent, and a broken limit closes the connection."""
        self.framing = framing
        """The route's framing, given where a large frame's body may be moved by the kernel
        (body_splice.py: observed in a process of its own, nothing checked before it goes)."""

    async def pump(self, conn: Connection, direction: Direction, scope: trio.CancelScope) -> None:
        """Forward ``direction`` of ``conn`` until it ends, a side fails, or ``scope`` is
        cancelled."""
        splicer = None
        if self.framing is not None and not self.enforce_limits:
            splicer = body_splicer(conn, direction, self.framing)
        try:
            await self._pump(conn, direction, scope, splicer)
        finally:
            if splicer is not None:
                splicer.close()

    async def _pump(
        self,
        conn: Connection,
        direction: Direction,
        scope: trio.CancelScope,
        splicer: Optional[BodySplicer],
    ) -> None:
        source = conn.sides(direction)[0].socket.fileno()
        reader = ChunkReader(source)
        enforce = self.enforce_limits
        from_client = direction is Direction.C2S
        if from_client:
            conn.client_reader = reader
        streak = streak_bytes = 0
        while True:
            moved = READ_INSTEAD
            if splicer is not None and (wanted := splicer.wanted()):
                moved = await splicer.move(wanted, self.start_time, scope)
                if moved == ENDED:
                    return
            if moved == READ_INSTEAD:
                try:
                    chunk = reader.read_ready()
                except OSError as exc:
                    conn.source_failed(direction, exc, scope)
                    return
                if chunk is None:
                    streak = streak_bytes = 0
                    await reader.wait()
                    continue
                now = trio.current_time()
                conn.last_activity = now
                t = now - self.start_time
                if not chunk:
                    conn.end_of_stream(direction, t, scope)
                    return
                if enforce and stopped_by_limits(conn, direction, chunk, t, scope):
                    return
                if splicer is not None:
                    splicer.saw(chunk)
                # Observed as it goes; what never goes (a write that failed, or one an upstream
                # that had closed refused with a reset) is handed on undelivered.
                if not await conn.forward(direction, chunk, t, scope):
                    return
                moved = len(chunk)
            conn.awaiting_reply = from_client
            if conn.link is not None and conn.link.holds(conn.conn):
                await conn.link.until_caught_up(conn.conn)  # the recording trails on it
            streak += 1
            streak_bytes += moved
            if streak >= _MAX_STREAK or streak_bytes >= _MAX_STREAK_BYTES:
                # Data keeps coming: let other connections run too.
                streak = streak_bytes = 0
                await trio.lowlevel.checkpoint()


async def idle_watch(conn: Connection, timeout: float, scope: trio.CancelScope) -> None:
    """Cut ``conn`` (cancel ``scope``) once nothing crossed it for ``timeout`` seconds, none of
    them while the proxy itself held one of its frames (an interception waiting for the
    user, a delay): that wait is the proxy's, not an idle peer's."""
    while True:
        deadline = conn.last_activity + timeout
        if conn.holding:
            await trio.sleep(timeout)  # counted again from the frame's release
            continue
        if trio.current_time() >= deadline:
            idle = f"idle for {timeout:g} s (--idle-timeout)"
            if conn.reason and not conn.eof[Direction.S2C]:
                # The client's half-close came first, the upstream still sending: the close
                # cuts that, and says both. (An upstream that closed first ended it; its
                # close, held from an idle client, stays the reason: idle_fin.py.)
                conn.add_to_reason(idle)
                conn.abnormal = True
            conn.note(idle, True)
            scope.cancel()
            return
        await trio.sleep_until(deadline)
