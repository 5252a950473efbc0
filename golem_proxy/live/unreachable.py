"""What a client sent on a connection whose upstream could not be reached (it refused, or did
not answer in time), recorded before the client is reset.

The client connects to the proxy, which listens, and sends its call at once; only then does
the proxy's own connect to the plugin fail. Those bytes reached the proxy and never the plugin:
without this the recording says the connection carried nothing, and no view has a row for the
call the client made. So, before the reset, what the client has sent is read (`read_unsent`:
what is there at once or comes within `GRACE`, at most a frame limit's worth: never a long
wait, and a client that sends nothing is reset no more than `GRACE` later) and handed to
inspection undelivered, saying why (`hand_on_unsent`), as bytes refused by an upstream that
had closed are: the tap decides the frames' status once, where they are decoded.
"""

from __future__ import annotations

import os

import trio

from ..events import Direction
from .chunks import RECV_SIZE
from .connection import Connection

__all__ = ["GRACE", "hand_on_unsent", "read_unsent"]

GRACE = 0.05
"""How long a client's bytes may still take to arrive once its upstream could not be reached
(seconds): a call written right after connecting is on its way, and the client waits for its
reset no longer than this."""


async def read_unsent(fd: int, limit: int, grace: float = GRACE) -> list[tuple[bytes, float]]:
    """The chunks the client on ``fd`` sent, each with when it was read (`trio.current_time`):
    what is there now or arrives within ``grace`` seconds, at most ``limit`` bytes, up to its
    end of stream or reset. Never raises OSError."""
    chunks: list[tuple[bytes, float]] = []
    left = limit
    with trio.move_on_after(grace):
        while left > 0:
            try:
                chunk = os.read(fd, min(left, RECV_SIZE))
            except BlockingIOError:
                await trio.lowlevel.wait_readable(fd)
                continue
            except OSError:  # it reset: what it sent before is what there is
                break
            if not chunk:
                break
            chunks.append((chunk, trio.current_time()))
            left -= len(chunk)
    return chunks


def hand_on_unsent(
    conn: Connection, chunks: list[tuple[bytes, float]], start_time: float, why: str
) -> None:
    """Hand ``chunks`` (`read_unsent`, times from ``start_time`` on) to ``conn``'s inspection,
    undelivered (``why``), and end both directions for it, so a frame they cut short reads
    truncated; the close says how many bytes were read and not sent. ``conn``'s observation
    must be set up (its tap, or the observing process's link)."""
    read = 0
    t = 0.0
    for chunk, read_at in chunks:
        t = read_at - start_time
        conn.observe_undelivered(Direction.C2S, chunk, t, why)
        read += len(chunk)
    for direction in Direction:
        conn.observe(direction, b"", t)
    conn.add_to_reason(f"{read:,} bytes read from the client not sent")
