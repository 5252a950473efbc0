"""What a client sent on a connection whose upstream could not be reached (it refused, or did
not answer in time), recorded before the client is reset.

The client connects to the proxy, which listens, and sends its call at once; only then does
the proxy's own connect to the plugin fail. Those bytes reached the proxy and never the plugin:
without this the recording says the connection carried nothing, and no view has a row for the
call the client made. So, before the reset, what the client has sent is read (`UnsentRead`:
what is there at once or comes within `GRACE`: never a long wait, and a client that sends
nothing is reset no more than `GRACE` later) and handed to inspection as it is read,
undelivered, saying why (`UnsentHandOn`), as bytes refused by an upstream that had closed
are: the tap decides the frames' status once, where they are decoded.

What is read is bounded twice: a connection reads at most a frame limit's worth, and all the
connections being read this way share one `UnsentBudget` (`BUDGET`): a flood of them (a plugin
that hangs, every connect timing out together) adds no more than that on top of what
inspection holds (``--observer-memory``). When the proxy stops reading before the client ended
its stream (the grace ran out, or a bound was reached), the end it records is the proxy's
(`Connection.observe_cut`): a frame it cut short reads as read in part before the proxy reset
the client, no truncated frame of the client's; and the close says so.
"""

from __future__ import annotations

import os
from typing import Callable

import trio

from ..events import Direction
from ..net.addresses import Address
from ..net.shortage import ShortWait, shortage
from .chunks import RECV_SIZE
from .connection import Connection

__all__ = [
    "BUDGET",
    "CUT_HOW",
    "GRACE",
    "UnsentBudget",
    "UnsentHandOn",
    "UnsentRead",
    "waited_for_room",
]

GRACE = 0.05
"""How long a client's bytes may still take to arrive once its upstream could not be reached
(seconds): a call written right after connecting is on its way, and the client waits for its
reset no longer than this."""
BUDGET = 4 * 1024 * 1024
"""What may be read at once from the clients of upstreams that could not be reached, all
connections together (bytes)."""
CUT_HOW = "the proxy reset the client"
"""How the proxy ended a client's stream it stopped reading (`StreamEnded.cut`,
`FramingErrorSeen.cut`)."""


class UnsentBudget:
    """The bytes the connections read by `UnsentRead` may hold at once, all together: each
    takes its share as it reads and gives it back once what it read was handed on."""

    def __init__(self, total: int = BUDGET) -> None:
        self.total = total
        self.left = total

    def take(self, want: int) -> int:
        """Up to ``want`` bytes of what is left (0: none is)."""
        got = max(0, min(want, self.left))
        self.left -= got
        return got

    def give_back(self, size: int) -> None:
        self.left = min(self.total, self.left + size)


