"""Whether the upstream's end of stream may wait for the client (`Connection.end_of_stream`).

The proxy holds a GOLEM plugin's FIN while the connection is idle: a plugin restarting between
calls, whose client reads nothing until it calls again; its next request is then answered with
the plugin's reset, on which the client reconnects and retries, where directly that call would
fail on the end of stream (connection.py). That is only right while no request waits: a client
waiting for an answer is reading, and must see the end at once, as it would directly, or it
waits its whole timeout for an answer that cannot come.

Which requests wait is not known on the forwarding path, which does not decode: it knows only
whether the client's bytes or the upstream's crossed last (`Connection.awaiting_reply`, set per
chunk), and one answer of several pipelined requests, or half of one, clears it. Counting frames
there would cost every chunk; an end of stream is rare, so it is asked then, of whoever already
follows the frames:

* ``--observer child-process``: the link follows each direction's frames for a restart of the
  observing process (`OpenConnections`; on such a protocol also with ``--observer-restarts
  0``, and once observation stopped for good), and counts them on the way at no cost of its
  own (`FrameBoundaries.frames`): more client frames crossed whole than the upstream's, and a
  request waits (GOLEM: every client frame is a request, every server frame an answer);
* in one process: the tap counts each direction's frames the same way, decoded or skipped
  over a limit (an answer over ``--max-frame`` answers its request all the same); after bytes
  it lost, or where a server may ask too, it pairs every request with its answer instead.
  The end is held until the tap has decoded everything forwarded before it, then passed on
  if a request waits (`ConnectionTap.answers_awaited`); with ``--enforce-limits`` the tap is
  up to date at once.

When it cannot be known (the observer shedding; decoding failed), the end passes at once, as
it would directly:
a client that waits must never be left to its timeout, and one that was idle only loses the
call the hold would have spared it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .connection import Connection
    from .tap import ConnectionTap

__all__ = ["hold_while_idle"]


def hold_while_idle(conn: Connection) -> bool:
    """Whether the upstream's end of stream, just observed, is held from ``conn``'s client,
    whose bytes were not the last to cross: True when no request is known to wait, or when
    that is asked of the observer, which releases the end (`Connection.release_fin`) once it
    finds one waiting."""
    if conn.link is not None:
        return conn.link.answers_waiting(conn.conn) is False
    tap = conn.tap
    if tap is None:
        return False
    if conn.inline:
        return not tap.answers_awaited()
    observer = conn.observer
    if observer is None or observer.shedding:
        return False
    observer.after_queued(lambda: _release_if_awaited(conn, tap))
    return True


def _release_if_awaited(conn: Connection, tap: ConnectionTap) -> None:
    """The tap decoded the upstream's end: pass it on if a request of the client waits."""
    if conn.fin_held and tap.answers_awaited():
        conn.release_fin()
