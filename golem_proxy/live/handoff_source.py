"""The observing process's source of events (``--observer child-process``, observing.py): the
handoff records the forwarding process writes to the pipe, read and turned into what the relay
publishes in one process, the chunks into the taps behind the same `Observer`; and the
acknowledgements that keep the forwarding side's relay within its trail (`Acknowledger`).

It reads the pipe in a thread of its own, gathering a quiet pipe's records for `GATHER`, and
after each batch of records acknowledges, on the control socket, the pipe offset up to which
everything is decoded and its lines are written to the kernel (after the recorder's flush; as
soon as decoding yields when the lines are written already, or there is no recording).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import typing
from collections.abc import Sequence
from typing import Callable, Optional, TypeVar

import trio

from golem_core.profiles import Profile

from ..events import (
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    ProxyAction,
    SpoolFull,
    UpstreamStatus,
)
from ..recording.resume_scan import ResumePoint
from .acknowledger import ACK_AT_ONCE
from .handoff import PIPE_DIRECTIONS, HandoffError, Kind, Record, read_unsent
from .handoff_connections import KILLED, HandoffConnections
from .handoff_reader import PipeRecords, RecordReader
from .hub import EventHub
from .layer_taps import LayerTaps
from .link_resume import Resumption
from .observer import Observer
from .proxy_options import BoundRoute, ProxyOptions, new_tap
from .recorder import Recorder
from .redact import Redactor
from .relay import MIN_DECODE_TIME
from .session import STOP_LIMIT
from .spool_hold import TailHold
from .spool_pickle import safe_loads
from .spool_records import SpoolRecords
from .take_up import standing
from .tap import ConnectionTap
from .unrecorded_values import UnrecordedValues

__all__ = ["KILLED", "HandoffSource"]

_T = TypeVar("_T")
EVENT_TYPES = typing.get_args(Event)
"""The close of a connection still open where a killed session's spool ends (recover)."""

GATHER = 0.005
"""Seconds the records of a quiet pipe gather before they are read."""
GATHER_BELOW = 64 * 1024
"""A read smaller than this is a quiet pipe's, after which records gather; a larger one means
traffic flows, and for `FLOWING` after it the pipe is read on at once: the forwarding side holds
its relay for what this process has not acknowledged yet (1 MiB outstanding at most,
observer_link.py), so a pause there stops forwarding (a gather after every read held 16 MiB
answers at 0.12x the relay's speed, one after each answer's request still at 0.35x)."""
FLOWING = 0.05
MARK_EVERY = 64 * 1024
"""Handoff bytes after which the decoding is marked for an acknowledgement, also within a batch
(1 MiB of tiny frames is seconds of decoding on a busy machine)."""
SPOOL_AHEAD = 1024 * 1024
"""Bytes read from a spool that may wait for the observer (what the forwarding side lets be
outstanding through a pipe at least, observer_link.py)."""


