"""Run a function in a forked child process and collect its pickled result.

This is how loading a large trace uses a second core: the child inherits the memory-mapped
file, reads its half and sends back compact rows. Forking is used only where it is safe and
worth it (Linux, more than one CPU, no other thread running: a fork copies only the calling
thread, and a lock another thread held would stay locked in the child); elsewhere `start`
returns None and the caller does the work itself."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
from typing import Any, Callable, Generic, Optional, TypeVar

__all__ = ["ForkedCall", "ForkedCallError", "can_fork"]

T = TypeVar("T")


class ForkedCallError(Exception):
    """The child died or sent something unreadable (its own exceptions are re-raised)."""


def can_fork() -> bool:
    """True where `ForkedCall.start` would fork."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    if threading.active_count() != 1:
        return False
    return len(os.sched_getaffinity(0)) >= 2


class ForkedCall(Generic[T]):
    """A function running in a child process. Collect it with `result()`, or `cancel()` it."""

    def __init__(self, pid: int, reader: int) -> None:
        self._pid = pid
        self._reader: Optional[int] = reader
        self._reaped = False

    @classmethod
    def start(cls, function: Callable[[], T]) -> Optional[ForkedCall[T]]:
        """Run ``function`` in a child; None when forking is unavailable, unsafe or fails
        here (no memory, no process slot): the caller then does the work itself."""
        if not can_fork():
            return None
        try:
            reader, writer = os.pipe()
        except OSError:
            return None
        try:
            pid = os.fork()
        except OSError:
            os.close(reader)
            os.close(writer)
            return None
        if pid == 0:  # the child: never returns into the caller's code
            status = 1
            try:
                os.close(reader)
                try:
                    outcome: tuple[str, Any] = ("ok", function())
                except Exception as exc:
                    outcome = ("error", exc)
                data = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(writer, "wb") as pipe:
                    pipe.write(data)
                status = 0
            finally:
                os._exit(status)
        os.close(writer)
        return cls(pid, reader)

    def result(self) -> T:
        """Wait for the child and return its result; re-raises its exception. Raises
        ForkedCallError when it died or its answer cannot be read. Interrupted (Ctrl-C),
        it stops the child before passing the interruption on."""
        assert self._reader is not None, "result() or cancel() was called already"
        try:
            with os.fdopen(self._reader, "rb") as pipe:
                self._reader = None
                data = pipe.read()
        except BaseException:
            self.cancel()
            raise
        status = self._reap()
        # A complete answer is a pickle that loads; the exit status is only known when this
        # process reaps its children (SIGCHLD not ignored).
        if status not in (0, None) or not data:
            raise ForkedCallError(f"the child process ended with status {status}")
        try:
            kind, value = pickle.loads(data)
        except Exception as exc:
            raise ForkedCallError(f"unreadable answer from the child: {exc}") from None
        if kind == "error":
            raise value
        return value  # type: ignore[no-any-return]

    def cancel(self) -> None:
        """Stop the child and release its resources (no-op once collected)."""
        if not self._reaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
        if self._reader is not None:
            os.close(self._reader)
            self._reader = None
        self._reap()

    def _reap(self) -> Optional[int]:
        """The child's exit code once it ended; None when it was reaped elsewhere."""
        if self._reaped:
            return 0
        try:
            _, status = os.waitpid(self._pid, 0)
        except ChildProcessError:  # SIGCHLD ignored: the kernel reaped it already
            self._reaped = True
            return None
        self._reaped = True
        return os.waitstatus_to_exitcode(status)
