"""What a wrapped MCP server wrote to its stderr (`ProcessOutput`), kept as the last lines of
each connection so that a row that failed can say what the server said meanwhile: the
traceback of a server that died at start is the one thing that tells the user why.

Bounded whatever the server writes: a chatty server logs a line per call, and only the last
`STDERR_LINES` lines of `LINE_CHARS` characters are held per connection.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..events import ProcessOutput

if TYPE_CHECKING:
    from .flow import Flow

__all__ = [
    "LINE_CHARS",
    "STDERR_LINES",
    "ServerStderr",
    "ServerStderrs",
    "StderrTail",
    "stderr_heading",
]

STDERR_LINES = 12
"""The most lines of the server's stderr a row carries (the end of a traceback)."""
LINE_CHARS = 400
"""The most characters of one line kept; the rest is cut with ``…``."""


@dataclass(frozen=True, slots=True)
class ServerStderr:
    """The server's stderr as a failed row carries it: its last ``lines``; ``more``: earlier
    lines of the same span were let go (only the last `STDERR_LINES` are kept); ``ended``:
    what ended and left the row unanswered, in words (``the hop closed (the child exited
    with status 1)``), empty when the lines are those written while the row waited."""

    lines: tuple[str, ...]
    more: bool = False
    ended: str = ""


def stderr_heading(stderr: ServerStderr) -> str:
    """The words before the lines: when they were written, how many are shown."""
    when = f"before {stderr.ended}" if stderr.ended else "while the request waited"
    last = f", the last {len(stderr.lines)} lines" if stderr.more else ""
    return f"the server's stderr {when}{last}:"


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


class StderrTail:
    """The last lines one connection's process wrote to its stderr, each with the time of the
    chunk that began it; a line not ended yet is held apart (chunks split lines anywhere)."""

    def __init__(self) -> None:
        self._lines: deque[tuple[float, str]] = deque(maxlen=STDERR_LINES)
        self._written = 0
        self._partial = ""
        self._partial_t = 0.0

    def add(self, t: float, data: bytes) -> None:
        """Fold in a chunk the process wrote at ``t``."""
        text = data.decode("utf-8", "replace")
        if not self._partial:
            self._partial_t = t
        *complete, rest = (self._partial + text).split("\n")
        for line in complete:
            self._keep(self._partial_t, line)
            self._partial_t = t
        # Held whole up to a bound: a process that writes for ever without a newline.
        self._partial = rest[: LINE_CHARS + 1]

    def _keep(self, t: float, line: str) -> None:
        line = line.rstrip("\r")
        if line.strip():  # a blank line says nothing, and takes the place of one that does
            self._lines.append((t, _cut(line)))
            self._written += 1

    def since(self, t: float) -> ServerStderr:
        """The lines begun at or after ``t`` (while a request waited)."""
        kept = [line for at, line in self._lines if at >= t]
        if self._partial.strip() and self._partial_t >= t:
            kept.append(_cut(self._partial))
        full = len(self._lines) == STDERR_LINES and self._written > STDERR_LINES
        return ServerStderr(tuple(kept[-STDERR_LINES:]), more=full and self._lines[0][0] >= t)

    def last(self, ended: str) -> ServerStderr:
        """The last lines, whenever written: what came before the end that left a request
        unanswered (``ended``, in words)."""
        kept = [line for _, line in self._lines]
        if self._partial.strip():
            kept.append(_cut(self._partial))
        more = self._written > len(self._lines) or len(kept) > STDERR_LINES
        return ServerStderr(tuple(kept[-STDERR_LINES:]), more=more, ended=ended)


class ServerStderrs:
    """The stderr of each connection whose process wrote some (the MCP hop), and the rows
    that failed on it given what it said: a call answered with a failure gets the lines
    written while it waited; a request left unanswered by the server's end, the last lines
    before that end (the traceback of a server that died comes just before it exits)."""

    def __init__(self) -> None:
        self._tails: dict[int, StderrTail] = {}

    def add(self, event: ProcessOutput) -> None:
        self._tails.setdefault(event.conn, StderrTail()).add(event.t, event.data)

    def answered(self, flow: Flow) -> None:
        """``flow`` has its answer: a failed one carries what was written while it waited."""
        tail = self._tails.get(flow.conn)
        if tail is None or flow.request is None or flow.outcome is None:
            return
        if flow.outcome.failed:
            written = tail.since(flow.request.t)
            flow.stderr = written if written.lines else None

    def unanswered(self, flow: Flow, ended: str) -> None:
        """``flow`` will have no answer, for ``ended`` (in words): it carries the last lines."""
        tail = self._tails.get(flow.conn)
        if tail is not None:
            written = tail.last(ended)
            flow.stderr = written if written.lines else None

    def forget(self, conn: int) -> None:
        """The connection closed: nothing more is written on it."""
        self._tails.pop(conn, None)
