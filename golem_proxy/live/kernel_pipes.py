"""Moving bytes between descriptors without them entering the process: Linux's ``splice``
(``os.splice``, Python 3.10) and ``tee`` (the C library's, through ctypes: the standard library
has none), and the pipes they need.

A socket's bytes are spliced into a pipe, ``tee`` duplicates them into a second pipe (page
references, no copy), and each pipe is spliced on: one to the receiving socket, one to the
observing process's handoff pipe. The forwarding process then moves a large frame's body at
about a fifth of the CPU a copy through its own buffer costs (``bench/zero_copy.py``).
Everything here is non-blocking: a call that would wait raises BlockingIOError, as the
socket calls do.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import os
from typing import Callable, Optional

__all__ = [
    "PIPE_SIZE",
    "SPLICE_NONBLOCK",
    "PipePair",
    "available",
    "close_all",
    "discard",
    "drain",
    "new_pipe",
    "resize",
    "splice",
    "tee",
]

PIPE_SIZE = 1024 * 1024
"""The size asked for the pipes the forwarding process hands on through (``F_SETPIPE_SZ``): the
handoff pipe (the default 64 KiB fills with one read) and the ones bytes are spliced through."""

SPLICE_NONBLOCK = getattr(os, "SPLICE_F_NONBLOCK", 2)
"""Neither end's pipe makes the call wait (the sockets are non-blocking already)."""

_Tee = Callable[[int, int, int, int], int]


def _libc_tee() -> Optional[_Tee]:
    """The C library's ``tee``, or None (not Linux, or no C library to load)."""
    if not hasattr(os, "splice"):
        return None
    try:
        library = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        function = library.tee
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint]
    function.restype = ctypes.c_ssize_t
    return function  # type: ignore[no-any-return]


_TEE = _libc_tee()


def available() -> bool:
    """This interpreter and system can splice and tee (Linux, Python 3.10 or later)."""
    return _TEE is not None


def splice(source: int, target: int, size: int) -> int:
    """Move up to ``size`` bytes from ``source`` to ``target`` (one of them a pipe); 0 at the
    source's end of stream. Raises BlockingIOError when nothing can move now, OSError else."""
    moved: int = os.splice(source, target, size, flags=SPLICE_NONBLOCK)  # type: ignore[attr-defined]
    return moved


def tee(source: int, target: int, size: int) -> int:
    """Duplicate up to ``size`` bytes at the start of pipe ``source`` into pipe ``target``,
    leaving them in ``source``. Raises BlockingIOError when nothing can move now, OSError
    else."""
    if _TEE is None:
        raise OSError("tee is not available here")
    copied = _TEE(source, target, size, SPLICE_NONBLOCK)
    if copied < 0:
        number = ctypes.get_errno()
        raise BlockingIOError(number, "tee") if number == errno.EAGAIN else OSError(number, "tee")
    return int(copied)


def drain(fd: int, size: int) -> bytes:
    """The next ``size`` bytes of pipe ``fd``, which holds at least that many: taken out into
    the process (where a pipe's bytes cannot go on without it)."""
    pieces = []
    while size:
        piece = os.read(fd, size)
        if not piece:
            raise OSError(f"a pipe held {size} bytes fewer than it should")
        pieces.append(piece)
        size -= len(piece)
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def discard(fd: int) -> None:
    """Empty pipe ``fd`` (its bytes go nowhere). Never raises."""
    with contextlib.suppress(OSError):
        while os.read(fd, 1 << 20):
            pass


def new_pipe(wanted_size: int) -> tuple[int, int, int]:
    """A non-blocking pipe, not inherited by child processes, asked to hold ``wanted_size``
    bytes: (read end, write end, the size it has: see `resize`). Raises OSError."""
    read_end, write_end = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    return read_end, write_end, resize(write_end, wanted_size)


def close_all(*fds: int) -> None:
    """Close each descriptor. Never raises."""
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


class PipePair:
    """Two pipes of the same size: ``wire`` carries bytes from one socket to the other,
    ``copy`` holds their duplicate for the observer. Each is (read end, write end),
    non-blocking, closed by `close`."""

    def __init__(self, wanted_size: int) -> None:
        wire_read, wire_write, wire_size = new_pipe(wanted_size)
        try:
            copy_read, copy_write, copy_size = new_pipe(wanted_size)
        except OSError:
            close_all(wire_read, wire_write)
            raise
        self.wire = (wire_read, wire_write)
        self.copy = (copy_read, copy_write)
        self.size = min(wire_size, copy_size)
        """Bytes both pipes hold: the most one splice may move in (the copy must take all)."""

    def close(self) -> None:
        close_all(*self.wire, *self.copy)


def resize(fd: int, wanted: int) -> int:
    """Ask for a pipe buffer of ``wanted`` bytes; the size it has (the system may refuse a
    larger one: a user's pipes past ``/proc/sys/fs/pipe-user-pages-soft``)."""
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, wanted)  # type: ignore[attr-defined]
    try:
        return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))  # type: ignore[attr-defined]
    except (OSError, AttributeError):
        return 64 * 1024  # Linux's default
