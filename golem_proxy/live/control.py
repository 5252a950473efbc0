"""Driving a running proxy session from another thread: the terminal UI runs on its own
thread (Textual's asyncio loop) while the session runs under trio in a worker thread.

`LiveControl` is handed to both. The session side calls `attach` from its trio run; the UI
side calls the other methods, which run on the session's trio thread
(``trio.from_thread``), so the intercept engine and the proxy are only ever touched there.
The UI never touches sockets: it asks, and gets values back.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar

import trio

from ..events import Direction
from .intercept import Decision, InterceptEngine
from .resend import ResendError, Resent
from .session import ProxySession

__all__ = ["HeldView", "LiveControl", "NotLive"]

T = TypeVar("T")


class NotLive(RuntimeError):
    """The session is not running (not started yet, or over)."""


@dataclass(frozen=True)
class HeldView:
    """A held frame as the UI sees it: a copy, safe to keep on another thread."""

    id: int
    conn: int
    route: str
    direction: Direction
    method: Optional[str]
    message_id: Any
    """The id to answer with (an answer by hand carries it back)."""
    payload: bytes
    age: float
    shown_id: Any = None
    """The id as the connection's redaction (``--redact``) leaves it: what the panel shows."""


class LiveControl:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._token: Optional[trio.lowlevel.TrioToken] = None
        self._session: Optional[ProxySession] = None

    def attach(self, session: ProxySession) -> None:
        """Called from the session's trio run, before it serves."""
        with self._lock:
            self._token = trio.lowlevel.current_trio_token()
            self._session = session

    def detach(self) -> None:
        with self._lock:
            self._token = None
            self._session = None

    # What follows is the UI's side, called from any other thread.
    @property
    def engine(self) -> Optional[InterceptEngine]:
        session = self._session
        return session.config.options.intercept if session is not None else None

    def _call(self, fn: Callable[[], T]) -> T:
        with self._lock:
            token = self._token
        if token is None:
            raise NotLive("the proxy is not running")
        try:
            return trio.from_thread.run_sync(fn, trio_token=token)
        except trio.RunFinishedError:
            raise NotLive("the proxy has stopped") from None

    def _engine(self) -> InterceptEngine:
        engine = self.engine
        if engine is None:
            raise NotLive(
                "this session cannot intercept: start it with --intercept '' (or a filter), "
                "which makes its routes forward frame by frame"
            )
        return engine

    def held(self) -> list[HeldView]:
        """The frames held now, the oldest first."""

        def snapshot() -> list[HeldView]:
            now = trio.current_time()
            return [
                HeldView(
                    h.id,
                    h.conn,
                    h.route,
                    h.direction,
                    h.method,
                    h.message.id,
                    h.payload,
                    h.age(now),
                    h.view.message.id,
                )
                for h in self._engine().held()
            ]

        return self._call(snapshot)

    def decide(self, held_id: int, decision: Decision) -> None:
        """See `InterceptEngine.decide`; raises its InterceptError here."""
        self._call(lambda: self._engine().decide(held_id, decision))

    def accept_all(self) -> int:
        return self._call(lambda: self._engine().accept_all())

    def set_filter(self, text: Optional[str]) -> str:
        """Hold what ``text`` selects (None or "": nothing); returns the filter as parsed
        (empty when off). Raises FilterError."""

        def apply() -> str:
            engine = self._engine()
            engine.set_filter(text or None)
            return "" if engine.filter is None else str(engine.filter)

        return self._call(apply)

    def intercept_filter(self) -> str:
        return self._call(lambda: str(self._engine().filter or ""))

    def resend(self, route: str, payload: bytes, timeout: float = 30.0) -> Resent:
        """Send ``payload`` again through the session (`Proxy.resend`) and wait for the answer.
        Blocks: call it from a worker thread, never the UI's. Raises ResendError or NotLive."""
        with self._lock:
            token, session = self._token, self._session
        if token is None or session is None:
            raise NotLive("the proxy is not running")
        proxy = session.proxy

        async def run() -> Resent:
            return await proxy.resend(route, payload, timeout)

        try:
            return trio.from_thread.run(run, trio_token=token)
        except trio.RunFinishedError:
            raise ResendError("the proxy has stopped") from None
