"""What a new observing process must know of a recording before it records on a connection
that was open when the old one died (`shared_file.restart_recording`): whether the
connection's ``open`` line is in the file, and the ``n`` its next frame of each direction
takes (frame indexes go on across a restart).

The file is read backwards from its end, with `os.pread` only: the descriptor's offset is
shared with the writer and never moves. Only the first bytes of each line are looked at,
where the writer puts ``seq``, ``t``, ``kind``, ``conn`` and, on a frame line, ``route``,
``dir`` and ``n`` (`frame_lines.frame_members`); a line's start is found with `bytes.rfind`, so a
frame line of 16 MiB or more is read in blocks like any other bytes, never split into lines,
copied whole or decoded.

Cost: the bytes between the end of the file and the farthest answer, read once in blocks of
`BLOCK`: the scan stops as soon as every connection asked about is resolved (its ``open``
line found, or the last frame line of both directions); a connection that never sent a frame
one way is resolved at its ``open`` line, so a long-lived connection quiet one way costs a
read back to where it opened, and one the file does not hold a read of the whole file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Optional

__all__ = ["BLOCK", "HEAD", "ResumePoint", "resume_points"]

BLOCK = 1 << 20
"""Bytes read at a time, going back."""
HEAD = 4096
"""Bytes of a line's start looked at first (more only for a route name longer than that)."""

# ``{"seq":S,"t":T,"kind":"open","conn":C,`` or ``…"kind":"frame","conn":C,`` (``t`` a JSON
# number: no comma or quote in it).
_START = re.compile(rb'\{"seq":\d+,"t":[^,"]+,"kind":"(open|frame)","conn":(\d+),')
# What follows ``conn`` on a frame line: the route (a JSON string, escapes included), then
# ``dir`` and ``n``.
_FRAME_REST = re.compile(rb'"route":"(?:[^"\\]|\\.)*","dir":"(c2s|s2c)","n":(\d+)[,}]')
_OPEN, _C2S = b"open", b"c2s"


@dataclass(frozen=True)
class ResumePoint:
    """Where a connection stands in the recording."""

    opened: bool
    """The connection's ``open`` line is in the file (a frame line of it says so too: the
    writer writes the ``open`` line first)."""
    next_n: tuple[int, int]
    """The ``n`` its next c2s and s2c frame lines take: the last one's + 1, 0 if none."""


class _Seen:
    """What the scan found of one connection so far (the last frames first: it goes back)."""

    __slots__ = ("next_n", "opened")

    def __init__(self) -> None:
        self.opened = False
        self.next_n: list[Optional[int]] = [None, None]

    @property
    def resolved(self) -> bool:
        return self.opened or (self.next_n[0] is not None and self.next_n[1] is not None)

    def point(self) -> ResumePoint:
        c2s, s2c = self.next_n
        framed = c2s is not None or s2c is not None
        return ResumePoint(self.opened or framed, (c2s or 0, s2c or 0))


def resume_points(fd: int, conns: Collection[int], *, block: int = BLOCK) -> dict[int, ResumePoint]:
    """Where each of ``conns`` stands in the recording open on ``fd`` (read with `os.pread`
    only: the descriptor's offset does not move). An unfinished last line is ignored.
    Raises OSError."""
    seen = {conn: _Seen() for conn in conns}
    left = len(seen)
    if left:
        for start, end, data, data_start in _lines_backwards(fd, block):
            conn = _look(fd, start, end, data, data_start, seen)
            if conn is not None and seen[conn].resolved:
                left -= 1
                if not left:
                    break
    return {conn: found.point() for conn, found in seen.items()}


def _lines_backwards(fd: int, block: int) -> Iterator[tuple[int, int, bytes, int]]:
    """Each complete line's start and end offsets (the end: its newline), last line first,
    the header left out, with the block that holds the line's start (and that block's
    offset)."""
    end = os.fstat(fd).st_size
    data_start = end
    data = b""
    line_end = -1  # the newline that ends the line being looked for; -1: none found yet
    while True:
        stop = (line_end if line_end >= 0 else end) - data_start
        newline = data.rfind(b"\n", 0, stop)
        if newline < 0:
            if data_start == 0:
                return  # what is left is the header (or nothing)
            size = min(block, data_start)
            data_start -= size
            data = os.pread(fd, size, data_start)
            if len(data) != size:  # the file shrank under the scan: what is left is unsure
                return
            continue
        newline += data_start
        if line_end >= 0:
            yield newline + 1, line_end, data, data_start
        line_end = newline  # the last newline first: what follows it is unfinished


def _look(
    fd: int, start: int, end: int, data: bytes, data_start: int, seen: dict[int, _Seen]
) -> Optional[int]:
    """Note what the line from ``start`` to its newline at ``end`` says of a connection asked
    about, if it is its ``open`` or ``frame`` line; returns that connection, else None."""
    size = HEAD
    while True:
        buffer, at, stop = _head(fd, start, end, data, data_start, size)
        found = _START.match(buffer, at, stop)
        if found is None:
            return None
        conn = int(found.group(2))
        wanted = seen.get(conn)
        if wanted is None or wanted.resolved:
            return None
        if found.group(1) == _OPEN:
            wanted.opened = True
            return conn
        rest = _FRAME_REST.match(buffer, found.end(), stop)
        if rest is not None:
            break
        if stop - at >= end - start:
            return None  # not the writer's layout: not a frame line this scan can read
        size *= 4  # cut inside the route (a long name): look further into the line
    side = 0 if rest.group(1) == _C2S else 1
    if wanted.next_n[side] is None:  # the last frame of that direction: it goes back
        wanted.next_n[side] = int(rest.group(2)) + 1
    return conn


def _head(
    fd: int, start: int, end: int, data: bytes, data_start: int, size: int
) -> tuple[bytes, int, int]:
    """The first ``size`` bytes of the line from ``start`` to its newline at ``end`` (fewer
    when the line is shorter): a buffer, and where they start and stop in it. The block
    itself when it holds them, else read."""
    want = min(size, end - start)
    at = start - data_start
    if at + want <= len(data):
        return data, at, at + want
    return os.pread(fd, want, start), 0, want
