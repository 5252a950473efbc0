"""Watching a recording's times (``t``) as it is read: where they first go back.

``t`` is the session's monotonic clock, which starts at 0 and never runs backwards (a
negative ``t`` is refused like any member out of range). The lines of a file are not in time
order, though: bytes are stamped when they are read and their frames published when the tap
decodes them, in the pauses of the traffic (later when it falls behind), after lines published
at once (a connection opened meanwhile); a request the proxy held (``--fault delay``,
``--intercept``) keeps the time the client sent it and is written when it is let go. What does
not go back is one direction of one connection: its bytes are read, stamped and decoded in
order, and a connection's later frames wait behind a held one. So `TimeWatch` follows the
stream lines (``frame``, ``frame-error``, ``discarded``) of each connection and direction, until
the connection's ``close`` line, and keeps the first place one goes back, as `SeqWatch` does for
the line numbers: lines out of order, or times changed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["TimeStep", "TimeWatch"]

_STREAM_KINDS = frozenset({"frame", "frame-error", "discarded"})
_CLOSE = "close"
_C2S, _S2C = "c2s", "s2c"


@dataclass(frozen=True)
class TimeStep:
    """Where a stream's times first went back: the line, the stream (connection and
    direction), its time before the line and the line's."""

    line: int
    conn: object
    direction: object
    before: float
    after: float

    def describe(self) -> str:
        """``t goes back from 12.500000 to 3.250000 s in connection 4's c2s stream (…)``."""
        return (
            f"t goes back from {self.before:.6f} to {self.after:.6f} s in connection "
            f"{self.conn}'s {self.direction} stream (lines out of order, or times changed)"
        )


class TimeWatch:
    """Told each event line's ``t``, kind, ``conn`` and ``dir`` in file order (members already
    checked); keeps the first place a stream's time goes back and how many places do. Holds
    one time per direction of each connection not closed yet."""

    def __init__(self) -> None:
        self.first: Optional[TimeStep] = None
        self.count = 0
        self._latest: dict[tuple[object, object], float] = {}

    def see(self, t: float, kind: object, conn: object, direction: object, line: int) -> None:
        if kind in _STREAM_KINDS:
            key = (conn, direction)
            before = self._latest.get(key, 0.0)
            if t >= before:
                self._latest[key] = t
            else:
                self._went_back(line, conn, direction, before, t)
        elif kind == _CLOSE:
            self._latest.pop((conn, _C2S), None)
            self._latest.pop((conn, _S2C), None)

    def see_exchange(self, conn: int, request: float, response: float, line: int) -> None:
        """The times of a whole exchange's frames (request, then answer on the next line) on
        connection ``conn``: `see` for each, in one step when neither goes back."""
        latest = self._latest
        if latest.get((conn, _C2S), 0.0) <= request and latest.get((conn, _S2C), 0.0) <= response:
            latest[(conn, _C2S)] = request
            latest[(conn, _S2C)] = response
            return
        self.see(request, "frame", conn, _C2S, line)
        self.see(response, "frame", conn, _S2C, line + 1)

    def _went_back(
        self, line: int, conn: object, direction: object, before: float, after: float
    ) -> None:
        self.count += 1
        if self.first is None:
            self.first = TimeStep(line, conn, direction, before, after)
