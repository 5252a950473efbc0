"""What an observing process that died knew of the MCP sessions it followed (``golem-proxy
mcp``), read back from the recording by the one that takes over (`golem_proxy.live.take_up`):
whether each session's ``initialize`` was sent and answered, and the tools the last
``tools/list`` answer on the route listed. The MCP layer's rules then go on where they were
(live/mcp_rules_live.py): a ``tools/call`` after the restart is not taken for one sent before
``initialize``, and its arguments are checked against the tools listed.

The file is read as `inflight_scan` reads it: backwards from its end, with `os.pread` only,
in blocks of `inflight_scan.BLOCK`, at most `inflight_scan.LOOK_BACK` bytes, looking only at
the members a line starts with (an exchange line is short; a frame line's message is never
looked at while scanning). Only the one answer line of the last ``tools/list`` is decoded, by
the reader's own code (`LineDecoder`), when it is shorter than `LISTING_LIMIT`. The scan stops
once each session is settled (its ``initialize`` answered, or its ``open`` line reached) and
the listing is found; what it did not find within its bound is unknown (`UNKNOWN`): the rules
that need it stay silent for that session (never a false error). So is a session's start
where an ``unobserved`` line of it (an earlier restart, the observer behind, ...) comes after
what the recording holds of its ``initialize``: the ``initialize``, or its answer, may have
crossed in that gap, and the recording's lack of it says nothing.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Optional

from golem_core.messages import Response
from golem_core.profiles import MCP

from ..events import FrameSeen, GapReason
from .inflight_scan import BLOCK, LOOK_BACK, blocks_back, line_end
from .line_events import LineDecoder
from .schema import RecordingError

__all__ = [
    "ANSWERED",
    "LISTING_LIMIT",
    "NEVER",
    "SENT",
    "UNKNOWN",
    "UNKNOWN_START",
    "McpKnown",
    "SessionStart",
    "mcp_known",
]

LISTING_LIMIT = 16 << 20
"""A ``tools/list`` answer line longer than this is not decoded (its tools are not known)."""

ANSWERED = "answered"
"""The session's ``initialize`` was answered (`SessionStart.answered_at`: when)."""
SENT = "sent"
"""Its ``initialize`` was sent, and no answer to it is in the recording."""
NEVER = "never"
"""The recording holds the session whole from its ``open`` line, and no ``initialize`` in it."""
UNKNOWN = "unknown"
"""The scan's bound came first, or a gap in what was observed of the session: what it did
before is not known."""

_STRING = rb'"(?:[^"\\\n]|\\.)*"'
_OK_ANSWERS = frozenset((b"ok", b"error-in-result", b"unsuccessful"))
"""An exchange's outcomes whose answer is a success envelope (a listing of tools)."""


@dataclass(frozen=True)
class SessionStart:
    """Where one MCP session's start stands in the recording."""

    initialize: str
    """`ANSWERED`, `SENT`, `NEVER` or `UNKNOWN`."""
    answered_at: Optional[float] = None


UNKNOWN_START = SessionStart(UNKNOWN)


@dataclass(frozen=True)
class McpKnown:
    """What the recording holds of an MCP route's sessions."""

    sessions: dict[int, SessionStart] = field(default_factory=dict)
    tools: Optional[Any] = None
    """The result of the last ``tools/list`` answered on the route (None: none found, or it
    could not be read)."""


class _Scan:
    __slots__ = ("gapped", "listing", "listing_at", "sessions", "settled")

    def __init__(self, conns: Collection[int]) -> None:
        self.sessions: dict[int, SessionStart] = dict.fromkeys(conns, UNKNOWN_START)
        self.settled: set[int] = set()
        self.gapped: set[int] = set()
        """Sessions with a gap in what was observed after the last of their start found."""
        self.listing: Optional[tuple[int, int]] = None
        """The last ``tools/list`` exchange found: its answer's conn and ``n``."""
        self.listing_at: Optional[int] = None
        """Where its answer's line starts, once found (-1: the listing is settled unknown)."""

    @property
    def done(self) -> bool:
        return len(self.settled) == len(self.sessions) and self.listing_at is not None


