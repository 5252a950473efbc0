"""The connections a `HandoffSource` (handoff_source.py) decodes, kept apart from reading its
records: a connection closed (after everything it forwarded is decoded), the connections a
killed session's spool leaves open closed as the relay closes one when the proxy stops, the
values a connection learned to hide, and the connections a process taking over from a dead
one takes up where the recording left them."""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Optional

from golem_core.profiles import Profile

from ..events import ConnectionClosed, Direction, Event, UpstreamStatus
from ..recording.resume_scan import ResumePoint
from .attribution import ToolCallTracker
from .connection_attribution import ConnectionAttribution
from .handoff import SIZE_DIGITS, HandoffError, Record, read_unsent
from .layer_taps import LayerTaps
from .link_resume import Resumption
from .observer import Observer
from .proxy_options import ProxyOptions
from .recorder import Recorder
from .redact import Redactor
from .take_up import UNKNOWN, take_up
from .tap import ConnectionTap
from .unrecorded_values import UnrecordedValues

__all__ = ["CUT_BY_KILL", "KILLED", "HandoffConnections"]

KILLED = "the proxy was killed"
"""The reason of the close a connection still open at a killed session's end is given
(`golem-proxy recover`); from a spool, what may not have been sent on follows it (`DOUBT_*`)."""

CUT_BY_KILL = "the proxy's kill"
"""How a stream of a connection a kill left open ended (`StreamEnded.cut`,
`FramingErrorSeen.cut`): the proxy stopped reading it, as its stop does; no side ended it."""

DOUBT = "the spool's last {} may not have been sent on"
"""What the close of a connection a kill left open says of the last chunk the spool holds
each way, which the spool took before the receiver did (`Connection.forward`): the kill may
have come between the two, and nothing in the spool tells."""
TO = {Direction.S2C: "client", Direction.C2S: "upstream"}


def _told_late(closed: ConnectionClosed, tap: ConnectionTap) -> ConnectionClosed:
    """``closed``, saying the bytes its tap learned were undelivered only after frames they
    ended were published as delivered (`ConnectionTap.undelivered_late`)."""
    late = tap.undelivered_late
    if not late:
        return closed
    said = [
        f"{size} bytes to the {TO[direction]} recorded as sent never reached it ({why})"
        for direction, (size, why) in late.items()
    ]
    return dataclasses.replace(closed, reason="; ".join((closed.reason, *said)))


