"""A recording written by another process and ended by this one: ``proxy --observer
child-process`` creates the file, the observing process writes it through a shared
descriptor, and if that process dies the forwarding process ends it (`end_recording`) with
an ``observation-stopped`` line. A line cut by the death is cut off first, so every reader
still reads the file, and the line takes the next ``seq``.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import IO

from .files import open_private
from .schema import dumps

__all__ = ["STOPPED_KIND", "RecordingFile", "end_recording"]

STOPPED_KIND = "observation-stopped"
"""The recording line that ends a recording whose observing process died (readers that do not
know it skip it)."""


@dataclass
class RecordingFile:
    """The recording as the forwarding process holds it: the descriptor the observing process
    writes through (shared with it), and one to read it back, to end it if that process dies."""

    write_fd: int
    read_fd: int
    closed: bool = False

    @classmethod
    def create(cls, path: str, *, overwrite: bool = False) -> RecordingFile:
        """Create ``path`` as a recording is created (mode 0600, no symlink followed; without
        ``overwrite`` it must not exist). Raises OSError."""
        with open_private(path, overwrite=overwrite) as stream:
            write_fd = os.dup(stream.fileno())
        try:
            read_fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            written, read = os.fstat(write_fd), os.fstat(read_fd)
            if (written.st_dev, written.st_ino) != (read.st_dev, read.st_ino):
                os.close(read_fd)
                raise OSError(f"{path}: replaced while it was being opened")
        except BaseException:
            os.close(write_fd)
            raise
        return cls(write_fd, read_fd)

    def close(self) -> None:
        """Close both descriptors (once: a number closed twice may be another file's by then)."""
        if self.closed:
            return
        self.closed = True
        for fd in (self.write_fd, self.read_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def end_recording(record: RecordingFile, t: float, detail: str) -> None:
    """Append the line that says observation stopped to the recording, which the observing
    process wrote until it died: an unfinished last line is cut off first (a reader would take
    it for a damaged line once another follows it), and the line takes the next ``seq``.
    Raises OSError."""
    size = os.fstat(record.read_fd).st_size
    with open(os.dup(record.read_fd), "rb") as recording:
        end, last_seq = _last_line(recording, size)
    os.ftruncate(record.write_fd, end)
    line = {"seq": last_seq + 1, "t": round(t, 6), "kind": STOPPED_KIND, "detail": detail}
    os.pwrite(record.write_fd, dumps(line) + b"\n", end)


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
