"""A recording written by another process and ended by this one: ``proxy --observer
child-process`` creates the file, the observing process writes it through a shared
descriptor, and if that process dies the forwarding process ends it (`end_recording`) with
an ``observation-stopped`` line, or says a new observing process takes over
(`restart_recording`) with an ``observation-restarted`` line, after which the new one appends
to the same file. A line cut by the death is cut off first, so every reader still reads the
file, and the line takes the next ``seq``. When the session then ends in order, no observing
process writes any more: this one writes the ``session-end`` line (`end_session`).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import IO, Any, Optional

from ..events import GapCount, SessionEnded
from .files import discard_beside, open_beside, put_in_place, read_side
from .schema import KIND_MEMBERS, SESSION_END_KIND, dumps

__all__ = [
    "RESTARTED_KIND",
    "STOPPED_KIND",
    "RecordingFile",
    "cut_unfinished_line",
    "end_recording",
    "end_session",
    "gap_counts_json",
    "restart_recording",
    "session_end_line",
    "session_line",
]

STOPPED_KIND = "observation-stopped"
"""The recording line that ends a recording whose observing process died (readers that do not
know it skip it)."""

RESTARTED_KIND = "observation-restarted"
"""The recording line that says the observing process died and a new one took over: what
follows it was written by the new one (readers that do not know it skip it)."""


def session_line(seq: int, t: float, kind: str, detail: str) -> bytes:
    """An ``observation-stopped`` or ``observation-restarted`` line, with its newline (the
    writer writes the same for such an event)."""
    return dumps({"seq": seq, "t": round(t, 6), "kind": kind, "detail": detail}) + b"\n"


def session_end_line(seq: int, ended: SessionEnded) -> bytes:
    """The ``session-end`` line, with its newline: its members in the schema's order, a count
    only when known, ``unobserved`` only when there were gaps, ``since_restart`` only when
    true."""
    data: dict[str, object] = {"seq": seq, "t": round(ended.t, 6), "kind": SESSION_END_KIND}
    for name in KIND_MEMBERS[SESSION_END_KIND][3:]:
        value = getattr(ended, name)
        if name == "unobserved":
            value = gap_counts_json(value) if value else None
        if value is not None and value is not False:
            data[name] = value
    return dumps(data) + b"\n"


def gap_counts_json(counts: tuple[GapCount, ...]) -> dict[str, Any]:
    """``counts`` as `check --json` says the gaps it did not inspect (its ``unobserved``):
    the totals, then each reason's."""
    return {
        "gaps": sum(count.gaps for count in counts),
        "bytes": sum(count.bytes for count in counts),
        "bytes_at_least": any(count.bytes_at_least for count in counts),
        "by_reason": {
            count.reason: {
                "gaps": count.gaps,
                "bytes": count.bytes,
                "bytes_at_least": count.bytes_at_least,
            }
            for count in counts
        },
    }


