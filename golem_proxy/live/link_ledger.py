"""The forwarding side's account of what it handed to the observing process and has not had
acknowledged yet (`Ledger`), and the bounds it keeps the recording within: how far behind the
wire the recording may trail before the relay waits for it, and on which connections it waits.
`ObserverLink` (observer_link.py) keeps one and does the handing on, the holding and the
waking; the ledger only counts and decides.

The policy. The recording is kept close to the wire (about `TRAIL_LIMIT`; in a flood of tiny
frames, what decoding `OUTSTANDING_LIMIT` of them takes): the observing process acknowledges, at
every flush of the recording, the offset in the pipe's stream up to which everything handed on
is decoded and its lines written to the kernel, and the rate at which it got through bytes
lately (`ObserverLink.acknowledged`). When the oldest record not acknowledged yet was handed on
more than `TRAIL_LIMIT` ago, or more bytes handed on are not acknowledged yet than it gets
through in that time (`outstanding_limit`: between `OUTSTANDING_LIMIT` for tiny frames and
`OUTSTANDING_CEILING` for large blobs), or more than `OUTSTANDING_LIMIT` of what clients sent
(`client_outstanding`: the rate never raises the limit for them), the link is `holding` until
all are back under half their limits. While it holds, the relay takes no new bytes
(`Ledger.holds`, `ObserverLink.until_caught_up`: backpressure, no gap) from the connections the
recording trails *on*: those with at least their share of the bytes not acknowledged yet (the
outstanding bytes over the number of connections that have some), as long as the others together
have less than 1/`QUIET_SHARE` of what those have. Those others forward on: one connection's
flood does not hold the rest; nor do the bytes they hand on after a flood's (a record's worth
outstanding) that has stood still for `BEHIND_AFTER` (held, or done sending) count in the shares
(up to the byte limit): they wait behind it in the pipe, where its frames may take seconds to
decode, and holding them would not shorten that. Their bytes go into the pipe behind the
flood's, which is held at the limits, so they trail by what decoding the flood's held bytes
takes (up to seconds of tiny frames on a busy machine: the reason they are not held by time as
well); what they add themselves is bounded by the fraction (past it, every connection is held:
when many connections trail alike, as 8 clients of sequential calls do, the link holds them all,
as a kill -9 needs); and past `CAP` times the byte limit not acknowledged, every connection is
held whatever the shares.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping
from typing import Optional

__all__ = [
    "BEHIND_AFTER",
    "CAP",
    "MARK_EVERY",
    "OUTSTANDING_CEILING",
    "OUTSTANDING_LIMIT",
    "PIPED_RECORD_LIMIT",
    "QUIET_SHARE",
    "RECORD_LIMIT",
    "TRAIL_LIMIT",
    "Ledger",
]

TRAIL_LIMIT = 0.06
"""Seconds the recording may trail the wire (what a ``kill -9`` of both processes loses)
before the relay stops taking new bytes until it catches up."""
OUTSTANDING_LIMIT = 1024 * 1024
"""Bytes handed on and not acknowledged yet past which the relay holds too (at least: see
`OUTSTANDING_CEILING`): in the 60 ms of `TRAIL_LIMIT` a flood of tiny frames hands on seconds
of decoding (300,000 noop frames, all of them), which the observing process's own bounds would
shed."""
OUTSTANDING_CEILING = 16 * 1024 * 1024
"""How far the byte limit rises (for what servers send: clients' bytes keep
`OUTSTANDING_LIMIT`, see `Ledger.client_outstanding`) when the observing process says it gets
through bytes fast (`Ledger.acknowledge` with a rate: what it decodes and writes in
`TRAIL_LIMIT`, a 16 MiB viewport capture's blob in a few ms a MiB, against tiny frames' ~20
KiB): then the relay forwards the next answer while the observing process finishes the last
one, rather than 1 MiB of it. At most the link's backlog / `CAP`, so that what waits for room
in the pipe stays under the backlog."""
CAP = 3
"""Past this many times the byte limit (`Ledger.outstanding_limit`) not acknowledged, every
connection is held, also those with less than their share outstanding. Three: a busy
connection is held only after the read that took it past the limit (up to 1 MiB,
`golem_proxy.live.chunks.RECV_SIZE_BULK`), so one busy direction alone reaches twice the limit;
the quiet ones keep a MiB beyond it."""
QUIET_SHARE = 8
"""While the link holds, connections with less than their share of the bytes not acknowledged
yet forward on only while they have, together, at most 1/8 of what the others have: so they
add at most that to what a ``kill -9`` loses, and connections that trail alike are all held
(without it they would take turns under the average and the trail would grow to `CAP`)."""
BEHIND_AFTER = 0.25
"""While the link holds, bytes a connection hands on after the last ones of the others that
have a record's worth (`RECORD_LIMIT`) outstanding and have handed on nothing for this many
seconds are left out of the shares (`Ledger._shares`): they wait behind a flood's bytes that
take seconds to decode, and holding that connection for them would not shorten the trail.
Connections that trail alike (sequential calls: a few hundred bytes outstanding each) are all
held still."""
RECORD_LIMIT = 64 * 1024
"""The largest ``DATA`` record: a larger chunk is handed on in pieces (views, not copies)."""
PIPED_RECORD_LIMIT = 1024 * 1024
"""The largest ``DATA`` record of a large frame's body moved by the kernel (body_splice.py, at
most a pipe's worth at a time): a body's bytes cost the observing process no decoding to speak
of, so `RECORD_LIMIT`'s reason does not hold for them, and each record costs the forwarding
process two calls and its bookkeeping (per 16 MiB answer, in ``bench/cpu_budget.py``: 12.5 ms
of forwarding CPU with records of 64 KiB, 11.5 with 256 KiB, 9.3 with 1 MiB)."""
MARK_EVERY = 0.005
"""Records handed on within this many seconds share one mark (the trail's resolution)."""


class _Mark:
    """What was handed on within one `MARK_EVERY`: when it began, the pipe's stream offset
    after it, how many of those bytes were each connection's (0: events of no connection), and
    how many of them clients sent."""

    __slots__ = ("by_conn", "from_clients", "handed", "t")

    def __init__(self, t: float, handed: int) -> None:
        self.t = t
        self.handed = handed
        self.by_conn: dict[int, int] = {}
        self.from_clients = 0


class Ledger:
    """What is handed on and not acknowledged yet, by connection and by mark (oldest first),
    and whether the recording trails the wire by too much (`holding`) and on which
    connections (`holds`). Offsets are the pipe stream's (`HandoffWriter.handed`)."""

    def __init__(
        self,
        now: Callable[[], float],
        trail_limit: float = TRAIL_LIMIT,
        budget: Optional[int] = None,
    ) -> None:
        self.now = now
        self.trail_limit = trail_limit
        self.budget = budget
        """With a spool (spool.py): the bytes that may be outstanding, the only bound; the
        trail's time and the byte limits do not hold the relay (the records are on their way
        to disk, not waiting for decoding). None: the bounds of the module docstring."""
        self.holding = False
        """The recording trails the wire by more than ``trail_limit`` (or by more than
        `outstanding_limit` bytes): the connections it trails on wait."""
        self.drains_to: Optional[int] = None
        """A full spool's end (`drain`): until acknowledged past it, nothing holds the relay."""
        self.acked = 0
        """The offset up to which the observing process acknowledged everything."""
        self.acked_at = 0.0
        self.outstanding_limit = OUTSTANDING_LIMIT
        """Bytes not acknowledged past which the link holds: what the observing process gets
        through in ``trail_limit`` at the rate it last said, within `OUTSTANDING_LIMIT` and
        `OUTSTANDING_CEILING`."""
        self.client_outstanding = 0
        """Of the bytes outstanding, those clients sent. They keep `OUTSTANDING_LIMIT`
        whatever the rate: the rate the observing process last said is the past (16 MiB
        answers it took in at 150-300 MB/s), and a flood of tiny requests right after them
        would otherwise cross whole (13 MB in 50 ms, inside the trail limit) and be decoded
        for seconds while the recording trails the wire, its pending requests past the tap's
        limits. Large frames come from servers (viewport captures, meshes); a client's flood
        of requests bounds the answers it gets too."""
        self._marks: collections.deque[_Mark] = collections.deque()
        """What is not acknowledged yet, oldest first; one per `MARK_EVERY`."""
        self._outstanding: dict[int, int] = {}
        """Bytes handed on and not acknowledged yet (by whole marks), by connection."""
        self._outstanding_total = 0
        self._last: dict[int, tuple[int, float]] = {}
        """Of the connections with bytes outstanding, the offset after each one's last bytes
        (where its bytes end in the pipe), and when they were handed on."""
        self._busy: Optional[int] = None
        """What the connections with at least their share have outstanding, together (None:
        to be counted again, the shares changed)."""
        self._behind: dict[int, int] = {}
        """Of the connections' outstanding bytes, those left out of the shares (`_shares`)."""
        self._counted = 0
        """The outstanding bytes the shares count (`_shares`)."""

    @property
    def by_conn(self) -> Mapping[int, int]:
        """Each connection's bytes handed on and not acknowledged yet."""
        return self._outstanding

    def outstanding(self, conn: int) -> int:
        """``conn``'s bytes handed on and not acknowledged yet (counted by marks)."""
        return self._outstanding.get(conn, 0)

    def trail(self) -> float:
        """Seconds since the oldest record not acknowledged yet was handed on (0: none)."""
        return self.now() - self._marks[0].t if self._marks else 0.0

    def stalled_for(self) -> float:
        """Seconds nothing acknowledged moved on while something is outstanding (0: none)."""
        marks = self._marks
        return self.now() - max(self.acked_at, marks[0].t) if marks else 0.0

    def add(self, handed: int, conn: int, size: int, t: float, from_client: bool) -> bool:
        """``size`` bytes of ``conn`` were handed on at ``t``, the stream now at ``handed``:
        count them, and start `holding` when past a limit. True when they were counted while
        it held already (the shares changed: the waiting connections may look again)."""
        marks = self._marks
        if handed <= self.acked or size <= 0:
            return False
        if not marks or t - marks[-1].t >= MARK_EVERY:
            marks.append(_Mark(t, handed))
        mark = marks[-1]
        mark.handed = handed
        mark.by_conn[conn] = mark.by_conn.get(conn, 0) + size
        self._outstanding[conn] = self._outstanding.get(conn, 0) + size
        self._last[conn] = (handed, t)
        self._outstanding_total += size
        if from_client:
            mark.from_clients += size
            self.client_outstanding += size
        self._busy = None
        if self.holding:
            return True
        if self.drains_to is not None:
            return False  # behind a full spool's records: see `drain`
        if self.budget is not None:
            self.holding = handed - self.acked > self.budget
            return False
        if (
            t - marks[0].t > self.trail_limit
            or handed - self.acked > self.outstanding_limit
            or self.client_outstanding > OUTSTANDING_LIMIT
        ):
            self.holding = True
        return False

    def holds(self, conn: int, handed: int) -> bool:
        """While `holding`: whether ``conn`` must wait, the stream at ``handed``: it has at
        least its share of what is not acknowledged yet, or the others together have more
        than 1/`QUIET_SHARE` of what those with their share have (the shares leave out bytes
        that wait behind those of connections standing still for `BEHIND_AFTER`: `_shares`),
        or more than `CAP` times the byte limit is outstanding."""
        if not self.holding:
            return False
        outstanding = self._outstanding
        count = len(outstanding)
        busy = self._busy
        if busy is None:  # once per change of the shares, not once per connection asking
            busy = self._shares(handed)
        total = self._counted
        own = outstanding.get(conn, 0) - self._behind.get(conn, 0)
        if own > 0 and own * count >= total:
            return True  # one of those the recording trails on
        if (total - busy) * QUIET_SHARE > busy:
            return True  # no few connections stand out: the recording trails on all of them
        # Clients' bytes past their limit hold only by the shares above: many connections
        # sending alike are all held there, and one that sends little is not held for them.
        return handed - self.acked > self.outstanding_limit * CAP

    def recount(self) -> None:
        """Count the shares again at the next `holds` (a connection may have stood still for
        `BEHIND_AFTER` since)."""
        self._busy = None

    def _shares(self, handed: int) -> int:
        """Count the shares again: what the connections with at least their share have
        outstanding, together (`_busy`). Left out of the count (`_behind`): the bytes a
        connection handed on after the last ones of every flood standing still (a connection
        with a record's worth outstanding, `RECORD_LIMIT`, that has handed on nothing for
        `BEHIND_AFTER`), at most `outstanding_limit` of them. They wait in the pipe behind the
        flood's, whose decoding may take seconds: holding a quiet connection for its round
        trips meanwhile would not shorten the trail, only stop it until the flood's bytes are
        decoded (they count again once those are acknowledged). A flood standing still keeps
        all its bytes in the count."""
        outstanding, last_at = self._outstanding, self._last
        behind: dict[int, int] = {}
        now = self.now()
        still = {
            conn: at
            for conn, (at, t) in last_at.items()
            if now - t >= BEHIND_AFTER and outstanding.get(conn, 0) >= RECORD_LIMIT
        }
        if still:
            frontier = max(still.values())
            limit = self.outstanding_limit
            for conn, (at, _) in last_at.items():
                if at > frontier:  # handed on since: not one standing still
                    behind[conn] = min(outstanding.get(conn, 0), handed - frontier, limit)
        self._behind = behind
        total = self._outstanding_total - sum(behind.values())
        self._counted = total
        count = len(outstanding)
        busy = 0
        for conn, size in outstanding.items():
            size -= behind.get(conn, 0)
            if size * count >= total:
                busy += size
        self._busy = busy
        return busy

    def acknowledge(self, offset: int, rate: float) -> bool:
        """The observing process acknowledged everything up to ``offset``; ``rate``: the bytes
        a second it got through lately (0: unknown), which sets `outstanding_limit`. False
        when ``offset`` is not past what it acknowledged before."""
        if rate > 0:
            limit = int(rate * self.trail_limit)
            self.outstanding_limit = max(OUTSTANDING_LIMIT, min(limit, OUTSTANDING_CEILING))
        if offset <= self.acked:
            return False
        self.acked = offset
        self.acked_at = now = self.now()
        marks, outstanding = self._marks, self._outstanding
        if self.drains_to is not None and offset >= self.drains_to:
            # The observing process reached the records after the spool: they trail from now,
            # as in a pipe it just began to read.
            self.drains_to = None
            for mark in marks:
                mark.t = max(mark.t, now)
        while marks and marks[0].handed <= offset:
            mark = marks.popleft()
            self.client_outstanding -= mark.from_clients
            for conn, size in mark.by_conn.items():
                left = outstanding[conn] - size
                if left:
                    outstanding[conn] = left
                else:
                    del outstanding[conn]
                    self._last.pop(conn, None)
                self._outstanding_total -= size
            self._busy = None
        return True

    def drain(self, end: int) -> None:
        """The spool is full, its records ending at ``end`` (spool.py), and those after it go
        through the pipe without a budget: the relay no longer waits for what the spool held
        (the observing process decodes it first, for seconds when it trails: that backlog is
        the recording's to catch up, not the relay's to wait for). Until the acknowledgements
        pass ``end``, nothing holds; the pipe's records wait for room in the writer's backlog,
        and past it are lost as a recorded gap (handoff.py), as when the observing process is
        too far behind without a spool. Then the pipe's records trail from that moment on, and
        the bounds of the module docstring hold."""
        self.budget = None
        self.holding = False
        self.drains_to = end if end > self.acked else None

    def caught_up(self, handed: int) -> bool:
        """While `holding`: the recording is back under half of every limit (the relay may
        take new bytes from every connection again)."""
        if self.budget is not None:
            return self.holding and handed - self.acked <= self.budget // 2
        return (
            self.holding
            and self.trail() <= self.trail_limit / 2
            and handed - self.acked <= self.outstanding_limit // 2
            and self.client_outstanding <= OUTSTANDING_LIMIT // 2
        )

    def clear(self) -> None:
        """Nothing is outstanding any more (observation stopped), and nothing holds."""
        self._marks.clear()
        self._outstanding.clear()
        self._last.clear()
        self._outstanding_total = 0
        self.client_outstanding = 0
        self._busy = None
        self.holding = False
