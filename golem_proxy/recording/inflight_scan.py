"""What was in flight on a connection when the observing process recording it died: the
requests whose frame lines are in the recording (``expects_answer``) and that no later frame
line of the connection answers (``answers``), both ways (a JSON-RPC server's requests too).
A new observing process holds them again (`golem_proxy.live.take_up`), so that an answer
that comes after the restart is paired with its request as if no process had died.

The file is read backwards from its end with `os.pread` only (the descriptor's offset is
shared with the writer and never moves), in blocks of `BLOCK`. One regular expression finds,
in each block, the ``open`` and ``frame`` lines of the connections asked about, reading only a
line's first members: ``conn``, ``dir``, ``n``, ``id``, ``method``, ``tool_calls`` and the
pairing members, which the writer puts before the message (`frame_lines.frame_members`). The
message itself (``msg`` or ``raw``, last) is never looked at while scanning, so a 16 MiB
answer costs a search through its bytes for the next line start, never a decode. Only the
lines of the requests found in flight (and of the notifications whose method the caller names:
MCP's ``notifications/cancelled``) are decoded, by the reader's own code (`LineDecoder`), into
the events the dead process had published.

The scan stops at each connection's ``open`` line (nothing older can be in flight), and in
any case after `LOOK_BACK` bytes or `LOOK_BACK_FRAMES` frame lines of the connections asked
about (on a 2-core test machine, either is ~0.1 s: forwarding waits for this process while it
scans, once more than the link's 1 MiB is handed on). A request older than that is not held
again: its answer, if it comes, is no orphan but is not paired (`requests_lost`: until an
answer pairs with a request recorded after the restart), as for a request the dead process was
handed and never recorded.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from golem_core.profiles import Profile

from ..events import Direction, FrameSeen
from .line_events import LineDecoder
from .schema import RecordingError

__all__ = [
    "BLOCK",
    "LOOK_BACK",
    "LOOK_BACK_FRAMES",
    "NOTHING",
    "READ_LIMIT",
    "InFlight",
    "blocks_back",
    "in_flight",
    "line_end",
]

BLOCK = 1 << 20
"""Bytes read at a time, going back."""
LOOK_BACK = 64 << 20
"""Bytes of the file, from its end, the scan reads at most (a block more at worst)."""
LOOK_BACK_FRAMES = 65_536
"""Frame lines of the connections asked about (of any, past `NAMED_CONNS` of them) the scan
looks at at most (the end of the block in which it reaches them)."""
HEAD_LIMIT = 64 << 10
"""Bytes of a line's start kept when a block ends inside them: a line whose members before its
message run longer than that, across a block's start, cannot be read (see `InFlight.whole`)."""
READ_LIMIT = 1 << 20
"""A request line longer than this is not decoded: the request is in `InFlight.unread`, with
its id. Requests are small (answers are the large frames); the live tap keeps a message over
1 MiB without its long strings, which a line cannot be decoded into without reading it whole."""
NAMED_CONNS = 64
"""Up to this many connections asked about, the scan's expression names them."""
ID_LIMIT = 1024
"""An id longer than this (in the line) is not read back for an unread request."""

# A JSON string as the writer writes it (on one line).
_STRING = rb'"(?:[^"\\\n]|\\.)*"'
_DIRECTIONS = {b"c2s": Direction.C2S, b"s2c": Direction.S2C}
_OTHER = {b"c2s": b"s2c", b"s2c": b"c2s"}


@dataclass(frozen=True)
class InFlight:
    """What the recording shows in flight on one connection."""

    frames: tuple[FrameSeen, ...] = ()
    """The requests in flight (``expects_answer``), with the notifications of the methods asked
    about sent after the first of them, in the order of the file, as the reader reads them."""
    unread: tuple[tuple[Direction, Any], ...] = ()
    """Requests in flight whose lines were not decoded (too long, or damaged): the direction
    each was sent, and its id (None when unreadable)."""
    whole: bool = False
    """The scan reached the connection's ``open`` line: no request older than those is in
    flight. False when a bound stopped it first (or a line it could not read)."""


NOTHING = InFlight()
"""Nothing in flight (and nothing known of what was)."""