@dataclass
class RecordingFile:
    """The recording as the forwarding process holds it: the descriptor the observing process
    writes through (shared with it), and one to read it back, to end it if that process dies.

    A recording that replaces a file (``--overwrite``) is written beside it until the session
    has started (`put_in_place`): an observing process that fails to start leaves the old one
    whole (`close` removes the new one)."""

    write_fd: int
    read_fd: int
    closed: bool = False
    pending: Optional[tuple[str, str]] = None
    """While the new file waits beside the one it replaces: (its path, the path it takes)."""
    made: Optional[str] = None
    """The path it was created at, when it replaces nothing (`discard` removes it)."""

    @classmethod
    def create(cls, path: str, *, overwrite: bool = False) -> RecordingFile:
        """Create ``path`` as a recording is created (mode 0600, no symlink followed; without
        ``overwrite`` it must not exist; with it, a file there stays until `put_in_place`).
        Raises OSError."""
        stream, temp = open_beside(path, overwrite=overwrite)
        with stream:
            write_fd = os.dup(stream.fileno())
        opened = path if temp is None else temp
        try:
            read_fd = read_side(opened, write_fd)
        except BaseException:
            os.close(write_fd)
            if temp is not None:
                discard_beside(temp)
            raise
        if temp is not None:
            return cls(write_fd, read_fd, pending=(temp, path))
        return cls(write_fd, read_fd, made=path)

    def put_in_place(self) -> None:
        """The session started (its header is written): the recording takes its path, over
        the file it replaces, if it was written beside one. Raises OSError (then it is
        removed: `close`)."""
        if self.pending is not None:
            temp, path = self.pending
            put_in_place(temp, path)
            self.pending = None

    def discard(self) -> None:
        """The session did not start: close it and remove the file `create` made (a retry
        then needs no ``--overwrite``), never one that took its path since."""
        made, self.made = self.made, None
        if made is not None and not self.closed:
            with contextlib.suppress(OSError):
                if os.path.samestat(os.fstat(self.write_fd), os.lstat(made)):
                    os.unlink(made)
        self.close()

    def close(self) -> None:
        """Close both descriptors (once: a number closed twice may be another file's by then);
        a recording never put in place is removed, the file it was to replace left whole."""
        if self.closed:
            return
        self.closed = True
        for fd in (self.write_fd, self.read_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.pending is not None:
            discard_beside(self.pending[0])
            self.pending = None


def end_recording(record: RecordingFile, t: float, detail: str) -> None:
    """Append the line that says observation stopped to the recording, which the observing
    process wrote until it died: an unfinished last line is cut off first (a reader would take
    it for a damaged line once another follows it), and the line takes the next ``seq``.
    Raises OSError."""
    _append_session_line(record, t, STOPPED_KIND, detail)


def end_session(record: RecordingFile, ended: SessionEnded) -> None:
    """Append the ``session-end`` line to a recording no observing process writes any more
    (observation stopped before the session ended in order), as `end_recording` appends its
    line. Raises OSError."""
    end, last_seq = _cut(record)
    _append_line(record, end, session_end_line(last_seq + 1, ended))


def ends_with_session_end(record: RecordingFile) -> bool:
    """Whether the recording ends with its ``session-end`` line, nothing after it (not even
    an unfinished line): the observing process ended it in order, whatever it did after.
    Raises OSError."""
    size = os.fstat(record.read_fd).st_size
    tail = os.pread(record.read_fd, min(size, 4096), max(0, size - 4096))
    if not tail.endswith(b"\n"):
        return False
    start = tail.rfind(b"\n", 0, len(tail) - 1) + 1
    prefix = tail[start : start + 96]
    return prefix.startswith(b'{"seq":') and b'"kind":"%s"' % SESSION_END_KIND.encode() in prefix


def restart_recording(record: RecordingFile, t: float, detail: str) -> int:
    """Append the line that says a new observing process takes over the recording, as
    `end_recording` does (an unfinished last line cut off, the next ``seq``), and return its
    ``seq``: the new observing process numbers its lines from the one after it.

    The descriptor's offset is shared with the observing processes (one open file
    description, handed to each): the dead one may have left it past the cut, so it is set
    to the new end of the file, where the next writer appends right after this line (never
    leaving a hole of zero bytes). Raises OSError."""
    seq, end = _append_session_line(record, t, RESTARTED_KIND, detail)
    os.lseek(record.write_fd, end, os.SEEK_SET)
    return seq


def cut_unfinished_line(record: RecordingFile) -> int:
    """Cut off the last line of a recording whose writer died mid-line, if it did; returns
    where the last complete line ends (the file's new size). Done as soon as the death is
    known, before a new observing process is handed the recording: what it reads back then
    ends with the dead process's last whole line. Raises OSError."""
    end, _ = _cut(record)
    return end


def _cut(record: RecordingFile) -> tuple[int, int]:
    """Cut an unfinished last line off; returns where the last complete line ends and the
    ``seq`` it starts with (0 for the header)."""
    size = os.fstat(record.read_fd).st_size
    with open(os.dup(record.read_fd), "rb") as recording:
        end, last_seq = _last_line(recording, size)
    if end < size:
        os.ftruncate(record.write_fd, end)
    return end, last_seq


def _append_session_line(
    record: RecordingFile, t: float, kind: str, detail: str
) -> tuple[int, int]:
    """Cut an unfinished last line off and write a session line after the last complete one.
    Returns the line's ``seq`` and where the file now ends."""
    end, last_seq = _cut(record)
    line = session_line(last_seq + 1, t, kind, detail)
    _append_line(record, end, line)
    return last_seq + 1, end + len(line)


def _append_line(record: RecordingFile, end: int, line: bytes) -> None:
    written = 0
    while written < len(line):  # a regular file takes it whole; a short write goes on
        written += os.pwrite(record.write_fd, line[written:], end + written)


def _last_line(recording: IO[bytes], size: int, block: int = 65536) -> tuple[int, int]:
    """(where the last complete line ends, the ``seq`` it starts with: 0 for the header)."""
    newlines: list[int] = []  # the last two, last first
    position = size
    while position > 0 and len(newlines) < 2:
        start = max(0, position - block)
        recording.seek(start)
        data = recording.read(position - start)
        at = len(data)
        while len(newlines) < 2:
            at = data.rfind(b"\n", 0, at)
            if at < 0:
                break
            newlines.append(start + at)
        position = start
    if not newlines:
        return 0, 0
    end = newlines[0] + 1
    recording.seek(newlines[1] + 1 if len(newlines) > 1 else 0)
    prefix = recording.read(min(64, end)).decode("ascii", "replace")
    if not prefix.startswith('{"seq":'):
        return end, 0  # the header: the first event line is 1
    digits = prefix[len('{"seq":') :].split(",", 1)[0]
    return end, int(digits) if digits.isdigit() else 0
