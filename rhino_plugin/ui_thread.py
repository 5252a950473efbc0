"""The UI-thread hook: every document handler runs on one dedicated worker thread.

In Rhino, handlers must run on the UI thread, and the plugin waits for them at most 30 s. Here
one daemon thread plays the UI thread: calls queue up and run one at a time, in order. When a
call does not finish within the timeout the caller gets `UiTimeout`, but the worker keeps
running it, so later calls wait behind it exactly as they would behind a busy Rhino UI thread.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable, Optional

from golem_core.errors import UiTimeout

__all__ = ["UiThread"]

_Job = Optional[tuple[Callable[[], Any], "Future[Any]"]]


class UiThread:
    """A single worker thread with a `run(call, timeout)` that fits the Dispatcher's
    ``ui_runner`` slot."""

    def __init__(self, name: str = "rhino-ui") -> None:
        self._jobs: queue.Queue[_Job] = queue.Queue()
        # Daemon: a handler stuck past its timeout must not keep the process alive at exit.
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._started = False

    def start(self) -> None:
        """Start the worker (idempotent)."""
        if not self._started:
            self._started = True
            self._thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        """Ask the worker to finish after the queued calls and wait up to ``timeout`` seconds
        (a handler that is still running is left to finish on its own)."""
        if self._started:
            self._jobs.put(None)
            self._thread.join(timeout)

    def run(self, call: Callable[[], Any], timeout: float) -> Any:
        """Run ``call`` on the worker and return its result or re-raise its exception.

        Raises UiTimeout when it has not completed within ``timeout`` seconds (counting the
        time spent queued behind earlier calls)."""
        future: Future[Any] = Future()
        self._jobs.put((call, future))
        try:
            return future.result(timeout)
        except FutureTimeout:
            raise UiTimeout(
                f"UI thread did not execute the handler within {timeout:g} seconds.",
                {"timeout_seconds": timeout},
            ) from None

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            call, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(call())
            except BaseException as exc:  # handed to the waiting caller, never lost here
                future.set_exception(exc)