def _pattern(route: str) -> re.Pattern[bytes]:
    """A line's start (after the newline before it): an ``open`` line (groups ``oc``), an
    exchange line of ``initialize`` or ``tools/list`` on ``route`` (``t``, ``xc``, ``resp``,
    ``xm``, ``outcome``), an ``unobserved`` line on ``route`` (``uc``, ``reason``), or a
    frame line on ``route`` (``fc``, ``dir``, ``n``, and ``init`` for a request of
    ``initialize``)."""
    name = re.escape(json.dumps(route, ensure_ascii=False).encode())
    return re.compile(
        rb'\n\{"seq":\d+,"t":(?P<t>[^,"\n]+),"kind":"(?:'
        rb'open","conn":(?P<oc>\d+),'
        rb'|exchange","conn":(?P<xc>\d+),"route":' + name + rb',"req":\d+,"resp":(?P<resp>\d+),'
        rb'"method":"(?P<xm>initialize|tools/list)","status":' + _STRING + rb',"latency":'
        rb'[^,"\n]+,"outcome":"(?P<outcome>[a-z-]+)"'
        rb'|unobserved","conn":(?P<uc>\d+),"route":' + name + rb',"dir":"(?:c2s|s2c)",'
        rb'"reason":"(?P<reason>[a-z-]+)"'
        rb'|frame","conn":(?P<fc>\d+),"route":' + name + rb',"dir":"(?P<dir>c2s|s2c)",'
        rb'"n":(?P<n>\d+),"size":\d+,"type":"[a-z]+"'
        rb'(?:,"id":(?:' + _STRING + rb'|[^,"\n]+))?(?:,"method":(?P<init>"initialize")[,}])?'
        rb")"
    )


def mcp_known(
    fd: int,
    route: str,
    conns: Collection[int],
    *,
    look_back: int = LOOK_BACK,
    block: int = BLOCK,
) -> McpKnown:
    """What the recording open on ``fd`` (read with `os.pread` only) holds of the MCP
    sessions ``conns`` on ``route`` and of the tools listed there; see the module docstring.
    An unfinished last line is ignored. Raises OSError."""
    scan = _Scan(conns)
    end = line_end(fd, block)
    pattern = _pattern(route)
    for start, data in blocks_back(fd, end, look_back, block):
        for match in reversed(list(pattern.finditer(data))):
            _note(scan, match, start)
            if scan.done:
                break
        if scan.done:
            break
    tools = None
    if scan.listing_at is not None and scan.listing_at >= 0:
        tools = _listing(fd, scan.listing_at, end)
    return McpKnown(scan.sessions, tools)


def _note(scan: _Scan, match: re.Match[bytes], start: int) -> None:
    """Note one line the scan found (the lines after it are noted already)."""
    if match.group("oc") is not None:
        conn = int(match.group("oc"))
        if conn in scan.sessions and conn not in scan.settled:
            if scan.sessions[conn].initialize == UNKNOWN and conn not in scan.gapped:
                scan.sessions[conn] = SessionStart(NEVER)
            scan.settled.add(conn)
        return
    if match.group("uc") is not None:
        conn = int(match.group("uc"))
        # Requests let go were seen (only their answers are not waited for): no gap.
        if match.group("reason") != GapReason.EVICTED.value.encode() and (
            scan.sessions.get(conn) == UNKNOWN_START and conn not in scan.settled
        ):
            scan.gapped.add(conn)
        return
    if match.group("xc") is not None:
        conn = int(match.group("xc"))
        if match.group("xm") == b"initialize":
            if conn in scan.sessions and conn not in scan.settled:
                at = _number(match.group("t"))
                scan.sessions[conn] = SessionStart(ANSWERED if at is not None else UNKNOWN, at)
                scan.settled.add(conn)
        elif scan.listing is None and match.group("outcome") in _OK_ANSWERS:
            scan.listing = (conn, int(match.group("resp")))
        return
    conn = int(match.group("fc"))
    if match.group("dir") == b"c2s":
        if (
            match.group("init") is not None
            and scan.sessions.get(conn) == UNKNOWN_START
            and conn not in scan.gapped  # its answer may have crossed in the gap
        ):
            scan.sessions[conn] = SessionStart(SENT)
    elif scan.listing == (conn, int(match.group("n"))) and scan.listing_at is None:
        scan.listing_at = start + match.start() + 1


def _number(text: bytes) -> Optional[float]:
    try:
        return float(text)
    except ValueError:
        return None


def _listing(fd: int, at: int, end: int) -> Optional[Any]:
    """The result of the ``tools/list`` answer whose line starts at ``at``; None when it is
    too long, does not read, or is no success (or a skeleton: a payload too large to parse)."""
    data = os.pread(fd, min(LISTING_LIMIT + 1, end - at), at)
    newline = data.find(b"\n")
    if newline < 0:
        return None
    try:
        event = LineDecoder(MCP).decode(data[: newline + 1])
    except (RecordingError, ValueError, RecursionError):
        return None
    if not isinstance(event, FrameSeen) or event.elided:
        return None
    message = event.message
    return message.result if isinstance(message, Response) else None
