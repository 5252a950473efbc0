"""Run a `ReplayServer` in a background thread with its own trio loop, so synchronous code (a
sync test, a script) can use a replay server; trio code may use it too, since the server
never touches the caller's loop."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Sequence
from typing import Any, Callable, Optional

import trio

from ..net.addresses import Address
from .server import ReplayServer

__all__ = ["BackgroundReplay"]


class BackgroundReplay:
    """``with BackgroundReplay(server) as bound:`` → route name → bound Address."""

    def __init__(
        self, server: ReplayServer, beside: Sequence[Callable[..., Awaitable[Any]]] = ()
    ) -> None:
        """``beside``: tasks to run in the server's loop while it serves, each started
        (``nursery.start``) before the server is ready."""
        self.server = server
        self.beside = tuple(beside)
        self.bound: dict[str, Address] = {}
        self._thread: Optional[threading.Thread] = None
        self._ready = threading.Event()
        self._token: Optional[trio.lowlevel.TrioToken] = None
        self._cancel: Optional[trio.CancelScope] = None
        self._error: Optional[BaseException] = None

    def start(self, timeout: float = 10.0) -> dict[str, Address]:
        """Start serving; return the bound addresses. Raises what opening the listeners raised
        (ListenError), or TimeoutError."""
        self._thread = threading.Thread(target=self._run, name="golem-replay", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("the replay server did not start in time")
        if self._error is not None:
            raise self._error
        return self.bound

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # reported to the starting thread, never lost
            self._error = exc
        finally:
            self._ready.set()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            self._cancel = nursery.cancel_scope
            for task in self.beside:
                await nursery.start(task)
            self.bound = await nursery.start(self.server.run)
            self._ready.set()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving (open connections are closed) and wait for the thread."""
        if self._token is not None and self._cancel is not None:
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self._cancel.cancel, trio_token=self._token)
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> dict[str, Address]:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()
