"""Running short of file descriptors (or of kernel memory) without losing a connection.

When the process reaches its ``ulimit -n`` (``EMFILE``; ``ENFILE``: the system's limit) or the
kernel runs short of memory (``ENOMEM``, ``ENOBUFS``), making a socket fails: the one an
``accept`` would make (patient_listener.py), and the one a connection taken needs to reach its
upstream. A connection takes two descriptors, its client's and its upstream's, so a listener
that takes one whenever a single descriptor is free takes it only for its upstream's socket to
fail: reset, it frees that descriptor, the next connection waiting is taken, and reset in its
turn; the backlog drains into resets. So a connection taken that cannot make its upstream's
socket waits for one (`Room.connect`, tried again every `RETRY_EVERY` seconds, within the
connect's own time limit), and while one waits no listener of the process takes another
(`Room.waiting`): the descriptor freed next is that connection's, and those behind it wait in
the backlog, where the kernel keeps them.
"""

from __future__ import annotations

import errno
import os
import resource
from collections.abc import Awaitable, Callable
from typing import Optional, TypeVar

import trio

__all__ = ["REMIND_EVERY", "RETRY_EVERY", "SHORTAGES", "Room", "ShortWait", "shortage"]

SHORTAGES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
"""What making a socket fails with while the process (or the kernel) is short."""
RETRY_EVERY = 0.1
"""Seconds between tries while a shortage lasts (trio's own back-off)."""
REMIND_EVERY = 10.0
"""Seconds between the lines that say a shortage still lasts."""

T = TypeVar("T")


class Room:
    """The process's descriptors, as its listeners and its connects share them."""

    def __init__(self) -> None:
        self.waiting = 0
        """Connections taken that wait for a descriptor to reach their upstream."""

    async def connect(self, connect: Callable[[], Awaitable[T]], wait: ShortWait) -> T:
        """``connect()``'s result, tried again every `RETRY_EVERY` seconds for as long as it
        fails for a shortage (until cancelled: the caller bounds the wait), which ``wait``
        notes. Raises OSError, as ``connect``, for anything else."""
        try:
            while True:
                try:
                    return await connect()
                except OSError as exc:
                    if exc.errno not in SHORTAGES:
                        raise
                    if wait.short is None:
                        self.waiting += 1
                        wait.began = trio.current_time()
                    wait.short = exc
                await trio.sleep(RETRY_EVERY)
        finally:
            if wait.short is not None:
                self.waiting -= 1
                wait.waited = trio.current_time() - wait.began

    async def wait_for_room(self) -> None:
        """Return once no connection taken waits for a descriptor (a listener's next accept
        would take the one it waits for)."""
        while self.waiting:
            await trio.sleep(RETRY_EVERY)


class ShortWait:
    """One connection's wait for a descriptor (`Room.connect`)."""

    def __init__(self) -> None:
        self.short: Optional[OSError] = None
        """The last shortage it met (None: none)."""
        self.began = 0.0
        self.waited = 0.0
        """Seconds it waited, once it is over."""


def shortage(exc: OSError) -> str:
    """What ran short (``exc`` failed with one of `SHORTAGES`), and what would help, in words
    that begin in lower case ("too many open files (EMFILE: …)")."""
    name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
    reason = os.strerror(exc.errno or 0)
    reason = reason[0].lower() + reason[1:]
    if exc.errno == errno.EMFILE:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        return (
            f"{reason} ({name}: this process's limit is {soft}; raise it with `ulimit -n`, "
            "or end connections)"
        )
    if exc.errno == errno.ENFILE:
        return f"{reason} ({name}: the system's limit, fs.file-max)"
    return f"{reason} ({name}: the kernel is short of memory)"
