"""Appending one recording's events to another (the "new episodes" of a VCR-style workflow):
connection numbers, sequence numbers and times are shifted so the result reads as one session
that went on.

The trace appended to is a file its user may have edited or a killed writer may have left
cut short, and the append replaces it: what comes out must read wherever the trace read. So a
last line without its newline is looked at before anything is copied: when the reader takes
it once terminated (an editor stripped the final newline) it is terminated; when it does not
(a line cut short, which no reader ever took) it is left out, the old file kept beside the new
one under ``.before-append`` and the caller told. Blank lines are copied and take no number,
as the reader skips them. Two processes appending to one trace (pytest-xdist workers) take
turns (`trace_lock`), each starting from what the other wrote: otherwise both would start
from the same old file and the later rename would drop the earlier append."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
from typing import IO, Any, Optional

from ..events import ExchangeCompleted
from ..recording.files import open_private, open_recording, replacing
from ..recording.format import RecordingError, RecordingReader, encode_event
from ..recording.members import member_number
from ..recording.trace_lock import TRACE_LOCK_WAIT, trace_lock

__all__ = ["Appended", "append_recording"]

KEPT_SUFFIX = ".before-append"
"""Added to the name of a trace whose cut last line an append left out: the old file, kept."""

_KEPT_TRIES = 100


@dataclasses.dataclass(frozen=True)
class Appended:
    """What an append did: the events it appended, and what it left out of the old trace."""

    count: int
    left_out: Optional[str] = None
    """In words, the cut last line left out and where the old file was kept; None: nothing
    was left out."""


def append_recording(base: str, extra: str, *, wait: float = TRACE_LOCK_WAIT) -> Appended:
    """Append the events of ``extra`` to ``base`` (which is created from ``extra`` when it does
    not exist), via a new file that atomically replaces ``base``, one process at a time
    (`trace_lock`: another one's append waited for up to ``wait`` seconds, so neither is
    lost). Raises OSError (ETIMEDOUT: the wait ran out; nothing is then written), or
    RecordingError naming ``base`` when it is no recording the reader takes (nothing is then
    written)."""
    with trace_lock(base, wait):
        return _append(base, extra)


def _append(base: str, extra: str) -> Appended:
    if not os.path.exists(base):
        # Whole or not at all: a replay starting meanwhile reads no half trace.
        with open(extra, "rb") as stream, replacing(base) as out:
            shutil.copyfileobj(stream, out)
        with open(extra, "rb") as stream:
            return Appended(sum(1 for _ in RecordingReader(stream)))
    with open_recording(base) as source:
        keep, tail = _unterminated_tail(source)
        terminate = bool(tail) and _reads_terminated(source, base, keep)
        left_out = None
        if tail and not terminate:
            kept = _keep_old(base, source)
            left_out = (
                f"{base}: its last line was cut short ({len(tail)} bytes without a newline, "
                f"no whole event: a writer stopped while writing it); the new exchanges were "
                f"appended without it, the old file is kept as {kept}"
            )
        last_seq, last_conn, last_t = _tail_numbers(source, keep + len(tail) * terminate)
        count = 0
        with replacing(base, overwrite=True) as out:
            source.seek(0)
            _copy(source, out, keep + len(tail) * terminate)
            if terminate:
                out.write(b"\n")
            with open(extra, "rb") as stream:
                reader = RecordingReader(stream)
                for event in reader:
                    line = encode_event(
                        _shift(event, last_conn, last_t), reader.profile, last_seq + count + 1
                    )
                    if line is not None:
                        out.write(line)
                        count += 1
    return Appended(count, left_out)


def _unterminated_tail(source: IO[bytes]) -> tuple[int, bytes]:
    """Where the file's last line starts and, when it has no newline, that line (else
    ``b""``, and the first number is the file's size)."""
    size = source.seek(0, os.SEEK_END)
    end = size
    block = 1 << 16
    while end > 0:
        start = max(0, end - block)
        source.seek(start)
        chunk = source.read(end - start)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            keep = start + newline + 1
            break
        end = start
    else:
        keep = 0
    source.seek(keep)
    return keep, source.read(size - keep)


class _WithNewline(io.RawIOBase):
    """A file read as if it ended in one more ``\\n``."""

    def __init__(self, source: IO[bytes]) -> None:
        self.source = source
        self.added = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.source.read(len(buffer))
        if not data and not self.added:
            self.added, data = True, b"\n"
        buffer[: len(data)] = data
        return len(data)


def _reads_terminated(source: IO[bytes], path: str, last: int) -> bool:
    """Whether the reader takes the whole file once its last line (from offset ``last``) is
    terminated (False: it refuses that line). Raises RecordingError when it refuses an
    earlier one."""
    source.seek(0)
    stream = io.BufferedReader(_WithNewline(source))
    reader = RecordingReader(stream, path=path)
    try:
        for _ in reader:
            pass
    except RecordingError:
        if reader.offset > last:  # the line refused ends past where the last one starts
            return False
        raise
    return True


def _keep_old(base: str, source: IO[bytes]) -> str:
    """Copy the old file beside it, under a name no file has; returns that name."""
    for attempt in range(_KEPT_TRIES):
        name = base + KEPT_SUFFIX + (f".{attempt}" if attempt else "")
        try:
            out = open_private(name)
        except FileExistsError:
            continue
        with out:
            source.seek(0)
            shutil.copyfileobj(source, out)
        return name
    raise OSError(f"{base}{KEPT_SUFFIX}: {_KEPT_TRIES} such files exist already; none written")


def _copy(source: IO[bytes], out: IO[bytes], size: int) -> None:
    left = size
    while left:
        chunk = source.read(min(left, 1 << 20))
        if not chunk:
            break
        out.write(chunk)
        left -= len(chunk)


def _tail_numbers(source: IO[bytes], size: int) -> tuple[int, int, float]:
    """The last seq, the highest conn and the last time in the first ``size`` bytes of a
    recording (a last line without its newline included: it was checked)."""
    seq, conn, t = 0, 0, 0.0
    source.seek(0)
    source.readline()
    read = source.tell()
    while read < size:
        line = source.readline(size - read)
        if not line:
            break
        read += len(line)
        if not line.strip():
            continue  # a blank line takes no number, as the reader skips it
        head = line.split(b',"msg":', 1)[0].rstrip()
        try:
            data = json.loads(head if head.endswith(b"}") else head + b"}")
        except ValueError:
            continue  # a line the reader took whose members before msg are not (a raw frame)
        if not isinstance(data, dict):
            continue
        seq = max(seq, int(member_number(data, "seq")))
        conn = max(conn, int(member_number(data, "conn")))
        t = max(t, float(member_number(data, "t")))
    return seq, conn, t


def _shift(event: Any, conn: int, t: float) -> Any:
    if isinstance(event, ExchangeCompleted):
        return dataclasses.replace(
            event,
            conn=event.conn + conn,
            request=_shift(event.request, conn, t),
            response=_shift(event.response, conn, t),
        )
    changes: dict[str, Any] = {"t": event.t + t}  # every other event has a t field
    if getattr(event, "conn", 0):  # connection 0 is the session's (observation stopped)
        changes["conn"] = event.conn + conn
    return dataclasses.replace(event, **changes)
