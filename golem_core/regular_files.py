"""Reading a file a user names (a recording, a catalogue, a source file) without trusting it.

A file is opened only if it is a regular file, checked on the open descriptor (``O_NONBLOCK``
first, so a FIFO or a device named ``x.json`` is refused at once instead of blocking the reader
forever, or feeding it without end as ``/dev/zero`` would), and `read_regular` reads no more
than a bound the caller gives.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import IO

__all__ = ["FileTooLarge", "NotARegularFile", "file_kind", "open_regular", "read_regular"]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, in words: ``a FIFO``, ``a directory``, …"""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


class NotARegularFile(OSError):
    """The path is a FIFO, a device, a socket or a directory; ``kind`` says which ("a FIFO")."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"{path}: {kind}, not a regular file")
        self.filename = path
        self.kind = kind

    def __str__(self) -> str:
        # OSError's own would read "[Errno None] None: PATH" once `filename` is set.
        return str(self.args[0])


class FileTooLarge(ValueError):
    """The file holds more than ``limit`` bytes (nothing past the limit was read)."""

    def __init__(self, path: str, limit: int) -> None:
        mib, rest = divmod(limit, 1024 * 1024)
        super().__init__(f"larger than {mib} MiB" if mib and not rest else f"over {limit} bytes")
        self.filename = path
        self.limit = limit


def open_regular(path: str) -> IO[bytes]:
    """Open ``path`` for reading if it is a regular file (a symlink to one is fine), checked
    on the open descriptor, never blocking on a FIFO or a device.

    Raises NotARegularFile when it is anything else (nothing is read from it); OSError as the
    OS reports otherwise (no such file, a dangling symlink, a symlink loop, …)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except IsADirectoryError:
        raise NotARegularFile(path, "a directory") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket file
            raise NotARegularFile(path, "a socket") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotARegularFile(path, file_kind(mode))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them.

    Raises NotARegularFile and OSError as `open_regular` does, FileTooLarge when the file
    holds more than ``limit`` bytes (its size is checked before reading, and one byte past
    the limit is read at most, so a file that grew meanwhile is caught too)."""
    with open_regular(path) as handle:
        if os.fstat(handle.fileno()).st_size > limit:
            raise FileTooLarge(path, limit)
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileTooLarge(path, limit)
    return data
