"""What an MCP server wrote to its GOLEM connections before a chunk of its stdio, read and
handed on before that chunk (`ReadUp`).

The server writes on two channels, its stdout (the MCP hop) and its GOLEM sockets (the
routes), and the proxy reads each as the scheduler happens to run its task. A server whose
tool call reads an answer already waiting on its connection (the real GOLEM-3DMCP server
reads a late answer so) sends its GOLEM request and writes its tool's result a few
microseconds apart: when both are readable in the same scheduling round, the result could be
read, and decoded, first. The tool call was then over when its own request was decoded, and
the request named no tool call (`ToolCallTracker`). The same for a call the client sends
next: a GOLEM request the server wrote before it must not be taken for the new call's.

Everything the server wrote on a socket before it wrote the stdio chunk is in that socket's
receive queue by the time the chunk is read (loopback delivers a write at once). So, after
reading a chunk and before handing it on, the stdio hop looks (one ``epoll_wait`` over the
routes' client sockets) for sockets holding bytes, counts how far each one's stream then
reaches (what its pump read, `ChunkReader.taken`, and what the kernel queues, ``FIONREAD``),
and waits until each pump has handed that far on (`Connection.sent`); so too for a pump that
read bytes and yields before it hands them on (the fault and intercept pumps). What a server wrote
beyond its receive queue waits in its own send queue, unseen: of a request larger than the
queue (a few hundred KiB on loopback) written just before the result, the rest may still be
handed on after the result.

The wait includes the recording's hold on such a connection (``--observer child-process``
takes a connection's next bytes only once the recording is close enough behind it), for
`TRAIL_WAIT` at most: a server writing its routes all the time while the recording trails
would pace its stdio hop by the recording, so such a connection is then let be until it is
idle again (what it wrote meanwhile may be decoded after the hop's chunk). Where the proxy
holds a frame (``--fault delay``, ``--intercept``) its pump reads on behind it, marking each
frame as it reads it (read_on.py, `Connection.arrived`), so what it read is decided however
long it holds it: marked is far enough there. Not waited for: one that outlasted a wait
(`READ_UP_WAIT`: its upstream not taking bytes) until it is seen idle again, so that costs the
hop one wait, not one per chunk. Bytes written after the stdio chunk, in the instant before
the look, may be taken along: a look a few microseconds late, against a whole scheduling round
without it. The epoll set is made at the first look with a connection live (sessions without
a stdio hop pay nothing), kept by the relay as connections open and close, and closed when the
relay stops serving (`close`): a process that runs many sessions keeps no descriptor of theirs.
"""

from __future__ import annotations

import contextlib
import fcntl
import select
import sys
import termios
from typing import Optional

import trio

from ..events import Direction
from .connection import Connection

__all__ = ["READ_UP_WAIT", "TRAIL_WAIT", "ReadUp"]

READ_UP_WAIT = 0.25
"""Seconds the stdio hop waits at most for the routes' pumps to read what waits for them."""
TRAIL_WAIT = 0.05
"""Seconds it waits at most for a pump the recording's trail holds: a server writing its
routes all the time would otherwise pace its stdio hop by the recording, each chunk waiting
tens of ms (such a connection is then let be until it is seen idle, as one that outlasted
`READ_UP_WAIT`)."""
_SPIN_ROUNDS = 16
"""Scheduling rounds yielded for before sleeping between looks."""
_BACKED_OFF_STEP = 0.002
"""Seconds between looks after those rounds."""


