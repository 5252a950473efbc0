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
reading a chunk and before handing it on, the stdio hop waits until every GOLEM connection
whose client side polls readable has been read by its pump, which hands a chunk on in the
same step it reads it (pumps.py, `Connection.forward`). Bytes written after the stdio chunk,
in the instant before the look, may be taken along: a look a few microseconds late, against
a whole scheduling round without it.

A pump that does not read (its frame held by ``--intercept`` or ``--fault delay``, its
upstream not taking bytes, the recording trailing) must not hold up the stdio hop: the wait
is bounded (`READ_UP_WAIT`), and a connection that outlasted it is not waited for again until
its pump moves bytes again (`sent`), so each chunk of the hop does not wait anew.
"""

from __future__ import annotations

import select
from collections.abc import Iterable

import trio

from ..events import Direction
from .connection import Connection

__all__ = ["READ_UP_WAIT", "ReadUp"]

READ_UP_WAIT = 0.25
"""Seconds the stdio hop waits at most for the routes' pumps to read what waits for them."""
_SPIN_ROUNDS = 16
"""Scheduling rounds waited for before sleeping between looks (a pump ready to read runs
within a round or two; past that it is held, and spinning would take a core)."""
_BACKED_OFF_STEP = 0.005
"""Seconds between looks after those rounds."""


def _unread(connections: Iterable[Connection]) -> list[Connection]:
    """The connections whose client side holds bytes (or an end) their pump has not read."""
    open_ones = [
        conn
        for conn in connections
        if not conn.eof[Direction.C2S] and conn.client.socket.fileno() >= 0
    ]
    if not open_ones:
        return []
    poller = select.poll()
    by_fd: dict[int, Connection] = {}
    for conn in open_ones:
        fd = conn.client.socket.fileno()
        by_fd[fd] = conn
        poller.register(fd, select.POLLIN)
    return [by_fd[fd] for fd, _ in poller.poll(0)]


class ReadUp:
    """See the module docstring: `before` is called by the stdio hop before it hands on a
    chunk it read."""

    def __init__(self, wait: float = READ_UP_WAIT) -> None:
        self.wait = wait
        self._stuck: dict[int, int] = {}
        """Connections that outlasted a wait, by number: the bytes they had sent then."""

    def _waiting(self, connections: Iterable[Connection]) -> list[Connection]:
        waiting = []
        for conn in _unread(connections):
            stuck_at = self._stuck.get(conn.conn)
            if stuck_at is not None and stuck_at == conn.sent[Direction.C2S]:
                continue
            self._stuck.pop(conn.conn, None)
            waiting.append(conn)
        return waiting

    async def before(self, live: dict[int, Connection]) -> None:
        """Return once every connection of ``live`` whose client side was readable now has
        been read (or has ended, or has stuck: at most `wait` seconds)."""
        if len(self._stuck) > len(live):
            self._stuck = {k: v for k, v in self._stuck.items() if k in live}
        waiting = self._waiting(live.values())
        if not waiting:
            return  # as a rule: one poll of the open connections, no wait
        sent = {conn.conn: conn.sent[Direction.C2S] for conn in waiting}
        with trio.move_on_after(self.wait):
            rounds = 0
            while waiting:
                rounds += 1
                await trio.sleep(0 if rounds < _SPIN_ROUNDS else _BACKED_OFF_STEP)
                # Those of the first look only, until their pump read (the bytes it sent
                # moved, or nothing waits: it holds what it read): bytes written since came
                # after the chunk.
                still = {conn.conn for conn in _unread(live.values())}
                waiting = [
                    conn
                    for conn in waiting
                    if conn.conn in still and conn.sent[Direction.C2S] == sent[conn.conn]
                ]
            return
        for conn in waiting:
            self._stuck[conn.conn] = conn.sent[Direction.C2S]
