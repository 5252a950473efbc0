"""The forwarding side's end of observation in a process of its own (``--observer
child-process``): every forwarded chunk and every event of the relay go to the observing
process as handoff records (handoff.py), written without ever waiting.

Chunks are ``DATA`` records; while the pipe is full they wait, up to `BACKLOG` bytes, and
past that they are counted and a ``LOST`` record says how many once there is room (the
observing side records the gap). Events are pickled into
``OPENED``, ``CLOSED`` and ``EVENT`` records, which wait for room in order and are never
dropped: both ends are the same program, started together, so pickle is the event's
description on the pipe. A read of frames the relay may hold before it hands them on is marked
as it happens by an ``ARRIVED`` record (`arrived`), a header alone, kept as events are. A
large frame's body may be handed on from a pipe the kernel filled (`data_from_pipe`,
body_splice.py): the same records. Once the observing process is gone, nothing is handed on
and forwarding goes on alone.

The recording is kept close to the wire: the observing process acknowledges, at every flush of
the recording, how far it decoded and wrote, and past the bounds link_ledger.py keeps (its
docstring tells the policy: about `TRAIL_LIMIT` behind, and on which connections the relay
waits) the link is `holding` and the relay takes no new bytes from the connections the
recording trails on (`holds`, `until_caught_up`: backpressure, no gap; link_trail.py).

With a ``hold_limit`` (``--observer-hold``; none by default), a connection's hold lasts at most
that long; then it *sheds* (link_holds.py): a span the recording does not hold is named, never a
hole. If no acknowledgement moves on for `STALL_LIMIT` while something is outstanding, the
observing process is stuck: ``on_give_up`` is called (the process is stopped and the recording
says so) and forwarding goes on without it (`watch_stall`).
"""

from __future__ import annotations

import pickle
from typing import Callable, Optional, Union

import trio

from ..events import ConnectionClosed, ConnectionOpened, Direction, Event, UpstreamStatus
from . import kernel_pipes
from .attribution import RoutesDown
from .handoff import HandoffWriter, Kind, direction_number, unsent_data
from .handoff_reader import MAX_DATA
from .link_holds import HOLD_LIMIT, Holds
from .link_ledger import (
    PIPED_RECORD_LIMIT,
    RECORD_LIMIT,
    TRAIL_LIMIT,
    Ledger,
)
from .link_resume import OpenConnections, Resumption
from .link_trail import STALL_LIMIT, LinkTrail
from .spool import RING_EVERY, SpoolWriter
from .unrecorded_values import unrecorded_records

__all__ = [
    "BACKLOG",
    "STALL_LIMIT",
    "ObserverLink",
]

BACKLOG = 64 * 1024 * 1024
"""Forwarded bytes that may wait here for room in the pipe (the chunks themselves, no copy)
while the observing process is busy with one large frame (a 16 MiB answer is parsed in one
go): beyond it, bytes are counted as lost and the gap recorded."""

MAX_UNSEEN = 1 << 62
"""`ObserverLink.takes_unseen` where the link does not follow the frames: no bound of its own."""


