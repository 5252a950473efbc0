"""What the forwarding side keeps so that a new observing process can take over from one that
died (``--observer child-process``, `ObservingProcess`'s restart): every open connection, where
its streams are at a frame boundary, and what crossed while no observing process was there.

The forwarding process does not decode, but it follows each direction's framing
(`golem_core.boundaries.FrameBoundaries`: length arithmetic, or newlines), so that a new
observing process takes every open connection up at its next frame, exactly, rather than by
guessing where a frame starts. `OpenConnections` is fed by `ObserverLink` with every event and
chunk; while observation is down it counts, per connection and direction, the bytes that
crossed, and the connections that came and went unseen. `Resumption` is what the new process is
told first (a ``RESUME`` record, `OpenConnections.hand_over`); each direction then goes on with
a ``RESUMED`` record once it reaches a frame boundary, saying how many bytes crossed unobserved
before it.
"""

from __future__ import annotations

import collections
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable, Optional, Union

from golem_core.boundaries import FrameBoundaries
from golem_core.framing import Framing

from ..events import ConnectionClosed, ConnectionOpened, RouteDown
from .handoff import HandoffWriter, Kind
from .link_gone import Gone

__all__ = ["ENDED_KEPT", "OpenConnections", "ResumedConnection", "Resumption"]

ENDED_KEPT = 4096
"""Connections closed while observed that are kept (`OpenConnections.stop`: the last ones,
whose lines the observing process that stops may not have written yet)."""


@dataclass(frozen=True)
class ResumedConnection:
    """A connection open when observation stopped (or opened since), taken up again."""

    opened: ConnectionOpened
    unrecorded: int
    """Bytes of it the observing process that died had been handed and had not acknowledged:
    at most this many more than the ``RESUMED`` records count may be missing from the
    recording (it may have written some of their lines before it died)."""
    seen: bool = True
    """The process that died knew it (False: it opened while no process observed, and the
    recording holds nothing of it)."""


@dataclass(frozen=True)
class Resumption:
    """The first record a restarted observing process reads (``RESUME``)."""

    connections: tuple[ResumedConnection, ...]
    seq: int
    """The recording's last line (the restart line); the new process numbers from the next.
    0: no recording."""
    routes_down: tuple[RouteDown, ...] = ()
    """The routes not listening now (their upstream down), each since when: the new process's
    tool-call tracker marks the calls made until they are back (`ToolCallTracker.upstream`)."""


class _Tracked:
    """One open connection as `OpenConnections` follows it."""

    __slots__ = (
        "bounds",
        "closed",
        "down",
        "ended",
        "first",
        "opened",
        "seen",
        "sizes",
        "unrecorded",
        "waiting",
    )

    def __init__(self, opened: ConnectionOpened, framing: Framing, first: int = -1) -> None:
        self.opened = opened
        self.first = first
        """The pipe's offset at which its first record was handed on (-1: before the last
        restart, or never handed on)."""
        self.sizes = [0, 0]
        """Bytes of each direction forwarded."""
        self.bounds = (FrameBoundaries(framing), FrameBoundaries(framing))
        self.down = [0, 0]
        """Bytes of each direction forwarded unobserved, not yet said in a ``RESUMED``."""
        self.ended = [False, False]
        self.waiting = [False, False]
        """Taken up again, but the direction is not at a frame boundary yet."""
        self.closed: Optional[ConnectionClosed] = None
        """It closed while observation was down (its close is handed on at the restart)."""
        self.unrecorded = 0
        self.seen = False
        """It was open when observation stopped (the observing process knew it)."""


Chunk = Union[bytes, memoryview]