class UnsentRead:
    """Reads what a client sent (`__call__`) and hands each chunk on as it is read
    (``hand_on(chunk, when)``, `trio.current_time`): what is there now or arrives within
    ``grace`` seconds, at most ``limit`` bytes and what ``budget`` allows, up to its end of
    stream or reset. The share of ``budget`` taken stays taken until `release`."""

    def __init__(
        self,
        budget: UnsentBudget,
        limit: int,
        hand_on: Callable[[bytes, float], None],
        grace: float = GRACE,
    ) -> None:
        self.budget = budget
        self.limit = limit
        self.hand_on = hand_on
        self.grace = grace
        self.read = 0
        """Bytes read (and handed on)."""
        self.stopped = ""
        """Why the proxy stopped reading before the client ended its stream (then the end
        recorded is the proxy's: `UnsentHandOn.end`); empty when the client ended it, or
        reset."""
        self.past = ""
        """With ``stopped``: the bound it stopped at (empty: the grace ran out)."""
        self._taken = 0

    async def __call__(self, fd: int) -> None:
        """Read from ``fd``, the client's socket (non-blocking). Never raises OSError."""
        with trio.move_on_after(self.grace):
            while True:
                # A checkpoint at every chunk, not only when the socket is empty: a client that
                # keeps it full is stopped at the deadline too (trio cancels at checkpoints).
                await trio.lowlevel.checkpoint()
                want = min(self.limit - self.read, RECV_SIZE)
                share = self.budget.take(want)
                if share <= 0:
                    self.past = self._bound(want)
                    self.stopped = f"what it sent after them was not read (past {self.past})"
                    return
                self._taken += share
                try:
                    chunk = os.read(fd, share)
                except BlockingIOError:
                    self._give_back(share)
                    await trio.lowlevel.wait_readable(fd)
                    continue
                except OSError:  # it reset: what it sent before is what there is
                    self._give_back(share)
                    return
                self._give_back(share - len(chunk))
                if not chunk:
                    return
                self.read += len(chunk)
                self.hand_on(chunk, trio.current_time())
        self.stopped = f"its stream still open after {self.grace * 1000:.0f} ms"

    def _bound(self, want: int) -> str:
        if want <= 0:
            return f"the {self.limit:,}-byte frame limit"
        return f"the {self.budget.total:,} bytes read at once from clients of unreachable upstreams"

    def _give_back(self, size: int) -> None:
        self._taken -= size
        self.budget.give_back(size)

    def release(self) -> None:
        """Give back the share of the budget taken (once what was read was handed on)."""
        self._give_back(self._taken)

    def said(self) -> str:
        """What the close says of the bytes read and not sent, and of what a bound left unread
        (the grace running out is the common case, a client waiting for its answer: a frame
        it cut short says so in its own row)."""
        if not self.read:
            # A client that sent nothing in time is reset as before; one not read is said.
            return f"nothing read from the client (past {self.past})" if self.past else ""
        said = f"{self.read:,} bytes read from the client not sent"
        return f"{said}; {self.stopped}" if self.past else said


class UnsentHandOn:
    """Hands the chunks `UnsentRead` reads from ``conn``'s client to its inspection as they
    come (``observe`` sets that up at the first one), undelivered (``why``), times from
    ``start_time`` on; `end` ends both directions for it."""

    def __init__(
        self, conn: Connection, start_time: float, why: str, observe: Callable[[], None]
    ) -> None:
        self.conn = conn
        self.start_time = start_time
        self.why = why
        self.observe = observe
        self.read = 0
        self.t = 0.0

    def __call__(self, chunk: bytes, read_at: float) -> None:
        self.t = read_at - self.start_time
        if not self.read:
            self.observe()
            # Marked once: every frame they end never reached the plugin.
            self.conn.observe_undelivered(Direction.C2S, chunk, self.t, self.why)
        else:
            self.conn.observe(Direction.C2S, chunk, self.t)
        self.read += len(chunk)

    def end(self, reading: UnsentRead) -> None:
        """End both directions for inspection after the last chunk: the client's end is the
        proxy's when it stopped reading first (`UnsentRead.stopped`), so that a frame cut
        short there reads as read in part, no truncated frame of the client's. The close
        says how many bytes were read and not sent, and what was not read."""
        said = reading.said()
        if said:
            self.conn.add_to_reason(said)
        if not self.read:
            return
        if reading.stopped:
            self.conn.observe_cut(Direction.C2S, self.t, CUT_HOW)
        else:
            self.conn.observe(Direction.C2S, b"", self.t)
        self.conn.observe(Direction.S2C, b"", self.t)


def waited_for_room(wait: ShortWait, conn: Connection, upstream: Address) -> str:
    """What ``conn``'s close says of its wait for a descriptor to reach ``upstream``
    (`Room.connect`: this process ran short, not the upstream), and why it is unreachable
    when it never got one (the wait reached the connect's time limit)."""
    assert wait.short is not None
    short = shortage(wait.short)
    if conn.upstream is not None:
        conn.add_to_reason(
            f"it waited {wait.waited:.1f} s for a descriptor to reach its upstream: {short}"
        )
        return ""
    unreachable = f"{short}: no descriptor for it within {wait.waited:.1f} s"
    conn.note(f"upstream {upstream} unreachable: {unreachable}", True)
    return unreachable