class ReadUp:
    """See the module docstring: `before` is called by the stdio hop before it hands on a
    chunk it read; `add` and `remove` by the relay as connections open and end, `close` once
    it stopped serving."""

    def __init__(self, wait: float = READ_UP_WAIT) -> None:
        self.wait = wait
        self._epoll: Optional[select.epoll] = None
        self._by_fd: dict[int, Connection] = {}
        """The connections whose client socket is in the epoll set, by its descriptor."""
        self._slow: set[int] = set()
        """Connections that outlasted a wait, not waited for until seen idle (`_seen_idle`)."""
        self._fd_of: dict[int, int] = {}
        """Their descriptors, by connection number (a closed socket's number is -1)."""

    def add(self, conn: Connection) -> None:
        """``conn`` opened: its client socket is looked at (once the set exists)."""
        if self._epoll is not None:
            self._register(conn)

    def remove(self, conn: Connection) -> None:
        """``conn`` ends (called before its sockets close): no longer looked at."""
        fd = self._fd_of.get(conn.conn)
        if fd is not None and self._by_fd.get(fd) is conn:
            self._unregister(fd)

    def close(self) -> None:
        """Close the epoll set, if one was made, and forget every connection (the relay stopped
        serving). A later look with connections live makes a new set."""
        epoll, self._epoll = self._epoll, None
        self._by_fd.clear()
        self._fd_of.clear()
        self._slow.clear()
        if epoll is not None:
            epoll.close()

    def _register(self, conn: Connection) -> None:
        assert self._epoll is not None
        fd = conn.client.socket.fileno()
        if fd < 0:
            return
        if fd in self._by_fd:
            self._unregister(fd)  # a number reused after a close we were not told of
        try:
            self._epoll.register(fd, select.EPOLLIN)
        except OSError:
            return
        self._by_fd[fd] = conn
        self._fd_of[conn.conn] = fd

    def _unregister(self, fd: int) -> None:
        conn = self._by_fd.pop(fd, None)
        if conn is not None:
            self._fd_of.pop(conn.conn, None)
        if self._epoll is not None:
            # Closed already: the kernel dropped it from the set.
            with contextlib.suppress(OSError, ValueError):
                self._epoll.unregister(fd)

    def _readable(self) -> set[int]:
        """The connections (by number) whose client socket holds bytes now; those that ended
        their client's direction leave the set (a socket at its end polls readable for ever)."""
        assert self._epoll is not None
        readable: set[int] = set()
        for fd, _ in self._epoll.poll(0):
            conn = self._by_fd.get(fd)
            if conn is None or conn.eof[Direction.C2S]:
                self._unregister(fd)
                continue
            readable.add(conn.conn)
        return readable

    def _targets(self, live: dict[int, Connection], readable: set[int]) -> dict[int, int]:
        """The live connections to wait for, with how far their pump must have handed their
        client's stream on (`_handed_on`) for what it held at the look to be: those whose
        socket holds bytes (what the pump read already and what waits in the kernel), and
        those whose pump read bytes it has not handed on yet (a pump that yields between
        its read and its hand-on: the fault and intercept pumps). Not waited for: a pump
        holding a frame that does not read on (`_held`), nor one that outlasted a wait until
        it was seen idle since (`_slow`)."""
        targets: dict[int, int] = {}
        for number, conn in live.items():
            reader = conn.client_reader
            taken = 0 if reader is None else reader.taken
            unread = number in readable
            if not unread and taken <= _handed_on(conn):
                continue  # as a rule: an attribute or two a connection
            if _held(conn) or number in self._slow:
                continue
            targets[number] = taken + (_queued(conn) if unread else 0)
        return targets

    def _seen_idle(self, live: dict[int, Connection], readable: set[int]) -> None:
        """Connections that outlasted a wait are waited for again once their pump waits to
        read with nothing queued (they caught up)."""
        for number in list(self._slow):
            conn = live.get(number)
            reader = None if conn is None else conn.client_reader
            if conn is None or (reader is not None and reader.waiting and number not in readable):
                self._slow.discard(number)

    async def before(self, live: dict[int, Connection]) -> None:
        """Return once every connection of ``live`` whose client socket holds bytes now has
        handed them on (or has ended, or holds a frame, or the wait ran out: see the module
        docstring)."""
        if self._epoll is None:
            if not live:
                return  # nothing to wait for: no set made (nor made again once closed)
            self._epoll = select.epoll()
            for conn in live.values():
                self._register(conn)
        readable = self._readable()
        if self._slow:
            self._seen_idle(live, readable)
        targets = self._targets(live, readable)
        if not targets:
            return  # as a rule: one epoll_wait, no wait
        began = trio.current_time()
        with trio.move_on_after(self.wait):
            rounds = 0
            while targets:
                # A few scheduling rounds let a ready pump run; then it waits for its
                # upstream or for the recording, and spinning would take a core from them.
                rounds += 1
                await trio.sleep(0 if rounds < _SPIN_ROUNDS else _BACKED_OFF_STEP)
                targets = {
                    number: target
                    for number, target in targets.items()
                    if (held := live.get(number)) is not None
                    and not held.eof[Direction.C2S]
                    and not _held(held)
                    and _handed_on(held) < target
                }
                if targets and trio.current_time() - began >= TRAIL_WAIT:
                    trailing = {n for n in targets if _trailing(live[n])}
                    self._slow.update(trailing)
                    targets = {n: t for n, t in targets.items() if n not in trailing}
            return
        self._slow.update(targets)


def _trailing(conn: Connection) -> bool:
    """Whether the recording trails on ``conn`` far enough that its pump waits for it before
    it reads on (``--observer child-process``, `ObserverLink.holds`)."""
    return conn.link is not None and conn.link.holds(conn.conn)


def _held(conn: Connection) -> bool:
    """Whether ``conn``'s pump holds a frame for a person or a rule and would not read on
    (none does that marks its frames as it reads them: `Connection.decided_at_read`)."""
    return bool(conn.holding) and not conn.decided_at_read


def _handed_on(conn: Connection) -> int:
    """How far ``conn``'s client stream has been handed on, as far as attribution goes: what
    was forwarded and handed on with it (`Connection.sent`), or, where the pump marks each
    read's frames as they arrive (the fault and intercept pumps, which may hold a frame and
    read on behind it, or drop one: `Connection.arrived`), what it marked."""
    if conn.decided_at_read:
        return max(conn.marked_through, conn.sent[Direction.C2S])
    return conn.sent[Direction.C2S]


def _queued(conn: Connection) -> int:
    """Bytes waiting in ``conn``'s client socket's receive queue (0 if it cannot be asked)."""
    try:
        answer = fcntl.ioctl(conn.client.socket.fileno(), termios.FIONREAD, b"\0\0\0\0")
    except OSError:
        return 0
    return int.from_bytes(answer, sys.byteorder, signed=True)