class OpenConnections:
    """Every open connection's framing state, and what crosses while observation is down."""

    def __init__(self, framings: Mapping[str, Framing], default: Framing) -> None:
        self.framings = dict(framings)
        """Each route's framing (an MCP hop's differs from the relay's routes)."""
        self.default = default
        self.down = False
        """Observation is down: what crosses is counted, not handed on."""
        self.gone: list[Gone] = []
        """Connections not in the recording since observation stopped: opened and closed
        while it was down, or closed before it stopped while their records were not
        acknowledged (`stop`)."""
        self.for_good = False
        """Observation stopped for good (`stopped_for_good`): no close waits for a restart."""
        self._open: dict[int, _Tracked] = {}
        self._ended: collections.OrderedDict[int, _Tracked] = collections.OrderedDict()
        """Connections closed while observed, the last `ENDED_KEPT`: at a stop, those whose
        records were not acknowledged are not (all) in the recording."""

    def __contains__(self, conn: int) -> bool:
        return conn in self._open

    def __len__(self) -> int:
        """Connections followed: open, or open when observation stopped and closed since."""
        return len(self._open)

    @property
    def unseen(self) -> int:
        """Connections not in the recording since observation stopped (`gone`)."""
        return sum(not gone.tail for gone in self.gone)

    def opened(self, event: ConnectionOpened, first: int = -1) -> None:
        """``event``'s connection is followed; ``first``: the pipe's offset its first record
        is handed on at (-1: none, observation is down)."""
        framing = self.framings.get(event.route, self.default)
        self._open[event.conn] = _Tracked(event, framing, first)

    def closed(self, event: ConnectionClosed) -> bool:
        """The connection closed; True when its close waits for the restart (it was open when
        observation stopped), False when it is gone (said now, or never seen)."""
        tracked = self._open.get(event.conn)
        if tracked is None:
            return False
        if self.down and tracked.seen and not self.for_good:
            tracked.closed = event
            return True
        del self._open[event.conn]
        if self.down:
            self.gone.append(_gone(tracked))
        return False

    def stop(self, unrecorded: Mapping[int, int], acked: int = 0) -> None:
        """Observation stopped; ``unrecorded``: each connection's bytes handed on and not
        acknowledged, ``acked``: the pipe's offset up to which everything was. A connection
        closed before it whose records were not acknowledged is `gone`: all of it when its
        first record lies past ``acked``, else its last bytes (``tail``)."""
        self.down = True
        for conn, tracked in self._open.items():
            tracked.seen = True
            tracked.unrecorded = unrecorded.get(conn, 0)
        for conn, tracked in self._ended.items():
            left = unrecorded.get(conn, 0)
            if left:
                whole = tracked.first >= acked
                self.gone.append(_gone(tracked, left, tail=not whole))
        self._ended.clear()

    def stopped_for_good(self) -> None:
        """No observing process will take the connections up: they are followed only for
        `answers_waiting`, and each is forgotten at its close (those that closed since the
        stop at once)."""
        self.for_good = True
        self.closes()

    def while_down(self, conn: int, direction: int, data: Chunk) -> None:
        """A chunk (``b""``: the direction ended) forwarded while observation is down."""
        tracked = self._open.get(conn)
        if tracked is None:
            return
        if data:
            tracked.bounds[direction].feed(data)
            tracked.down[direction] += len(data)
            tracked.sizes[direction] += len(data)
        else:
            tracked.ended[direction] = True

    def missed(self, conn: int, direction: int, size: int) -> None:
        """``size`` bytes already followed (`follow`) reached no observing process after all:
        count them with what crossed while observation was down."""
        tracked = self._open.get(conn)
        if tracked is not None:
            tracked.down[direction] += size

    def unseen_allowed(self, conn: int, direction: int) -> int:
        """How many of the next bytes of ``conn``'s ``direction`` may be handed on unseen
        (`skip`): the known rest of a frame's body, when the direction does not wait for a
        boundary (none for a connection not followed: nothing is known of it)."""
        tracked = self._open.get(conn)
        if tracked is None:
            return 0
        return 0 if tracked.waiting[direction] else tracked.bounds[direction].body_left

    def answers_waiting(self, conn: int) -> Optional[bool]:
        """Whether requests of ``conn``'s client wait for answers: more of its frames crossed
        whole than the upstream's, on a protocol whose every client frame is a request and
        every server frame an answer (GOLEM). None when not known: a connection not
        followed, or one whose frames are not counted (lines: `FrameBoundaries.frames`)."""
        tracked = self._open.get(conn)
        if tracked is None:
            return None
        asked, answered = (bounds.frames for bounds in tracked.bounds)
        if asked is None or answered is None:
            return None
        return asked > answered

    def cut(self, conn: int, direction: int) -> Optional[int]:
        """Whether what ``conn``'s ``direction`` carried ends inside a frame (its stream ends
        there: a ``CUT`` record): the bytes of the frame still to come (0: not known, a line
        or a split header); None at a frame boundary, or for a connection not followed."""
        tracked = self._open.get(conn)
        if tracked is None or tracked.bounds[direction].at_boundary:
            return None
        return tracked.bounds[direction].body_left

    def skip(self, conn: int, direction: int, size: int) -> None:
        """``size`` bytes of a frame's body handed on unseen (moved by the kernel, at most
        `unseen_allowed`): followed as `follow` follows a chunk."""
        tracked = self._open.get(conn)
        if tracked is not None:
            tracked.bounds[direction].skip(size)
            tracked.sizes[direction] += size

    def follow(self, conn: int, direction: int, data: Chunk) -> Optional[tuple[int, int]]:
        """A chunk handed on as usual: follow its framing. Returns None, or, when the direction
        waits for a frame boundary since the restart, (bytes of ``data`` that are still the
        frame in progress, bytes unobserved before the boundary) with -1 for the first when
        the whole chunk is (then nothing of it is handed on)."""
        tracked = self._open.get(conn)
        if tracked is None:
            return None
        bounds = tracked.bounds[direction]
        tracked.sizes[direction] += len(data)
        if not tracked.waiting[direction]:
            bounds.feed(data)
            return None
        rest = bounds.rest_of_frame(data) if data else 0
        bounds.feed(data)
        if rest is None:
            tracked.down[direction] += len(data)
            return -1, 0
        lost = tracked.down[direction] + rest
        tracked.down[direction] = 0
        tracked.waiting[direction] = False
        return rest, lost

    def resume(self) -> tuple[list[ResumedConnection], list[tuple[int, int, int, bool]]]:
        """Observation is up again: the connections to take up, and for each direction at a
        frame boundary now (or ended, or closed), (conn, direction, bytes unobserved, ended)
        to hand on as ``RESUMED`` at once. The other directions wait for their boundary
        (`follow`). Connections that closed meanwhile are forgotten after this (their closes
        are `closes`)."""
        resumed: list[ResumedConnection] = []
        now: list[tuple[int, int, int, bool]] = []
        for conn, tracked in self._open.items():
            resumed.append(ResumedConnection(tracked.opened, tracked.unrecorded, tracked.seen))
            for direction in (0, 1):
                done = tracked.closed is not None or tracked.ended[direction]
                if done or tracked.bounds[direction].at_boundary:
                    now.append((conn, direction, tracked.down[direction], tracked.ended[direction]))
                    tracked.down[direction] = 0
                else:
                    tracked.waiting[direction] = True
            tracked.ended = [False, False]
            tracked.unrecorded = 0
            tracked.first = -1  # the pipe's offsets start again
        self.down = False
        self.gone = []
        return resumed, now

    def hand_over(
        self,
        writer: HandoffWriter,
        seq: int,
        routes_down: tuple[RouteDown, ...],
        now: Callable[[], float],
    ) -> tuple[Resumption, float]:
        """Observation is up again, through ``writer`` to a new observing process: first the
        open connections (a ``RESUME`` record; ``seq``: the recording's last line), then each
        direction at a frame boundary now (``RESUMED``, with the bytes that crossed unobserved,
        and ``END`` for one that ended) and the closes that waited, all at ``now()``. Returns
        what it was told, and when; the other directions go on from their next boundary
        (`follow`)."""
        connections, at_boundary = self.resume()
        resumption = Resumption(tuple(connections), seq, routes_down)
        t = now()
        writer.event(Kind.RESUME, 0, 0, t, pickle.dumps(resumption, pickle.HIGHEST_PROTOCOL))
        for conn, direction, lost, ended in at_boundary:
            writer.resumed(conn, direction, t, lost)
            if ended:
                writer.event(Kind.END, conn, direction, t)
        for closed in self.closes():
            writer.event(Kind.CLOSED, closed.conn, 0, t, pickle.dumps(closed))
        return resumption, t

    def follow_event(
        self, event: Union[ConnectionOpened, ConnectionClosed], writer: HandoffWriter
    ) -> None:
        """A connection opened (followed from now on) or closed: while observation is down, its
        close waits for the restart (`closes`); else its directions still waiting for a frame
        boundary say through ``writer`` the bytes that crossed unobserved (``RESUMED``), and it
        is forgotten."""
        if isinstance(event, ConnectionOpened):
            self.opened(event, -1 if self.down else writer.handed)
        elif self.down:
            self.closed(event)
        else:
            for direction, lost in self.waiting(event.conn):
                writer.resumed(event.conn, direction, event.t, lost)
            tracked = self._open.pop(event.conn, None)
            if tracked is not None and not self.for_good:
                self._ended[event.conn] = tracked
                if len(self._ended) > ENDED_KEPT:
                    self._ended.popitem(last=False)

    def known(self) -> tuple[tuple[int, str], ...]:
        """While observation is down: the connections the process that died knew (connection,
        route), whose place in the recording the next one looks up before it is ready."""
        return tuple((conn, t.opened.route) for conn, t in self._open.items() if t.seen)

    def closes(self) -> list[ConnectionClosed]:
        """The closes that waited for the restart, once; their connections are forgotten."""
        closes = [t.closed for t in self._open.values() if t.closed is not None]
        for event in closes:
            del self._open[event.conn]
        return closes

    def waiting(self, conn: int) -> list[tuple[int, int]]:
        """Directions of ``conn`` still waiting for a frame boundary (each with its bytes
        unobserved), now no longer waiting: its close or the end of it came first."""
        tracked = self._open.get(conn)
        if tracked is None:
            return []
        found = []
        for direction in (0, 1):
            if tracked.waiting[direction]:
                found.append((direction, tracked.down[direction]))
                tracked.waiting[direction] = False
                tracked.down[direction] = 0
        return found

    def forget(self, conn: int) -> None:
        self._open.pop(conn, None)


def _gone(tracked: _Tracked, unacknowledged: int = 0, *, tail: bool = False) -> Gone:
    c2s, s2c = tracked.bounds
    return Gone(
        tracked.opened.conn,
        tracked.opened.route,
        (tracked.sizes[0], tracked.sizes[1]),
        (c2s.frames, s2c.frames),
        unacknowledged,
        tail,
    )
