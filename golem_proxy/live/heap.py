"""What the process's C allocator (glibc's malloc) does with freed memory: give it back to
the system at a moment we choose (`return_memory_to_the_system`), and keep it meanwhile
(`keep_freed_memory`). Elsewhere (another C library) both do nothing: the allocator keeps what
it keeps."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from collections.abc import Callable
from typing import NamedTuple, Optional

__all__ = [
    "KEEP_FREED",
    "TRIM_IDLE",
    "TrimPacing",
    "keep_freed_memory",
    "return_memory_to_the_system",
]

KEEP_FREED = 64 * 1024 * 1024
"""Freed heap a process keeps mapped while it works (`keep_freed_memory`): a 16 MiB answer's
buffers, which with glibc's defaults went back after each answer and were faulted in again
(~2,000-3,000 page faults per answer in each process)."""
TRIM_IDLE = 0.5
"""Seconds without work before freed pages first go back (`return_memory_to_the_system`):
after a burst or an attack, not between two 16 MiB answers, whose pages would all be faulted in
again (a quarter of the observing process's CPU per answer: 79 ms with a trim after each drain,
60 ms without). `TrimPacing` lengthens it while work keeps coming back."""
TRIM_IDLE_LONGEST = 16.0
"""The longest idle spell `TrimPacing` waits for: how long a session's working set may stay
resident after its last burst."""

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameters (malloc.h)."""


class _Glibc(NamedTuple):
    malloc_trim: Callable[[int], int]
    mallopt: Callable[[int, int], int]


def _load_glibc() -> Optional[_Glibc]:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return _Glibc(libc.malloc_trim, libc.mallopt)
    except (OSError, AttributeError):  # not glibc
        return None


_GLIBC = _load_glibc()


class TrimPacing:
    """How long to be idle before giving freed heap back. A trim costs nothing when the work
    is over, and every page of the next burst's working set when it is not: a model that
    captures the viewport, thinks for a few seconds and captures again had each 16 MiB answer
    fault the observing process's ~300 MiB back in (4,467 faults and 62 ms of observing an
    answer with the TUI, against 207 and 33 ms back to back). So the first trim comes after
    `TRIM_IDLE`, as after an attack; when a burst comes back after a pause shorter than
    `TRIM_IDLE_LONGEST`, the next trim waits that long past a burst's end for twice that pause
    (at most the longest), and that rhythm no longer pays; after a longer pause it starts again
    from `TRIM_IDLE`. Only bursts count (``large`` bytes moved since the last that counted):
    a heartbeat or a poll neither teaches a rhythm nor holds a trim back (the owner still waits
    for `TRIM_IDLE` of quiet, which such traffic leaves)."""

    def __init__(self, large: int) -> None:
        self.large = large
        self.idle_needed = TRIM_IDLE
        self._trimmed_at: Optional[float] = None
        self._burst_at = -math.inf
        self._counted = 0

    def worked(self, moved: int, now: float) -> None:
        """``moved`` bytes so far (a running count) at ``now`` (seconds, the same monotonic
        clock throughout)."""
        if moved - self._counted < self.large:
            return
        self._counted = moved
        self._burst_at = now
        if self._trimmed_at is None:
            return
        pause = self.idle_needed + now - self._trimmed_at  # the first burst after a trim
        self._trimmed_at = None
        if pause < TRIM_IDLE_LONGEST:
            self.idle_needed = min(2 * pause, TRIM_IDLE_LONGEST)
        else:
            self.idle_needed = TRIM_IDLE

    def wait_left(self, now: float) -> float:
        """Seconds until a trim may come, on top of `TRIM_IDLE` of quiet (0: none)."""
        return max(self._burst_at + self.idle_needed - now, 0.0)

    def trimmed(self, now: float) -> None:
        """Freed heap went back at ``now``."""
        self._trimmed_at = now


def return_memory_to_the_system() -> None:
    """Give freed heap pages back (glibc's ``malloc_trim``): CPython frees big objects to the
    C allocator, which keeps them mapped, so an attack's peak would otherwise stay resident
    after its connections closed."""
    if _GLIBC is not None:
        _GLIBC.malloc_trim(0)


def keep_freed_memory(allocations_below: int, up_to: int = KEEP_FREED) -> bool:
    """Keep up to ``up_to`` bytes of freed heap mapped rather than giving them back at each
    free (glibc trims the top of the heap past 128 KiB by default, and the next burst faults
    every page in again), and take allocations smaller than ``allocations_below`` from the
    heap (else each is a mapping of its own, faulted in whole and unmapped when freed). The
    owner calls `return_memory_to_the_system` once idle for `TRIM_IDLE`. False when not
    glibc."""
    if _GLIBC is None:
        return False
    return bool(
        _GLIBC.mallopt(M_TRIM_THRESHOLD, up_to)
        and _GLIBC.mallopt(M_MMAP_THRESHOLD, allocations_below)
    )
