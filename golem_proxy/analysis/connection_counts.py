"""The connections a `FlowTracker` knows and what crossed each (`ConnectionInfo`: its route and
peers, when it opened and closed and why, bytes and frames each way, which observing process
recorded it), counted as the events come (`ConnectionCounts`).

Apart from flows.py, which builds the rows, because a connection's counters belong to no row:
the connections screen and a trace's summary read them, and a streaming reader forgets a
connection once it closed (`ConnectionCounts.forget`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..events import ConnectionClosed, ConnectionOpened, Direction, FrameSeen

__all__ = ["ConnectionCounts", "ConnectionInfo"]


@dataclass(slots=True)
class ConnectionInfo:
    conn: int
    route: str
    client: str = ""
    upstream: str = ""
    opened: float = 0.0
    closed: Optional[float] = None
    reason: str = ""
    abnormal: bool = False
    bytes_c2s: int = 0
    bytes_s2c: int = 0
    frames_c2s: int = 0
    frames_s2c: int = 0
    observer: int = 0
    """Which observing process last recorded a line of it: 0 the first, 1 the one started
    at the first restart (`GapReason.RESTARTED`), …"""

    @property
    def is_open(self) -> bool:
        return self.closed is None


class ConnectionCounts:
    """The connections known, by number (``known``), and how many were known so far, closed
    ones included (``seen``). ``observer``, where a method takes it: the observing process
    recording now (`FlowTracker.observer`)."""

    def __init__(self) -> None:
        self.known: dict[int, ConnectionInfo] = {}
        self.seen = 0
        self._let_go: set[int] = set()
        """The numbers of the connections closed and let go (`forget`)."""

    def opened(self, event: ConnectionOpened, observer: int) -> None:
        info = ConnectionInfo(event.conn, event.route, event.client, event.upstream, event.t)
        info.observer = observer
        self.seen += event.conn not in self.known
        self.known[event.conn] = info
        self._let_go.discard(event.conn)  # a number used again

    def info(self, conn: int, route: str) -> ConnectionInfo:
        """``conn``'s counters, known from now on if they were not (a file cut before its
        open); a connection closed and let go gets counters of its own, closed, known to no
        one."""
        info = self.known.get(conn)
        if info is None:
            info = ConnectionInfo(conn, route)
            if conn in self._let_go:  # closed and let go (without ``keep``): counted there
                info.closed = 0.0
                return info
            self.known[conn] = info
            self.seen += 1
        return info

    def count_bytes(self, conn: int, direction: Direction, size: int, observer: int) -> None:
        info = self.known.get(conn)
        if info is None:
            return
        info.observer = observer
        if direction is Direction.C2S:
            info.bytes_c2s += size
        else:
            info.bytes_s2c += size

    def count_frame(self, frame: FrameSeen, observer: int) -> None:
        info = self.info(frame.conn, frame.route)
        info.observer = observer
        if frame.direction is Direction.C2S:
            info.frames_c2s += 1
            info.bytes_c2s += frame.size
        else:
            info.frames_s2c += 1
            info.bytes_s2c += frame.size

    def closed(self, event: ConnectionClosed) -> None:
        info = self.info(event.conn, event.route)
        info.closed = event.t
        info.reason = event.reason
        info.abnormal = event.abnormal
        info.bytes_c2s = max(info.bytes_c2s, event.bytes_c2s)
        info.bytes_s2c = max(info.bytes_s2c, event.bytes_s2c)

    def forget(self, conn: int) -> None:
        """Let the closed connection ``conn`` go but for its number, so that a line naming it
        later (a damaged file) does not make it one that never closed."""
        self.known.pop(conn, None)
        self._let_go.add(conn)