class ObserverLink(LinkTrail):
    """Hands the relay's bytes and events to the observing process through the pipe ``fd``.
    Never blocks and never raises; `keep_flushing` writes what waited for room."""

    def __init__(
        self,
        fd: int,
        now: Callable[[], float],
        backlog: int = BACKLOG,
        *,
        trail_limit: float = TRAIL_LIMIT,
        hold_limit: float = HOLD_LIMIT,
        stall_limit: float = STALL_LIMIT,
        make_writer: Optional[Callable[[int], HandoffWriter]] = None,
        budget: Optional[int] = None,
    ) -> None:
        self.make_writer = make_writer or (lambda pipe: HandoffWriter(pipe, backlog))
        """The writer of the records, given the pipe (a `SpoolWriter` with a spool: the pipe
        is its doorbell, spool.py)."""
        self.budget = budget
        """With a spool: the bytes that may be outstanding before the relay waits
        (`Ledger.budget`)."""
        self.writer = self.make_writer(fd)
        self.now = now
        """The session's clock, the one the relay stamps the chunks with."""
        self.trail_limit = trail_limit
        self.hold_limit = hold_limit
        self.stall_limit = stall_limit
        self.on_give_up: Optional[Callable[[str], None]] = None
        """Called once, with why, when the link stopped of itself: the observing process
        stopped acknowledging, or handing on failed (forwarding already goes on)."""
        self.on_learned: Optional[Callable[[tuple[str, ...]], None]] = None
        """Called with the values `unrecorded` is given, handed on or not (`HeldEchoes`: a
        process that takes over hides them, even those the dead one never read)."""
        self.stopped = False
        """Observation stopped (the observing process is gone): nothing is handed on."""
        self.marks_arrivals = False
        """Whether `arrived` hands its marks on: only a session that decides about frames as
        they arrive (`golem-proxy mcp`'s attribution) reads them."""
        self.ledger = Ledger(now, trail_limit, budget)
        """What is handed on and not acknowledged yet, and whether the relay waits for it."""
        self._holds = Holds()
        """The connections waiting for the recording, and those that shed."""
        self._shedding = self._holds.shedding  # the same dict, asked of every chunk
        self._room_wanted = trio.Event()
        self._limit_lowered = trio.Event()
        """Set when `stall_limit` is lowered (`drained`): the watch sleeping a quarter of the
        old one wakes to count with the new (`watch_stall`)."""
        self.connections: Optional[OpenConnections] = None
        """The open connections' framing, followed so that a restarted observing process can
        take them up (`resume`), and for whether a request waits (`answers_waiting`), also
        once no restart will come (`OpenConnections.stopped_for_good`); None: not followed."""
        self._routes_down = RoutesDown()
        """The routes whose upstream is down now, since when: told to a restarted observing
        process (`Resumption.routes_down`), which saw none of it."""

    @property
    def gone(self) -> bool:
        """The observing side closed its end (the process died), or `stop` was called."""
        return self.stopped or self.writer.gone

    def lose(self, conn: int, direction: Direction, size: int, t: float, unsent: str = "") -> None:
        """``size`` bytes of ``direction`` read and not handed on (a ``LOST`` record says so
        before the connection's next record); ``unsent``: nor sent on, and why (an ``UNSENT``
        record, in order with the rest)."""
        if unsent:
            self._mark(Kind.UNSENT, conn, direction, t, unsent_data(size, unsent))
        elif not self.stopped:
            self.writer.lose(conn, direction_number(direction), t, size)

    def data(self, conn: int, direction: Direction, data: bytes, t: float) -> None:
        """A forwarded chunk of ``conn`` (``b""``: that direction ended)."""
        followed = self.connections
        if followed is not None and not self.stopped and self.writer.gone:
            self.stop()  # it died: count what crosses from here, until one takes over
        if self.stopped:
            if followed is not None and followed.down:
                followed.while_down(conn, direction_number(direction), data)
            return
        try:
            if followed is not None:
                picked = followed.follow(conn, direction_number(direction), data)
                if picked is not None:  # the direction waited for a frame boundary
                    rest, lost = picked
                    if rest < 0:
                        return
                    self.writer.resumed(conn, direction_number(direction), t, lost)
                    if data and rest == len(data):
                        return
                    data = data[rest:]
            self._hand_on(conn, direction, data, t)
            if followed is not None and self.writer.gone:
                # This write found the pipe broken: the process died, and this chunk reached
                # none. Count from here what crosses, until one takes over.
                self.stop()
                followed.missed(conn, direction_number(direction), len(data))
        except Exception as exc:  # a bug here costs observation, never the forwarding
            self._give_up(f"handing on to the observing process failed ({_described(exc)})")

    def takes_unseen(self, conn: int, direction: Direction) -> int:
        """How many of ``conn``'s next bytes of ``direction`` can be handed on from a pipe
        without entering the process (`data_from_pipe`): none while observation stopped,
        ``conn`` sheds or the direction waits for a frame boundary; where the link follows the
        frames (for a restart), the known rest of the frame's body; else `MAX_UNSEEN`."""
        if self.stopped or self.writer.gone or conn in self._shedding:
            return 0
        followed = self.connections
        if followed is None:
            return MAX_UNSEEN
        return followed.unseen_allowed(conn, direction_number(direction))

    def data_from_pipe(
        self, conn: int, direction: Direction, source: int, size: int, t: float
    ) -> None:
        """A forwarded chunk of ``conn`` waiting at the start of pipe ``source`` (``size``
        bytes, at most `takes_unseen`), handed on as `data` hands on a chunk, moved by the
        kernel as far as the handoff pipe takes it. ``source`` is left empty."""
        number = direction_number(direction)
        followed = self.connections
        try:
            if size > self.takes_unseen(conn, direction):  # changed since the bytes were read
                self.data(conn, direction, kernel_pipes.drain(source, size), t)
                return
            if followed is not None:
                followed.skip(conn, number, size)
            before = self.writer.handed
            for start in range(0, size, PIPED_RECORD_LIMIT):
                piece = min(PIPED_RECORD_LIMIT, size - start)
                self.writer.data_from_pipe(conn, number, t, source, piece)
            self._handed_on(conn, self.writer.handed - before, t, direction is Direction.C2S)
            if followed is not None and self.writer.gone:  # as in `data`
                self.stop()
                followed.missed(conn, number, size)
        except Exception as exc:  # as in `data`; what the pipe still holds goes nowhere
            kernel_pipes.discard(source)
            self._give_up(f"handing on to the observing process failed ({_described(exc)})")

    def hands_on_first(self, conn: int) -> bool:
        """Whether ``conn``'s chunks are handed on before their write to the receiver: while
        they go to a spool, so that a ``kill -9`` between the two never loses bytes a
        receiver has (what was not delivered then follows: `undelivered_last`). Through the
        pipe, or while ``conn`` sheds, after it, as before (`undelivered`)."""
        writer = self.writer
        return (
            isinstance(writer, SpoolWriter)
            and not writer.piped
            and not (self.stopped or writer.gone or conn in self._shedding)
        )

    def undelivered_last(
        self, conn: int, direction: Direction, size: int, why: str, t: float
    ) -> None:
        """Of ``conn``'s bytes of ``direction`` handed on before their write
        (`hands_on_first`), the last ``size`` never reached their receiver (``why``): an
        ``UNDELIVERED_LAST`` record after them, never dropped."""
        if size > 0:
            self._mark(Kind.UNDELIVERED_LAST, conn, direction, t, unsent_data(size, why))

    def undelivered(self, conn: int, direction: Direction, why: str, t: float) -> None:
        """The chunks of ``conn``'s ``direction`` handed on from now on never reached their
        receiver (``why``): an ``UNDELIVERED`` record before them, never dropped."""
        self._mark(Kind.UNDELIVERED, conn, direction, t, why)

    def cut(self, conn: int, direction: Direction, how: str, t: float) -> None:
        """The end of ``conn``'s ``direction`` handed on next is the proxy's (``how``): a
        ``CUT_BY`` record before it, never dropped."""
        self._mark(Kind.CUT_BY, conn, direction, t, how)

    def _hand_on(self, conn: int, direction: Direction, data: bytes, t: float) -> None:
        if data and conn in self._shedding:
            self.writer.lose(conn, direction_number(direction), t, len(data))
            return
        before = self.writer.handed
        if len(data) > RECORD_LIMIT:
            # In records the observing process can acknowledge one by one: a 1 MiB read of
            # tiny frames is seconds of decoding on a busy machine (`STALL_LIMIT`).
            view = memoryview(data)  # not released here: pieces may wait in the backlog
            for start in range(0, len(data), RECORD_LIMIT):
                piece = view[start : start + RECORD_LIMIT]
                self.writer.data(conn, direction_number(direction), t, piece)
        elif data:
            self.writer.data(conn, direction_number(direction), t, data)
        else:
            number = direction_number(direction)
            cut = None if self.connections is None else self.connections.cut(conn, number)
            if cut is not None:
                # Said by the side that followed the framing: a loss from a frame's first byte
                # (a shed) leaves the observing side no header to tell it by.
                self.writer.event(Kind.CUT, conn, number, t, str(cut))
            self.writer.event(Kind.END, conn, number, t)
        self._handed_on(conn, self.writer.handed - before, t, direction is Direction.C2S)

    def arrived(self, conn: int, direction: Direction, t: float) -> None:
        """``conn``'s bytes of ``direction`` read at ``t`` complete frames that may be handed
        on only later (`Connection.arrived`): an ``ARRIVED`` record, in order with the
        chunks."""
        if self.marks_arrivals and conn not in self._shedding:
            # (A connection that sheds has its frames recorded as a gap.)
            self._mark(Kind.ARRIVED, conn, direction, t)

    def unrecorded(
        self, conn: int, direction: Direction, learned: tuple[str, ...], t: float
    ) -> None:
        """Of a frame of ``conn`` not recorded as it came, the values redaction replaces in it
        (`Connection.unrecorded`): ``UNRECORDED`` records, in order with the chunks; while
        ``conn`` sheds they wait, and follow its gap (which they no longer split)."""
        if self.on_learned is not None:
            self.on_learned(learned)
        if conn in self._shedding:
            self._holds.unlearned.add(conn, learned)
            return
        for data in unrecorded_records(learned, MAX_DATA):
            self._mark(Kind.UNRECORDED, conn, direction, t, data)

    def _mark(
        self, kind: Kind, conn: int, direction: Direction, t: float, why: Union[str, bytes] = ""
    ) -> None:
        """Hand on a record that says something of ``conn``'s ``direction`` from here on, in
        order with its chunks (``why``: its data, in words, or bytes)."""
        if self.stopped or self.writer.gone:
            return
        try:
            before = self.writer.handed
            self.writer.event(kind, conn, direction_number(direction), t, why)
            self._handed_on(conn, self.writer.handed - before, t)
        except Exception as exc:  # as in `data`
            self._give_up(f"handing on to the observing process failed ({_described(exc)})")

    def publish(self, event: Event) -> None:
        """An event of the relay (a connection opened or closed, an upstream down or back)."""
        followed = self.connections
        if followed is not None and not self.stopped and self.writer.gone:
            self.stop()  # as in `data`
        if followed is not None and isinstance(event, (ConnectionOpened, ConnectionClosed)):
            followed.follow_event(event, self.writer)
        if isinstance(event, UpstreamStatus):
            self._routes_down.follow(event)
        if self.stopped:
            return
        if isinstance(event, ConnectionOpened):
            kind, conn = Kind.OPENED, event.conn
        elif isinstance(event, ConnectionClosed):
            kind, conn = Kind.CLOSED, event.conn
        else:
            kind, conn = Kind.EVENT, 0
        try:
            before = self.writer.handed
            pickled = pickle.dumps(event, pickle.HIGHEST_PROTOCOL)
            self.writer.event(kind, conn, 0, event.t, pickled)
            self._handed_on(conn, self.writer.handed - before, event.t)
        except Exception as exc:  # as in `data`
            self._give_up(f"handing on to the observing process failed ({_described(exc)})")

    def _handed_on(self, conn: int, size: int, t: float, from_client: bool = False) -> None:
        if self.writer.waiting or self.writer.unrung:
            self._room_wanted.set()
        if self.ledger.add(self.writer.handed, conn, size, t, from_client):
            self._holds.handed_on(t)

    def answers_waiting(self, conn: int) -> Optional[bool]:
        """Whether requests of ``conn``'s client wait for answers, as the frames followed for a
        restart or for this tell (`OpenConnections.answers_waiting`); None when not known
        (the frames are not followed)."""
        followed = self.connections
        return None if followed is None else followed.answers_waiting(conn)

    def _give_up(self, why: str) -> None:
        """Stop handing on, and say why (``on_give_up``) once."""
        if self.stopped:
            return
        self.stop()
        if self.on_give_up is not None:
            self.on_give_up(why)

    def stop(self) -> None:
        """Hand nothing on any more (the observing process is gone)."""
        if self.connections is not None and not self.stopped:
            self.connections.stop(self.ledger.by_conn, self.ledger.acked)
        self.stopped = True
        self.writer.abandon()  # what waits for room goes nowhere now (its pipes closed)
        self._holds.clear()
        self.ledger.clear()
        self._release()
        self._room_wanted.set()

    def resume(self, fd: int, seq: int) -> Resumption:
        """Hand on again, to a new observing process through the pipe ``fd`` (observation
        stopped, and `connections` followed meanwhile): first the open connections (a
        ``RESUME`` record; ``seq``: the recording's last line), then each direction from its
        next frame boundary (``RESUMED``, with the bytes that crossed unobserved)."""
        followed = self.connections
        if followed is None:
            raise RuntimeError("the connections were not followed: nothing to resume")
        self.writer = self.make_writer(fd)
        self.stopped = False
        self.ledger = Ledger(self.now, self.trail_limit, self.budget)
        self.ledger.acked_at = self.now()
        resumption, t = followed.hand_over(self.writer, seq, self._routes_down.now(), self.now)
        self._handed_on(0, self.writer.handed, t)
        return resumption

    def end_session(self, reason: str) -> None:
        """The session ended in order (``reason``: how): the last record, after every other
        (every connection's losses first), from which the observing process writes the
        recording's ``session-end`` line once it decoded the rest. Never blocks, as the
        other records."""
        if self.stopped:
            return
        try:
            self.writer.event(Kind.SESSION_END, 0, 0, self.now(), reason)
        except Exception as exc:  # a spool that takes no more (spool.py): as in `data`
            self._give_up(f"handing on to the observing process failed ({_described(exc)})")
        self.writer.ring()

    def leave_spool(self, backlog: int = BACKLOG) -> None:
        """The spool is full (spool.py): its last record says so, and the records go on
        through the pipe (``backlog`` bytes may wait for room there), counted on from the
        spool's. Once the observing process decoded what the spool held, the relay waits for
        the recording as without a spool (the trail's bounds, the stall watch's limit);
        until then nothing holds it (`Ledger.drain`)."""
        spooled = self.writer
        self.make_writer = lambda pipe: HandoffWriter(pipe, backlog)
        if not (isinstance(spooled, SpoolWriter) and spooled.piped):
            # (A spool whose file system filled up ended, and its writer went on through the
            # pipe, of itself: `SpoolWriter._ended`.)
            spooled.event(Kind.SPOOL_FULL, 0, 0, self.now())
            spooled.ring()
            self.writer = self.make_writer(spooled.pipe_fd)
            self.writer.handed = spooled.handed
        self.budget = None
        self.ledger.drain(self.writer.handed)
        self._release()  # a connection held for the spool's budget forwards on
        if self.ledger.drains_to is None:
            self.drained()

    async def keep_flushing(self) -> None:
        """Until cancelled: when records wait for room, write them as the pipe takes them;
        after each batch of records written to a spool, ring its doorbell (spool.py)."""
        while not self.gone:
            if not self.writer.waiting:
                if self.writer.unrung and self.budget is not None:
                    # A spool's records gather for a moment under one ring (`RING_EVERY`).
                    await trio.sleep(RING_EVERY)
                self.writer.ring()
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


def _described(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
