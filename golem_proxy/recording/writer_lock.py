"""Whether a recording is still being written: its writer holds an advisory lock on the file
(``flock``, exclusive) from its header on for as long as the file is open, and a reader that
finds the lock held knows a live process is writing it; one that finds it free, in a file
whose header says its writer held it (`WRITER_LOCK`), knows the writer is gone, however it
ended: the kernel lets the lock go with the last descriptor of the file, ``kill -9``
included.

The lock is the open file's, not the process's: the observing process of ``proxy --observer
child-process`` takes it on the descriptor the forwarding process created and shares with
it, so it stays held while either still has the file open (the forwarding process ends the
recording when the observing one died). A reader only tests it (a shared lock taken and
given back at once, never waited for), so no reader ever holds a writer up.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import Optional

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, nothing promised, nothing told
    fcntl = None  # type: ignore[assignment]

__all__ = ["WRITER_LOCK", "WRITER_LOCK_KIND", "hold_writer_lock", "writer_holds_lock"]

WRITER_LOCK = "writer_lock"
"""The header member (``"flock"``) of a recording whose writer holds `WRITER_LOCK_KIND` on it
while it writes: a reader finding it free knows the writer is gone. Files written before it,
or where the lock could not be taken (a file system without ``flock``), lack the member."""
WRITER_LOCK_KIND = "flock"

_BUSY = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)


def hold_writer_lock(fd: int) -> Optional[bool]:
    """Take the writer's lock on the recording open at ``fd`` (held until the file's last
    descriptor is closed); True when it is held (also when this open file held it already:
    a process taking over the recording). Never waits: False when it cannot be had. None
    when ``fd`` is no regular file (a pipe: no reader opens it by name to ask)."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
    except OSError:
        return None
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def writer_holds_lock(fd: int) -> Optional[bool]:
    """Whether another open file of the recording at ``fd`` holds the writer's lock: True
    while its writer writes it, False once no one does, None when this system cannot tell
    (no ``flock``, or a file system that refuses it)."""
    if fcntl is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return True if exc.errno in _BUSY else None
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
    return False
