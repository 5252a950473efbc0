"""One writer at a time for a trace that is rewritten whole: an append (`--golem-record=new`),
a re-recording put in place, ``verify --update``. Each reads the trace, writes a new file and
renames it over the old one, so two at once (pytest-xdist workers sharing a trace) would each
start from the same old file and the later rename would drop what the earlier one wrote.

The lock is ``flock`` on the trace's directory. Not on the trace: each write replaces it, so a
process that waited on the old file would, once it had the lock, hold it on a file no longer
in place, and read it. Not on a lock file beside the trace: that file would have to stay (it
is never safe to remove while someone may be waiting on it), an unexplained file among the
user's traces and in their ``git status``. The directory is never replaced and leaves nothing
behind; the cost is that writes of two traces in one directory wait for each other, each for
as long as one copy of a trace takes. The kernel lets the lock go with the process, however it
ends (``kill -9`` included), so a killed writer holds no one up.

Where ``flock`` cannot be had (Windows, a file system refusing it on a directory), nothing is
promised: the write goes on unlocked, as it did before the lock."""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, nothing promised
    fcntl = None  # type: ignore[assignment]

__all__ = ["TRACE_LOCK_WAIT", "trace_lock"]

TRACE_LOCK_WAIT = 120.0
"""Seconds a writer waits for another one writing a trace in the same directory; an append
copies the whole trace, so this is room for a very large one on a slow disk."""

_BUSY = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
_POLL_MAX = 0.1


@contextlib.contextmanager
def trace_lock(path: str, wait: float = TRACE_LOCK_WAIT) -> Iterator[None]:
    """Hold the lock of the trace at ``path`` (on its directory) for the block. Raises
    OSError: the directory cannot be opened, or (ETIMEDOUT, a one-line ``strerror``) another
    process held the lock for ``wait`` seconds."""
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    directory = os.path.dirname(os.path.abspath(path))
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    try:
        _take(fd, directory, path, wait)
        yield
    finally:
        os.close(fd)  # the lock goes with the descriptor


def _take(fd: int, directory: str, path: str, wait: float) -> None:
    deadline = time.monotonic() + wait
    pause = 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in _BUSY:
                return  # a file system without flock on a directory: nothing promised
        left = deadline - time.monotonic()
        if left <= 0:
            raise OSError(
                errno.ETIMEDOUT,
                f"another process kept writing a trace in {directory} for {wait:g} s "
                f"(it holds the lock of that directory)",
                path,
            )
        time.sleep(min(pause, left))
        pause = min(pause * 2, _POLL_MAX)
