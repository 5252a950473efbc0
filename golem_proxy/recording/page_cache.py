"""A growing recording's pages handed back to the system once they are on disk.

Appending to a file takes a new page-cache page for every 4 KiB. On a virtual machine that
reports free memory to its host (virtio-balloon free page reporting, common on cloud guests),
a page the kernel has not used lately is faulted in again at the host on first touch: a
plain 16 MiB append took 40-70 ms there, against 4-6 ms into pages freed a moment before
(docs/reliability.md, "Growing memory"). A recorder taking 16 MiB answers then runs at a
third of the relay's pace whatever it does itself.

`WrittenPages` asks the kernel, every `RELEASE_EVERY` bytes, to drop the recording's pages
written before (``posix_fadvise(POSIX_FADV_DONTNEED)``). The call starts the write-back of
dirty pages without waiting for it and drops the clean ones, so a range is dropped at the
call after the one that started its write-back. Dirty data is never discarded: nothing a
`kill -9` could lose changes, and a reader gets the bytes from the disk instead of the cache.
The pages freed go back to the kernel's free lists, where the next appends find them before
they are reported to the host. Where ``posix_fadvise`` is missing (macOS) or refused (a pipe),
it does nothing.
"""

from __future__ import annotations

import os
from collections import deque

__all__ = ["RELEASE_EVERY", "WrittenPages"]

RELEASE_EVERY = 8 * 1024 * 1024
"""Bytes appended between two calls: rare enough that a stream of small lines pays nothing
(two system calls per 8 MiB), often enough that a 16 MiB answer's pages are reused by the next."""

_GENERATIONS = 2
"""Calls a range is asked about: the first starts its write-back, the second drops it."""


class WrittenPages:
    """Counts what is appended to one descriptor and drops the pages already written back."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._since = 0
        self._ends: deque[int] = deque(maxlen=_GENERATIONS)
        self._enabled = hasattr(os, "posix_fadvise")

    def wrote(self, size: int) -> None:
        """Count ``size`` bytes appended; past `RELEASE_EVERY` since the last release, drop
        the pages before the file's current end that are already on disk."""
        if not self._enabled:
            return
        self._since += size
        if self._since < RELEASE_EVERY:
            return
        self._since = 0
        try:
            end = os.lseek(self._fd, 0, os.SEEK_CUR)
            start = self._ends[0] if len(self._ends) == _GENERATIONS else 0
            if end > start:
                os.posix_fadvise(self._fd, start, end - start, os.POSIX_FADV_DONTNEED)
        except OSError:
            self._enabled = False  # not a regular file: nothing to drop, and no harm done
            return
        self._ends.append(end)
