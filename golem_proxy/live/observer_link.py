"""The forwarding side's end of observation in a process of its own (``--observer
child-process``): every forwarded chunk and every event of the relay go to the observing
process as handoff records (handoff.py), written without ever waiting.

Chunks are ``DATA`` records; while the pipe is full they wait, up to `BACKLOG` bytes, and
past that they are counted and a ``LOST`` record says how many once there is room (the
observing side records the gap). Events are pickled into
``OPENED``, ``CLOSED`` and ``EVENT`` records, which wait for room in order and are never
dropped: both ends are the same program, started together, so pickle is the event's
description on the pipe. Once the observing process is gone, nothing is handed on and
forwarding goes on alone.
"""

from __future__ import annotations

import pickle

import trio

from ..events import ConnectionClosed, ConnectionOpened, Direction, Event
from .handoff import HandoffWriter, Kind

__all__ = ["BACKLOG", "PIPE_DIRECTIONS", "ObserverLink", "direction_number"]

BACKLOG = 64 * 1024 * 1024
"""Forwarded bytes that may wait here for room in the pipe (the chunks themselves, no copy)
while the observing process is busy with one large frame (a 16 MiB answer is parsed in one
go): beyond it, bytes are counted as lost and the gap recorded."""


PIPE_DIRECTIONS = (Direction.C2S, Direction.S2C)
"""A direction by its number on the pipe (`direction_number`)."""


def direction_number(direction: Direction) -> int:
    """A direction on the pipe: 0 client to server, 1 back."""
    return 0 if direction is Direction.C2S else 1


class ObserverLink:
    """Hands the relay's bytes and events to the observing process through the pipe ``fd``.
    Never blocks and never raises; `keep_flushing` writes what waited for room."""

    def __init__(self, fd: int, backlog: int = BACKLOG) -> None:
        self.writer = HandoffWriter(fd, backlog)
        self.stopped = False
        """Observation stopped (the observing process is gone): nothing is handed on."""
        self._room_wanted = trio.Event()

    @property
    def gone(self) -> bool:
        """The observing side closed its end (the process died), or `stop` was called."""
        return self.stopped or self.writer.gone

    def data(self, conn: int, direction: Direction, data: bytes, t: float) -> None:
        """A forwarded chunk of ``conn`` (``b""``: that direction ended)."""
        if self.stopped:
            return
        if data:
            self.writer.data(conn, direction_number(direction), t, data)
        else:
            self.writer.event(Kind.END, conn, direction_number(direction), t)
        if self.writer.waiting:
            self._room_wanted.set()

    def publish(self, event: Event) -> None:
        """An event of the relay (a connection opened or closed, an upstream down or back)."""
        if self.stopped:
            return
        if isinstance(event, ConnectionOpened):
            kind, conn = Kind.OPENED, event.conn
        elif isinstance(event, ConnectionClosed):
            kind, conn = Kind.CLOSED, event.conn
        else:
            kind, conn = Kind.EVENT, 0
        self.writer.event(kind, conn, 0, event.t, pickle.dumps(event, pickle.HIGHEST_PROTOCOL))
        if self.writer.waiting:
            self._room_wanted.set()

    def stop(self) -> None:
        """Hand nothing on any more (the observing process is gone)."""
        self.stopped = True
        self._room_wanted.set()

    async def keep_flushing(self) -> None:
        """Until cancelled: when records wait for room, write them as the pipe takes them."""
        while not self.gone:
            if not self.writer.waiting:
                await self._room_wanted.wait()
                self._room_wanted = trio.Event()
                continue
            await trio.lowlevel.wait_writable(self.writer.fd)
            self.writer.flush()

    async def flush_within(self, seconds: float) -> bool:
        """Write what waits, for at most ``seconds`` (at a stop); True when nothing waits."""
        with trio.move_on_after(seconds):
            while self.writer.waiting:
                await trio.lowlevel.wait_writable(self.writer.fd)
                self.writer.flush()
        return not self.writer.waiting
