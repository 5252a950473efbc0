"""Forwarding a large frame's body without it entering the forwarding process (issue 25: a
16 MiB viewport capture at the speed of a bare relay).

On a plain route observed in a process of its own, with length-prefixed framing, the plain pump
(pumps.py) reads what the server sends as usual until a frame's header says that at least
`SPLICE_FROM` bytes of its body are still to come. Those bytes, and only those (never the next
frame's header), are then moved by the kernel (kernel_pipes.py): spliced from the source socket
into a pipe, duplicated by ``tee`` into a second pipe, spliced on to the receiver, and, for each
piece the receiver took, spliced from the duplicate into the handoff pipe as that piece's
``DATA`` record (`ObserverLink.data_from_pipe`). So the observing process reads the same
records, in the same order, as when the bytes are copied, and a piece is handed on only once it
was delivered, as `Connection.forward` hands on a chunk. To a spool the duplicate goes first,
whole, before the receiver is given any of it (`ObserverLink.hands_on_first`: a ``kill -9``
between the two must not lose bytes the receiver has), and what the receiver then did not take
is said after it (`Connection.not_delivered`); the same calls, in another order, no copy.

Whatever the kernel way cannot do goes the copy way, with the same outcome: the duplicate failed
(the bytes are taken out of the pipe and forwarded as a chunk), the link cannot take bytes
unseen now (the connection sheds, observation stopped or waits for a boundary after a restart:
`ObserverLink.takes_unseen`), or the pipes could not be made (too many descriptors, or the
user's pipe budget spent: a pipe smaller than `SPLICE_FROM`). While the handoff pipe is full,
the pieces wait in pipes too (pipe_backlog.py), not in memory. What the receiver did not take
when it went away, or when the connection ended meanwhile, is taken out of the pipe and handed
on undelivered (`Connection.observe_undelivered`), as `Connection.forward_rest` does.
"""

from __future__ import annotations

from typing import Optional

import trio

from golem_core.boundaries import FrameBoundaries
from golem_core.decoders import Chunk
from golem_core.framing import Framing

from ..events import Direction
from . import kernel_pipes
from .connection import Connection

__all__ = ["ENDED", "READ_INSTEAD", "SPLICE_FROM", "BodySplicer", "body_splicer"]

SPLICE_FROM = 128 * 1024
"""The least of a frame's body still to come that is moved by the kernel: below it, the copy
costs less than the calls the kernel way makes."""

ENDED = -1
"""`BodySplicer.move`: the direction ended (or the connection)."""
READ_INSTEAD = -2
"""`BodySplicer.move`: nothing moved, and the next read goes the copy way."""


def body_splicer(conn: Connection, direction: Direction, framing: Framing) -> Optional[BodySplicer]:
    """The splicer for ``direction`` of ``conn``, or None where the kernel way does not apply:
    bytes not handed to an observing process (``conn.link``), framing by lines (a frame's
    end is known only by looking at every byte), a system without ``splice`` and ``tee``, or
    what clients send: the answers are what is large (a viewport capture), and 64 clients
    each sending a 64 MiB frame went through at a quarter of the copy way's rate with it (not
    understood yet; docs/architecture.md)."""
    if conn.link is None or framing is not Framing.LENGTH_PREFIXED or not kernel_pipes.available():
        return None
    if direction is Direction.C2S:
        return None
    return BodySplicer(conn, direction, framing)