class _Found:
    """What the scan found of one connection so far (the last lines first: it goes back)."""

    __slots__ = ("answered", "asks", "cut", "notices", "whole")

    def __init__(self) -> None:
        self.answered: set[tuple[bytes, bytes]] = set()
        """The requests answered by a line seen already: their ``dir`` and ``n``."""
        self.asks: list[tuple[int, Optional[bytes], bytes, Optional[bytes]]] = []
        """The requests in flight: where their line starts, the line when it was at hand,
        their ``dir`` and ``id`` (as in the line)."""
        self.notices: list[tuple[int, Optional[bytes]]] = []
        self.cut = False
        """A line of the connection could not be read: nothing before it is taken."""
        self.whole = False


def _pattern(conns: Collection[int], methods: Collection[str]) -> re.Pattern[bytes]:
    """A line's start (after the newline before it), for the ``open`` and ``frame`` lines of
    ``conns``. Groups: 1 ``open``; 2 ``conn``; for a frame line whose members before its
    message are all there as the writer writes them, 3 ``dir``, 4 ``n``, 5 ``id`` (JSON),
    6 ``method`` (when one of ``methods``), 7 ``expects_answer`` and 8 ``answers``."""
    # Few connections: the others' lines are skipped by the regular expression itself (its
    # alternatives are tried one by one, so many connections take any number, then a look-up).
    alternatives = (
        b"|".join(str(conn).encode() for conn in sorted(conns))
        if len(conns) <= NAMED_CONNS
        else rb"\d+"
    )
    named = b"|".join(re.escape(json.dumps(m, ensure_ascii=False).encode()) for m in methods)
    return re.compile(
        rb'\n\{"seq":\d+,"t":[^,"\n]+,"kind":"(?:(open)|frame)","conn":(' + alternatives + rb"),"
        rb'(?:"route":' + _STRING + rb',"dir":"(c2s|s2c)","n":(\d+),"size":\d+,"type":"[a-z]+"'
        rb'(?:,"id":(' + _STRING + rb'|[^,"\n]+))?'
        rb'(?:,"method":(?:(' + (named or rb"(?!)") + rb")|" + _STRING + rb"))?"
        rb'(?:,"tool_calls":\[(?:[^\]"\n]|' + _STRING + rb")*\])?"
        rb'(?:,"expects_answer":(true))?(?:,"answers":(\d+))?(?:,"orphan":true)?'
        rb'(?:,"undelivered":' + _STRING + rb')?(?:,"delivered_bytes":\d+)?'
        rb'(?:,"routes_down":\[(?:[^\]"\n]|' + _STRING + rb")*\])?"
        rb'(?:,"late":true)?(?:,"answer_of":\{(?:[^}"\n]|' + _STRING + rb")*\})?"
        rb'(?:,"held_under":true)?'
        # What may follow those: the message, the paths redacted, or the skeleton of a
        # payload too large to parse (``elided`` first).
        rb',"(?:msg|raw|redacted|elided)":)?'
    )


def in_flight(
    fd: int,
    conns: Mapping[int, Profile],
    *,
    methods: Collection[str] = (),
    look_back: int = LOOK_BACK,
    look_back_frames: int = LOOK_BACK_FRAMES,
    block: int = BLOCK,
) -> dict[int, InFlight]:
    """What the recording open on ``fd`` shows in flight on each of ``conns`` (each decoded
    with its route's profile), read with `os.pread` only (the descriptor's offset does not
    move). ``methods``: the notifications to return too (see `InFlight.frames`). An unfinished
    last line is ignored. Raises OSError."""
    if not conns:
        return {}
    found = {conn: _Found() for conn in conns}
    end = line_end(fd, block)
    pattern = _pattern(conns, methods)
    looked, left = 0, len(found)
    for start, data in blocks_back(fd, end, look_back, block):
        if not left or looked >= look_back_frames:
            break
        for match in reversed(list(pattern.finditer(data))):
            looked += 1
            conn = found.get(int(match.group(2)))
            if conn is None or conn.whole or conn.cut:
                continue
            if _note(conn, match, data, start):
                left -= 1
    return {
        number: _decoded(fd, number, conn, conns[number], end) for number, conn in found.items()
    }


def line_end(fd: int, block: int = BLOCK) -> int:
    """Where the file's last complete line ends (what follows it is being written, or was
    cut short)."""
    pos = os.fstat(fd).st_size
    size = min(HEAD_LIMIT, block)
    while pos > 0:
        start = max(0, pos - size)
        newline = os.pread(fd, pos - start, start).rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        pos, size = start, block
    return 0