class HandoffSource(HandoffConnections):
    """The session's events from handoff records: a tap per connection behind one `Observer`,
    which here has a core of its own, so it decodes as soon as a chunk arrives (no quiet
    moment to wait for, no share of the time to leave to forwarding). Serves until the pipe
    ends, then decodes what is queued within the drain timeout (the rest is a gap)."""

    def __init__(
        self,
        hub: EventHub,
        fd: int,
        bound: Sequence[BoundRoute],
        profile: Profile,
        options: ProxyOptions,
        acknowledge: Callable[[int], None] = lambda offset: None,
        recorder: Callable[[], Optional[Recorder]] = lambda: None,
        make_tap: Callable[..., ConnectionTap] = new_tap,
        record_read_fd: int = -1,
        taking_over: Sequence[tuple[int, str]] = (),
        on_end: Callable[[float, str], None] = lambda t, reason: None,
        held_again: Callable[[int], None] = lambda requests: None,
        ack_at_once: Callable[[], int] = lambda: ACK_AT_ONCE,
        spool_fd: int = -1,
        on_unended: Optional[Callable[[float], None]] = None,
    ) -> None:
        os.set_blocking(fd, False)
        self.on_unended = on_unended
        """Called with the last record's time when the records end without the session's end
        (`golem-proxy recover`: a killed session's spool), after each connection still open
        is closed as `KILLED`; None: the recording stays unended. Given, a record that does
        not read stops the reading (`broken`) rather than raise: a spool is a file anyone may
        have damaged, never this side's own forwarding process."""
        self.broken: Optional[str] = None
        """Where and why the records stopped before their end: a record that does not read
        (only with ``on_unended``); None: read to their end."""
        self._last: dict[tuple[int, Direction], tuple[float, int]] = {}
        """Per connection open and direction, read from a spool: the last chunk's time and
        bytes (`_count`), which a kill may have left unsent (`_close_killed`)."""
        self._sent: dict[int, list[int]] = {}
        """Per connection open, the bytes handed on each way (``DATA`` and ``LOST``), for the
        close a connection still open at a killed session's end gets (`_close_killed`)."""
        self.ended = False
        """The forwarding process's last record (`Kind.SESSION_END`) was read."""
        self.spool_fd = spool_fd
        """The spool the records come from (spool.py; ``fd`` is then its doorbell), -1:
        they come through ``fd``."""
        self.on_end = on_end
        """Called with when and how the session ended, at the forwarding process's last record
        (`Kind.SESSION_END`): the session then ends its recording with a ``session-end``
        line. A pipe that ends without it (that process was killed) ends none."""
        self.held_again = held_again
        """Told, at a take-over, how many requests the recording has in flight (`take_up`)."""
        self.taking_over = tuple(taking_over)
        """A process taking over from one that died: the connections that one knew
        (connection, route), looked up in the recording before this one says it is ready
        (`bind`), while forwarding goes on without waiting for it."""
        self._standing: dict[int, ResumePoint] = {}
        """Where they stand in the recording (`take_up.standing`), until ``RESUME``."""
        self.record_read_fd = record_read_fd
        """The recording, to read back (-1: none): a restarted observing process looks up
        where the connections it takes over stand in it (`Kind.RESUME`)."""
        self._doubtful: set[int] = set()
        """Connections taken over at a restart with bytes the process before may have left
        unrecorded, until their server's direction resumed."""
        self._unrecorded: dict[int, int] = {}
        """Connections taken over at a restart: the bytes the process before may have left
        unrecorded, said with the first direction resumed."""
        self._unrecorded_values: dict[int, UnrecordedValues] = {}
        """Per connection, its ``UNRECORDED`` records read (a value may span several)."""
        self.make_tap = make_tap
        """Makes a connection's tap, called as `new_tap` (`LayerTaps` with hops served
        outside the relay)."""
        self.acknowledge = acknowledge
        """Called with the offset up to which the recording is written."""
        self.ack_at_once = ack_at_once
        """Bytes written that are acknowledged at once (`_acknowledge_soon`)."""
        self.recorder = recorder
        """The session's recorder, once it has one."""
        self.hub = hub
        self.fd = fd
        self.bound = list(bound)
        self.profile = profile
        self.options = options
        self.redactor = Redactor(list(options.redact)) if options.redact else None
        self.observer = Observer(
            options.observer_memory,
            quiet=0.0,
            max_delay=0.0,
            duty=1.0,
            duty_behind=1.0,
            duty_late=1.0,
            # What is queued here is bounded by the forwarding side, which waits for this
            # process (observer_link.py): shedding by time would only cut exchanges in half
            # (one 1 MiB chunk of tiny frames is seconds of decoding). The memory bound stays.
            max_lag=math.inf,
            max_drain=math.inf,
        )
        self.start_time = 0.0
        self.records = 0
        self._reader = RecordReader()
        self._spool: Optional[SpoolRecords] = None
        """The spool the records are read from, once reading starts (None: the pipe)."""
        self._taps: dict[int, ConnectionTap] = {}
        self._now = 0.0
        self._token: Optional[trio.lowlevel.TrioToken] = None
        self._ack_sent = 0
        self._ack_due = 0
        """The offset to acknowledge once decoding yields (`_acknowledge_soon`)."""

    @property
    def idle(self) -> bool:
        return self.observer.idle

    async def bind(self) -> list[BoundRoute]:
        if self.taking_over:
            # Before ``ready``: the forwarding process hands nothing on meanwhile (it counts
            # what crosses), so this look-up's time, unbounded (a connection quiet one way since
            # it opened is looked up back to its ``open`` line), is the gap's, never a wait of
            # the relay's nor a silence its stall watchdog would take for a stuck process.
            self._standing = standing(self.record_read_fd, [conn for conn, _ in self.taking_over])
        return list(self.bound)

    async def unbind(self) -> None:
        return None

    def stop(self) -> None:
        """Nothing to do: the session ends when the forwarding process closes the pipe."""

    def publish(self, event: Event) -> None:
        self.hub.publish(event, self._now)

    async def serve(
        self, *, task_status: trio.TaskStatus[list[BoundRoute]] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Read records until the pipe ends; then decode what is left (see the class)."""
        self._token = trio.lowlevel.current_trio_token()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.observer.run)
                task_status.started(list(self.bound))
                await self._read_until_end()
                if not self.ended and self.on_unended is not None:
                    self._close_killed()
                    self.on_unended(self._now)
                # What is decoded from now on comes in one burst: let the consumers queue it.
                self.hub.widen(STOP_LIMIT)
                nursery.cancel_scope.cancel()
        finally:
            # From a spool, the forwarding process waits for every record to be decoded.
            within = math.inf if self.spool_fd >= 0 else self.options.drain_timeout
            self.observer.drain_now(max(within, MIN_DECODE_TIME))

    async def _read_until_end(self) -> None:
        reader = self._reader
        spooled = self.spool_fd >= 0
        pipe = PipeRecords(self.fd, reader)
        if spooled:
            pipe = self._spool = SpoolRecords(self.spool_fd, self.fd, reader)
        marked = 0
        flowing_until = -math.inf
        hold = TailHold()
        while True:
            if spooled and self.observer.backlog > SPOOL_AHEAD:
                # Nothing bounds what waits in the spool but its budget: read on only as fast
                # as the observer decodes, which would shed what it cannot hold.
                await trio.sleep(GATHER / 5)
                continue
            try:
                got, bulk = pipe.read()
            except BlockingIOError:
                await trio.lowlevel.wait_readable(pipe.wait_fd)
                continue
            last = not got
            if last and self.on_unended is not None:
                pipe.ended()  # a killed session's spool: its last record may be torn
            while True:
                at = reader.offset
                try:
                    record = reader.next_record()
                    if record is None and last and self.on_unended is not None:
                        # A killed session's spool: its last record, torn by the kill.
                        record = reader.torn()
                    if record is None:
                        if last:  # no record follows the one held
                            for ready in hold.release():
                                self._handle(ready)
                        break
                    self.records += 1
                    if self.on_unended is not None and not math.isfinite(record.t):
                        # Written in the recording's lines, which hold finite times only.
                        raise HandoffError(f"its time is {record.t}")
                    holding = self._spool is not None and not self._spool.left
                    for ready in hold.take(record, at, holding):
                        self._handle(ready)
                except Exception as exc:
                    if self.on_unended is None:
                        raise  # the pipe of this side's own forwarding process: a bug
                    where = at if self._spool is None else self._spool.start + at
                    self.broken = f"the record at offset {where} does not read: {_why(exc)}"
                    for ready in hold.release():  # read whole before the damage
                        with contextlib.suppress(Exception):  # the damage is what is said
                            self._handle(ready)
                    return
                if hold.before(reader.offset) - marked >= MARK_EVERY:
                    # Within a long batch too: the forwarding side sees steady progress.
                    marked = hold.before(reader.offset)
                    self.observer.after_queued(functools.partial(self._decoded, marked))
            if last:
                return
            if hold.before(reader.offset) > marked:
                marked = hold.before(reader.offset)
                self.observer.after_queued(functools.partial(self._decoded, marked))
            now = trio.current_time()
            if got >= GATHER_BELOW or bulk:
                flowing_until = now + FLOWING
            elif now > flowing_until:
                # A trickle: let records gather for a moment rather than wake for each (on a
                # busy machine, every wake-up of this process is time the relay's core may
                # lose). Well inside what the recording may trail the wire by.
                await trio.sleep(GATHER)
            else:
                await trio.lowlevel.checkpoint()

    def _decoded(self, offset: int) -> None:
        """Everything up to ``offset`` is decoded: acknowledge it once its lines are written."""
        recorder = self.recorder()
        if recorder is None or recorder.all_written:
            self._acknowledge_soon(offset)
        else:
            recorder.after_written(functools.partial(self._acknowledge, offset))

    def _acknowledge(self, offset: int) -> None:
        self._ack_sent = max(self._ack_sent, offset)
        self.acknowledge(offset)

    def _acknowledge_soon(self, offset: int) -> None:
        """Acknowledge ``offset`` once the decoding slice yields (see `ACK_AT_ONCE`): it stays
        true meanwhile, since everything before it is written already."""
        if self._token is None or offset - self._ack_sent >= self.ack_at_once():
            self._ack_due = 0
            self._acknowledge(offset)
            return
        if not self._ack_due:
            try:
                self._token.run_sync_soon(self._acknowledge_due)
            except trio.RunFinishedError:  # the session is over: nobody waits for it
                return
        self._ack_due = offset

    def _acknowledge_due(self) -> None:
        offset, self._ack_due = self._ack_due, 0
        if offset:
            self._acknowledge(offset)

    def _handle(self, record: Record) -> None:
        self._now = record.t
        kind = record.kind
        direction = PIPE_DIRECTIONS[record.direction]
        # Not pickle.loads: from a spool, these bytes may be a file `recover` was pointed at.
        if kind is Kind.OPENED:
            opened = _unpickled(record, ConnectionOpened)
            self._sent[record.conn] = [0, 0]
            self._taps[record.conn] = self.make_tap(
                record.conn, opened.route, self.profile, self.publish, self.options, self.redactor
            )
            # In order with the chunks handed on before it: published at once, a connection
            # would be logged ahead of the exchanges whose answers went by before it.
            self.observer.submit_event(self.publish, opened)
            connections = self._connections_of(opened.route)
            if connections is not None:
                # Noted in wire order, behind the bytes handed on before it (the MCP hop's
                # tool calls): what its close names if nothing crosses it.
                self.observer.after_queued(functools.partial(connections.opened, opened))
        elif kind is Kind.CLOSED:
            self._close(record.conn, _unpickled(record, ConnectionClosed))
        elif kind is Kind.RESUME:
            self._resume(_unpickled(record, Resumption))
        elif kind is Kind.SPOOL_FULL:
            if self._spool is not None:
                self._spool.leave()
            # The recording's line of it, behind every record the spool held (the views say
            # what a kill -9 would have lost on each side of it).
            full = SpoolFull(t=record.t, limit=self.options.spool_limit)
            self.observer.submit_event(self.publish, full)
        elif kind is Kind.SESSION_END:
            self.ended = True
            self.on_end(record.t, bytes(record.data).decode("utf-8", "replace"))
        elif kind is Kind.EVENT:
            # In order with the chunks handed on before it, as the relay publishes it: a
            # fault's or an intercept's event after the frame it acted on, an MCP server's
            # stderr after the hop's frames handed on before it; a GOLEM route's upstream
            # down or back, followed by the tool-call tracker then (`ToolCallTracker.upstream`).
            event: Event = _unpickled(record, EVENT_TYPES)  # type: ignore[arg-type]
            tracker = self._tracker
            if tracker is not None and isinstance(event, UpstreamStatus):
                self.observer.after_queued(functools.partial(tracker.upstream, event))
            if isinstance(event, ProxyAction):
                acted = self._taps.get(event.conn)
                if acted is not None:  # its tap learns it first, as in the forwarding process
                    self.observer.after_queued(functools.partial(acted.acted_on, event))
            self.observer.submit_event(self.publish, event)
        else:
            tap = self._taps.get(record.conn)
            if tap is None:
                return  # a connection opened before a restart of this side: nothing to add to
            if kind is Kind.DATA:
                self._count(record.conn, direction, len(record.data), record.t)
                self.observer.submit(tap, direction, record.data, record.t)
            elif kind is Kind.END:
                self.observer.submit(tap, direction, b"", record.t)
            elif kind is Kind.CUT:
                text = bytes(record.data)
                remaining = int(text) if text.isdigit() else 0
                self.observer.after_queued(functools.partial(tap.ends_inside, direction, remaining))
            elif kind is Kind.UNSENT:
                unsent = read_unsent(record.data)
                if unsent is not None:
                    self.observer.lose(tap, direction, unsent[0], record.t, unsent=unsent[1])
            elif kind is Kind.UNDELIVERED_LAST:
                size, why = self._taken_back(record, direction)
                self.observer.undelivered_last(tap, direction, size, why, record.t)
            elif kind is Kind.UNDELIVERED:
                why = bytes(record.data).decode("utf-8", "replace")
                self.observer.after_queued(functools.partial(tap.mark_undelivered, direction, why))
            elif kind is Kind.CUT_BY:
                how = bytes(record.data).decode("utf-8", "replace")
                self.observer.after_queued(functools.partial(tap.cut, direction, how))
            elif kind is Kind.ARRIVED:
                self.observer.after_queued(functools.partial(tap.arrived, direction, record.t))
            elif kind is Kind.UNRECORDED:
                self._learn(record, tap)
            elif kind is Kind.RESUMED:
                unrecorded = self._unrecorded.pop(record.conn, 0)
                self.observer.after_queued(
                    functools.partial(tap.resumed, direction, record.lost, record.t, unrecorded)
                )
                if isinstance(self.make_tap, LayerTaps):
                    # Tool calls in flight across the restart whose answers may have crossed
                    # unseen are let go, in order with the frames (the tap's first words).
                    unseen = record.lost > 0 or record.conn in self._doubtful
                    if direction is Direction.S2C:
                        self._doubtful.discard(record.conn)
                    self.observer.after_queued(
                        functools.partial(
                            self.make_tap.resumed, tap.route, record.conn, direction, unseen
                        )
                    )
            else:
                self._count(record.conn, direction, record.lost)
                self.observer.lose(tap, direction, record.lost, record.t)


def _unpickled(record: Record, expected: type[_T] | tuple[type, ...]) -> _T:
    """The object a record's data pickles, checked to be what its kind carries. Raises
    HandoffError, or what unpickling raises."""
    value = safe_loads(record.data)
    if not isinstance(value, expected):
        kind = record.kind.name
        raise HandoffError(f"its data is of type {type(value).__name__}, not what {kind} carries")
    return typing.cast(_T, value)


def _why(exc: Exception) -> str:
    """One line saying what was wrong with a record (``exc``, raised reading it)."""
    said = str(exc).splitlines()[0][:200] if str(exc) else ""
    if isinstance(exc, HandoffError):
        return said
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__