class BodySplicer:
    """One direction of a connection: follows the frames the pump reads (`saw`), says when a
    body is worth moving by the kernel (`wanted`), and moves it (`move`)."""

    def __init__(self, conn: Connection, direction: Direction, framing: Framing) -> None:
        assert conn.link is not None
        self.conn = conn
        self.direction = direction
        self.bounds = FrameBoundaries(framing) if conn.link.connections is None else None
        """The direction's frames, followed here only where the link does not follow them
        already (for a restart: `ObserverLink.takes_unseen` then says how much of a body is
        known to be still to come), so that the forwarding path reads each header once."""
        self.pipes: Optional[kernel_pipes.PipePair] = None
        self.seen = 0
        """Bytes of the direction forwarded so far, either way."""
        self.no_pipes_until = 0
        """Where the body ends (in `seen`'s count) for which the pipes could not be made (the
        user's pipe budget spent, say): the copy way until then, the kernel's way tried again
        for the next body."""

    def saw(self, chunk: Chunk) -> None:
        """A chunk the pump read and forwarded the copy way."""
        if self.bounds is not None:
            self.bounds.feed(chunk)
        self.seen += len(chunk)

    def wanted(self) -> int:
        """Bytes to move by the kernel now (0: read the next chunk the copy way)."""
        link = self.conn.link
        assert link is not None
        left = link.takes_unseen(self.conn.conn, self.direction)
        if self.bounds is not None:
            left = min(left, self.bounds.body_left)
        if left < SPLICE_FROM:
            # Until the next large body, or while the link cannot take one (observation
            # stopped, say): pipes count against the user's budget.
            self.close()
            return 0
        if self.seen + left == self.no_pipes_until:
            return 0
        if self.pipes is None:
            try:
                self.pipes = kernel_pipes.PipePair(kernel_pipes.PIPE_SIZE)
            except OSError:
                self.no_pipes_until = self.seen + left
                return 0
            if self.pipes.size < SPLICE_FROM:  # the user's pipe budget is spent
                self.close()
                self.no_pipes_until = self.seen + left
                return 0
        return min(left, self.pipes.size)

    async def move(self, size: int, start_time: float, scope: trio.CancelScope) -> int:
        """Move up to ``size`` bytes (`wanted`) from the source to the receiver, handing each
        piece on as it is delivered. Returns how many moved, `ENDED` when the direction or the
        connection ended, or `READ_INSTEAD`: nothing moved, read the copy way (which waits
        when the source has nothing yet)."""
        pipes, conn, direction = self.pipes, self.conn, self.direction
        assert pipes is not None
        source = conn.sides(direction)[0].socket.fileno()
        try:
            moved = kernel_pipes.splice(source, pipes.wire[1], size)
        except BlockingIOError:
            moved = 0
        except OSError as exc:
            conn.source_failed(direction, exc, scope)
            return ENDED
        if not moved:
            # Nothing yet, an end of stream, or TCP's urgent mark, where splice stops (and says
            # "nothing yet" while the socket polls readable): the copy way's read tells them
            # apart, and skips the urgent byte as it does without the kernel's way.
            return READ_INSTEAD
        now = trio.current_time()
        conn.last_activity = now
        t = now - start_time
        if self.bounds is not None:
            self.bounds.skip(moved)
        self.seen += moved
        if not self._duplicated(moved):
            # The copy way for these bytes: out of the pipe, forwarded as a chunk.
            chunk = kernel_pipes.drain(pipes.wire[0], moved)
            return moved if await conn.forward(direction, chunk, t, scope) else ENDED
        return moved if await self._deliver(moved, t, scope) else ENDED

    def _duplicated(self, size: int) -> bool:
        """Whether the pipe's ``size`` bytes were duplicated whole into the copy pipe (which
        is empty again when they were not)."""
        assert self.pipes is not None
        wire, copy = self.pipes.wire[0], self.pipes.copy[1]
        try:
            teed = kernel_pipes.tee(wire, copy, size)
        except OSError:
            teed = 0
        if teed < size:  # not expected: the copy pipe is empty and as large
            kernel_pipes.discard(self.pipes.copy[0])
            return False
        return True

    async def _deliver(self, size: int, t: float, scope: trio.CancelScope) -> bool:
        """Splice the pipe's ``size`` bytes on to the receiver as it takes them, each piece
        handed on once taken. False when the receiver went away (the connection ends). Raises
        trio.Cancelled when the connection ends while it waits."""
        assert self.pipes is not None
        conn, direction, link = self.conn, self.direction, self.conn.link
        assert link is not None
        wire, copy = self.pipes.wire[0], self.pipes.copy[0]
        sink = conn.sides(direction)[1].socket.fileno()
        first = link.hands_on_first(conn.conn)
        if first:
            link.data_from_pipe(conn.conn, direction, copy, size, t)
        left = size
        try:
            while left:
                try:
                    taken = kernel_pipes.splice(wire, sink, left)
                except BlockingIOError:
                    taken = 0
                if not taken:
                    await trio.lowlevel.wait_writable(sink)
                    continue
                conn.sent[direction] += taken
                if not first:
                    link.data_from_pipe(conn.conn, direction, copy, taken, t)
                left -= taken
        except OSError as exc:
            conn.sink_failed(direction, exc, scope)  # first: it says which side is gone
            self._undelivered(left, t, first)
            return False
        except trio.Cancelled:
            self._undelivered(left, t, first)
            raise
        return True

    def _undelivered(self, size: int, t: float, handed: bool) -> None:
        """The pipe's last ``size`` bytes never reached the receiver: handed on so marked, or
        said so after them when ``handed`` on before (their bytes then go nowhere)."""
        assert self.pipes is not None
        if handed:
            kernel_pipes.discard(self.pipes.wire[0])
            self.conn.undelivered_last(self.direction, size, t)
            return
        data = kernel_pipes.drain(self.pipes.wire[0], size)
        kernel_pipes.discard(self.pipes.copy[0])
        self.conn.observe_undelivered(self.direction, data, t)

    def close(self) -> None:
        if self.pipes is not None:
            self.pipes.close()
            self.pipes = None