class HandoffConnections:
    """Mixed into `HandoffSource`, whose taps, observer and recorder these keep."""

    observer: Observer
    profile: Profile
    options: ProxyOptions
    redactor: Optional[Redactor]
    make_tap: Callable[..., ConnectionTap]
    recorder: Callable[[], Optional[Recorder]]
    record_read_fd: int
    held_again: Callable[[int], None]
    _taps: dict[int, ConnectionTap]
    _sent: dict[int, list[int]]
    spool_fd: int
    _last: dict[tuple[int, Direction], tuple[float, int]]
    _unrecorded_values: dict[int, UnrecordedValues]
    _unrecorded: dict[int, int]
    _doubtful: set[int]
    _standing: dict[int, ResumePoint]
    _now: float

    def publish(self, event: Event) -> None:
        raise NotImplementedError

    def _close(self, conn: int, closed: ConnectionClosed) -> None:
        """The connection closed: after everything it forwarded is decoded, as the relay
        reports it (through its tap's publish: an MCP hop's close ends its tool calls in
        flight)."""
        tap = self._taps.pop(conn, None)
        self._unrecorded_values.pop(conn, None)
        self._sent.pop(conn, None)
        for direction in Direction:
            self._last.pop((conn, direction), None)
        publish = self.publish if tap is None else tap.publish
        if tap is not None:  # before the close, the gaps nothing later reported
            self.observer.after_queued(functools.partial(tap.closing, closed.t))
        connections = self._connections_of(closed.route)

        def close() -> None:
            told = closed if tap is None else _told_late(closed, tap)
            if connections is None:
                publish(told)
            else:  # whether the tap was handed a byte is read when the close is decided
                publish(connections.closed(told, tap is not None and tap.carried))

        self.observer.after_queued(close)
        if tap is not None:
            self.observer.forget(tap)

    def _close_killed(self) -> None:
        """The records ended without the session's end (a killed session's spool): each
        connection still open is closed as the relay closes one when the proxy stops, so
        that its frame in progress is reported cut by the kill (`ConnectionTap.closing`), not
        left waiting as if the recording had merely ended."""
        for conn, tap in list(self._taps.items()):
            sent = self._sent.get(conn, [0, 0])
            doubt = " and last ".join(
                f"{self._last[conn, direction][1]} bytes to the {TO[direction]}"
                for direction in (Direction.S2C, Direction.C2S)
                if (conn, direction) in self._last
            )
            closed = ConnectionClosed(
                conn=conn,
                route=tap.route,
                reason=f"{KILLED}; {DOUBT.format(doubt)}" if doubt else KILLED,
                t=self._now,
                bytes_c2s=sent[0],
                bytes_s2c=sent[1],
                abnormal=True,
            )
            for direction in Direction:
                # A stream the kill left open was the proxy's to end, as its stop ends one
                # (`pumps.pump_both`): a frame it cut short is no framing error of its sender's.
                self.observer.after_queued(functools.partial(tap.cut, direction, CUT_BY_KILL))
            self._close(conn, closed)

    def _count(self, conn: int, direction: Direction, size: int, t: Optional[float] = None) -> None:
        """``size`` bytes of ``conn``'s ``direction`` handed on (``t``: in a ``DATA`` record
        of that time, the chunk it is part of: its records share it)."""
        sent = self._sent.get(conn)
        if sent is not None:
            sent[direction is Direction.S2C] += size
        if t is None or self.spool_fd < 0:
            return
        # A spool's last chunk of each way, handed on before its write (`Connection.forward`):
        # a kill may have come between the two (`_close_killed`).
        last_t, last = self._last.get((conn, direction), (t, 0))
        self._last[conn, direction] = (t, last + size if last_t == t else size)

    def _taken_back(self, record: Record, direction: Direction) -> tuple[int, str]:
        """An ``UNDELIVERED_LAST`` record: the last bytes of its connection's ``direction``
        handed on never reached their receiver, as the forwarding side said after them (no
        doubt about them remains). Their size and why. Raises HandoffError for one the
        forwarding side never writes: not ``<size> <why>``, a size of 0, or more bytes than
        that way carried (a spool `recover` was pointed at may hold anything)."""
        said = read_unsent(record.data)
        if said is None or not said[0]:
            text = bytes(record.data[:40]).decode("utf-8", "replace")
            raise HandoffError(
                f"UNDELIVERED_LAST data {text!r} is not '<size> <why>' "
                f"(a size of 1 to {SIZE_DIGITS} digits)"
            )
        sent = self._sent.get(record.conn)
        carried = None if sent is None else sent[direction is Direction.S2C]
        if carried is not None and said[0] > carried:
            raise HandoffError(
                f"UNDELIVERED_LAST takes back {said[0]} bytes, more than the {carried} its "
                f"connection carried that way"
            )
        self._last.pop((record.conn, direction), None)
        return said

    def _learn(self, record: Record, tap: ConnectionTap) -> None:
        """An ``UNRECORDED`` record: its values learned by ``tap`` in order with the chunks,
        or, for one that does not read, the connection's decoding stopped (and said): its
        redaction no longer knows what it must hide."""
        values = self._unrecorded_values.setdefault(record.conn, UnrecordedValues())
        try:
            learned = tuple(values.read(record.data))
        except HandoffError as exc:
            self.observer.after_queued(functools.partial(tap.fail, exc, record.t))
            return
        if learned:
            self.observer.after_queued(functools.partial(tap.learn_unrecorded, learned, record.t))

    @property
    def _tracker(self) -> Optional[ToolCallTracker]:
        """The session's tool-call tracker, when a layer is MCP (`LayerTaps.tracker`)."""
        make_tap = self.make_tap
        return make_tap.tracker if isinstance(make_tap, LayerTaps) else None

    def _connections_of(self, route: str) -> Optional[ConnectionAttribution]:
        make_tap = self.make_tap
        return make_tap.connections_of(route) if isinstance(make_tap, LayerTaps) else None

    def _resume(self, resumption: Resumption) -> None:
        """This process took over from one that died: number the recording's lines on from
        its last one, and take up the connections that are still open where the recording
        left them (their frame indexes go on; an ``open`` line the one before did not write is
        written now; the requests in flight are waited for again: `take_up`). Each direction
        goes on at its ``RESUMED`` record."""
        recorder = self.recorder()
        if recorder is not None and resumption.seq:
            recorder.writer.seq = resumption.seq
        tracker = self._tracker
        if tracker is not None:
            for route_down in resumption.routes_down:
                # Down before this process began: its line is the process before's, or fell
                # in the restart's gap; the calls made until it is back are marked the same.
                down = UpstreamStatus(
                    route=route_down.route, t=route_down.since, up=False, detail=""
                )
                self.observer.after_queued(functools.partial(tracker.upstream, down))
        taps: dict[int, ConnectionTap] = {}
        points: dict[int, ResumePoint] = {}
        for resumed in resumption.connections:
            opened = resumed.opened
            tap = self.make_tap(
                opened.conn, opened.route, self.profile, self.publish, self.options, self.redactor
            )
            if resumed.seen:
                taps[opened.conn] = tap
            else:  # opened while no process observed: nothing of it is in the recording
                tap.resume((0, 0))
                points[opened.conn] = UNKNOWN
                self._taps[opened.conn] = tap
            if resumed.unrecorded:
                self._unrecorded[opened.conn] = resumed.unrecorded
                self._doubtful.add(opened.conn)
        # What was in flight is read here, after ``ready`` (bounded: `inflight_scan`).
        points.update(
            take_up(self.record_read_fd, taps, self.make_tap, self._standing, self.held_again)
        )
        self._standing = {}
        for resumed in resumption.connections:
            if not points[resumed.opened.conn].opened:
                self.observer.submit_event(self.publish, resumed.opened)
        self._taps.update(taps)