def blocks_back(
    fd: int, end: int, look_back: int, block: int = BLOCK
) -> Iterator[tuple[int, bytes]]:
    """The file's bytes before ``end``, a block at a time from the end backwards, at most
    ``look_back`` of them: each ``(start, data)``, ``data`` the block read at ``start`` with
    the start of the line it cut short after it (up to `HEAD_LIMIT`), so that a line's first
    members are whole in the block where it starts. Stops where the file shrank under the
    scan (what is left is unsure)."""
    pos, carry = end, b""
    while pos > 0 and end - pos < look_back:
        size = min(block, pos)
        start = pos - size
        data = os.pread(fd, size, start)
        if len(data) != size:
            return
        data += carry
        yield start, data
        newline = data.find(b"\n")
        carry = data[: newline if newline >= 0 else HEAD_LIMIT][:HEAD_LIMIT]
        pos = start


def _note(conn: _Found, match: re.Match[bytes], data: bytes, start: int) -> bool:
    """Note the line ``match`` found of ``conn`` (the lines after it are noted already);
    returns whether the scan is done with ``conn``: it reached its ``open`` line, or a line of
    it that cannot be read (an answer in it would be unknown)."""
    if match.group(1) is not None:
        conn.whole = True
        return True
    direction = match.group(3)
    if direction is None:
        conn.cut = True
        return True
    at = match.start() + 1
    answers = match.group(8)
    if answers is not None:
        conn.answered.add((_OTHER[direction], answers))
    elif match.group(7) is not None:
        asked = (direction, match.group(4))
        if asked in conn.answered:
            conn.answered.discard(asked)
        else:
            conn.asks.append((start + at, _at_hand(data, at), direction, match.group(5)))
    elif match.group(6) is not None:
        conn.notices.append((start + at, _at_hand(data, at)))
    return False


def _at_hand(data: bytes, at: int) -> Optional[bytes]:
    """The line from ``at`` (its newline included) when ``data`` holds it, else None; empty
    when it is longer than `READ_LIMIT` (not to be decoded)."""
    newline = data.find(b"\n", at)
    if newline < 0:
        return None
    return data[at : newline + 1] if newline - at < READ_LIMIT else b""


def _decoded(fd: int, number: int, conn: _Found, profile: Profile, end: int) -> InFlight:
    """What was found in flight on connection ``number``, its lines decoded."""
    if not conn.asks:
        return InFlight(whole=conn.whole)
    first = conn.asks[-1][0]  # the oldest: the scan went back
    lines: list[tuple[int, Optional[bytes], Optional[bytes], Optional[bytes]]] = list(conn.asks)
    lines += [(at, line, None, None) for at, line in conn.notices if at > first]
    lines.sort(key=lambda found: found[0])
    decoder = LineDecoder(profile)
    frames: list[FrameSeen] = []
    unread: list[tuple[Direction, Any]] = []
    for at, line, direction, ident in lines:
        frame = _frame(decoder, number, line if line is not None else _read_line(fd, at, end))
        if direction is None:
            if frame is not None:
                frames.append(frame)
        elif (
            frame is not None and frame.expects_answer and frame.direction is _DIRECTIONS[direction]
        ):
            frames.append(frame)
        else:
            unread.append((_DIRECTIONS[direction], _ident(ident)))
    return InFlight(tuple(frames), tuple(unread), conn.whole)


def _read_line(fd: int, at: int, end: int) -> bytes:
    """The line from ``at``, read; empty when it is longer than `READ_LIMIT`."""
    data = os.pread(fd, min(READ_LIMIT + 1, end - at), at)
    newline = data.find(b"\n")
    return data[: newline + 1] if newline >= 0 else b""


def _frame(decoder: LineDecoder, conn: int, line: bytes) -> Optional[FrameSeen]:
    """The frame a line holds, as the reader reads it; None when it does not read as a frame
    of ``conn`` (a damaged line: the scan's look at its start is no parse), or is empty."""
    if not line:
        return None
    try:
        event = decoder.decode(line)
    except (RecordingError, ValueError, RecursionError):
        return None
    if not isinstance(event, FrameSeen) or event.conn != conn:
        return None
    return event


def _ident(text: Optional[bytes]) -> Any:
    """An id as its line has it (JSON), or None when absent, too long or unreadable."""
    if text is None or len(text) > ID_LIMIT:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
