"""The fast scanner: a recording's exchanges found in one pass over its bytes, for replay.

Lines in the layout `RecordingWriter` writes are taken apart with the anchored regex of
`scan_pattern` and slices (the payload is spliced in verbatim after ``"msg":``), several times
faster than decoding every line as JSON. The pattern takes only members the reader would accept
as they stand; a payload it takes is checked as it is taken, as the reader checks it (valid
JSON, nested and costing no more than the reader takes, refused in its words). Every other
non-blank line (other kinds, base64 payloads, redacted frames, other layouts, damage) is read
by the reader's own code (`line_events`), so a line the reader refuses is refused here with the
same message: nothing here trusts the file more than `reader` does.
"""

from __future__ import annotations

import gc
import mmap
import os
from dataclasses import dataclass
from typing import Any

from golem_core.profiles import Profile

from .files import open_recording
from .forked import ForkedCall, ForkedCallError
from .reader import parse_header, route_profiles
from .scan_lines import line_at
from .scan_loader import FrameInfo, Loader, Part, Row
from .schema import DEFAULT_MAX_LINE, Header, RecordingError

__all__ = ["PARALLEL_MIN_BYTES", "FrameInfo", "Row", "Scan", "line_at", "scan_exchanges"]

PARALLEL_MIN_BYTES = 64 * 1024 * 1024
"""Traces at least this large are read by two processes, each taking half of the file."""


def _scan(
    profile: Profile,
    routes: dict[str, Profile],
    buffer: Any,
    max_line: int,
    header_end: int,
    end: int,
    header: Header,
) -> list[Row]:
    """Rows of the event lines between the header and ``end``; the second half of a large
    trace is read by a forked child meanwhile."""
    previous = header_end - 1  # the header's newline starts the first line
    middle = -1
    if end - header_end >= PARALLEL_MIN_BYTES:
        middle = buffer.find(b"\n", previous + (end - previous) // 2, end - 1)
    loader = Loader(profile, routes, buffer, max_line, header=header)
    child = None
    try:
        if middle >= 0:
            child = ForkedCall.start(
                lambda: _scan_part(profile, routes, buffer, max_line, middle, end, header)
            )
        if child is None:
            loader.scan(previous, end)
            return [row for row in loader.rows if row is not None]
        loader.scan(previous, middle + 1)
        try:
            part = child.result()
        except ForkedCallError:  # the child died: read its half here
            part = _scan_part(profile, routes, buffer, max_line, middle, end, header)
    finally:
        if child is not None:
            child.cancel()
    loader.adopt(part)
    return [row for row in loader.rows if row is not None]


def _scan_part(
    profile: Profile,
    routes: dict[str, Profile],
    buffer: Any,
    max_line: int,
    previous: int,
    end: int,
    header: Header,
) -> Part:
    loader = Loader(profile, routes, buffer, max_line, partial=True, header=header)
    loader.scan(previous, end)
    return loader.part()


@dataclass
class Scan:
    """What the scanner found: the header, the exchanges as rows in the order they completed,
    and the buffer (a memory map of the file, or None when empty) the rows' offsets point
    into."""

    header: Header
    profile: Profile
    rows: list[Row]
    truncated_tail: bool
    buffer: Any


def scan_exchanges(path: str, *, max_line: int = DEFAULT_MAX_LINE) -> Scan:
    """Find the exchanges of the recording at ``path``. Raises OSError, or RecordingError
    naming the file, the line and what is wrong."""
    try:
        return _scan_file(path, max_line)
    except RecordingError as exc:
        raise exc.at(path) from None


def _scan_file(path: str, max_line: int) -> Scan:
    with open_recording(path) as stream:
        first = stream.readline(max_line + 1)
        header, profile = parse_header(first)
        routes = route_profiles(header)
        size = os.fstat(stream.fileno()).st_size
        if size <= len(first):
            return Scan(header, profile, [], False, None)
        buffer = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
    end = len(buffer)
    last_newline = buffer.rfind(b"\n")
    truncated = last_newline < end - 1  # a killed writer's incomplete last line is ignored
    # The loader creates objects per exchange and none of them form cycles: the collector
    # would walk the growing lists again and again (a tenth of the load time), so it waits.
    collecting = gc.isenabled()
    gc.disable()
    try:
        rows = _scan(profile, routes, buffer, max_line, len(first), last_newline + 1, header)
        if end - last_newline - 1 > max_line:  # unless the reader refuses it for its length
            at = line_at(buffer, last_newline + 1)
            raise RecordingError(f"longer than {max_line} bytes", line=at)
    except BaseException:
        buffer.close()
        raise
    finally:
        if collecting:
            gc.enable()
    return Scan(header, profile, rows, truncated, buffer)
