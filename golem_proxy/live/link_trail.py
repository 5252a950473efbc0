"""How far the recording trails the wire, as the observing process acknowledges it, and the
relay held back by it (observer_link.py's module docstring tells the policy): the link is
`holding` while the recording trails past its bounds (`Ledger`, link_ledger.py), and the
connections it trails on wait (`holds`, `until_caught_up`) until the acknowledgements catch up,
or shed once their hold lasted ``hold_limit`` (`Holds`, link_holds.py); and the watch that
stops observation when the acknowledgements stand still for `STALL_LIMIT` (`watch_stall`)."""

from __future__ import annotations

from typing import Callable

import trio

from ..events import Direction
from .handoff import HandoffWriter
from .link_holds import Holds
from .link_ledger import Ledger

__all__ = ["STALL_LIMIT", "LinkTrail"]

STALL_LIMIT = 5.0
"""Seconds without an acknowledgement moving on, while the relay holds, after which the
observing process counts as stuck and forwarding goes on without it."""


class LinkTrail:
    """Mixed into `ObserverLink`, whose ledger, holds and writer these read and move on."""

    writer: HandoffWriter
    now: Callable[[], float]
    hold_limit: float
    ledger: Ledger
    _holds: Holds
    _shedding: dict[int, int]
    unrecorded: Callable[[int, Direction, tuple[str, ...], float], None]
    stopped: bool
    stall_limit: float
    _limit_lowered: trio.Event
    _give_up: Callable[[str], None]

    @property
    def holding(self) -> bool:
        """The recording trails the wire by more than ``trail_limit`` (or by more than
        `Ledger.outstanding_limit` bytes): the connections it trails on wait (`holds`)."""
        return self.ledger.holding

    @property
    def acked(self) -> int:
        """The pipe's offset up to which the observing process acknowledged everything."""
        return self.ledger.acked

    @property
    def outstanding_limit(self) -> int:
        return self.ledger.outstanding_limit

    @property
    def client_outstanding(self) -> int:
        return self.ledger.client_outstanding

    def outstanding(self, conn: int) -> int:
        """``conn``'s bytes handed on and not acknowledged yet (counted by marks)."""
        return self.ledger.outstanding(conn)

    def trail(self) -> float:
        """Seconds since the oldest record not acknowledged yet was handed on (0: none)."""
        return self.ledger.trail()

    @property
    def shedding(self) -> bool:
        """Some connection sheds: its chunks are counted as lost, not handed on."""
        return bool(self._shedding)

    def sheds_now(self, conn: int) -> bool:
        """``conn``'s hold reached ``hold_limit``: its chunks are counted, not handed on, until
        the observing process has acknowledged everything handed on before."""
        return conn in self._shedding

    def holds(self, conn: int) -> bool:
        """Whether the relay must wait (`until_caught_up`) before it takes ``conn``'s next
        bytes: the link is `holding` and ``conn`` does not shed, and the recording trails on
        it (`Ledger.holds`)."""
        if conn in self._shedding:
            return False
        return self.ledger.holds(conn, self.writer.handed)

    def acknowledged(self, offset: int, rate: float = 0.0) -> None:
        """The observing process decoded everything handed on up to ``offset`` and wrote its
        lines to the kernel; ``rate``: the bytes a second it got through lately (0: unknown),
        which sets the byte limit (`Ledger.outstanding_limit`)."""
        draining = self.ledger.drains_to is not None
        if not self.ledger.acknowledge(offset, rate):
            return
        if draining and self.ledger.drains_to is None:
            self.drained()
        if self._shedding:
            # Caught up with what was handed on before the shed: hand on again, the loss first.
            for conn, learned in self._holds.caught_up(offset):
                self.unrecorded(conn, Direction.C2S, learned, self.now())
        if self.ledger.caught_up(self.writer.handed):
            self._release()
        elif self._holds.waiting:
            self._holds.wake()

    async def until_caught_up(self, conn: int) -> None:
        """While the link `holds` ``conn``: wait until the recording caught up, observation
        stopped, or the hold reached ``hold_limit`` (then ``conn`` sheds, see the module
        docstring)."""
        if self.holds(conn):
            await self._holds.wait(
                conn,
                self.hold_limit,
                self.holds,
                lambda: self.ledger.recount(),  # the ledger and the writer of now, after a resume
                lambda: self.writer.handed,
            )

    def _release(self) -> None:
        self.ledger.holding = False
        self._holds.wake()

    def drained(self) -> None:
        """The observing process decoded what the full spool held: it reads the pipe now,
        and goes as long without acknowledging as without a spool before it counts as stuck
        (`watch_stall`, woken: it may be sleeping a quarter of the spool's limit, 15 s)."""
        self.stall_limit = STALL_LIMIT
        self._limit_lowered.set()

    async def watch_stall(self) -> None:
        """Until cancelled or stopped: when nothing acknowledged moves on for ``stall_limit``
        seconds while something handed on is outstanding, stop (``on_give_up``)."""
        while not self.stopped:
            lowered = self._limit_lowered
            with trio.move_on_after(self.stall_limit / 4):
                await lowered.wait()
            if lowered.is_set():
                self._limit_lowered = trio.Event()
            if self.ledger.stalled_for() >= self.stall_limit:
                self._give_up(
                    f"the observing process acknowledged nothing for {self.stall_limit:g} s"
                )
                return
