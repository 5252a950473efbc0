"""Build recordings without a proxy: the events a tap would have reported for a scripted session,
written with `RecordingWriter`. For tests, benchmarks and examples."""

from __future__ import annotations

from typing import IO, Any, Optional

from golem_core.messages import Role
from golem_core.profiles import Profile, get_profile

from ..events import (
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    ExchangeCompleted,
    FrameSeen,
)
from ..recording.format import Header, RecordingWriter, RouteInfo, open_private

__all__ = ["TraceBuilder"]

DEFAULT_ROUTES = (
    RouteInfo("main", "127.0.0.1:19876", "127.0.0.1:9876"),
    RouteInfo("gh", "127.0.0.1:19877", "127.0.0.1:9877"),
)


class TraceBuilder:
    """Writes a scripted session: `call()` records one exchange on the current connection of a
    route (opening one if needed), `reconnect()` starts a new connection."""

    def __init__(
        self,
        stream: IO[bytes],
        profile: str = "golem",
        routes: tuple[RouteInfo, ...] = DEFAULT_ROUTES,
        *,
        step: float = 0.001,
    ) -> None:
        self.profile: Profile = get_profile(profile)
        self.writer = RecordingWriter(stream, Header.new(profile, routes))
        self.step = step
        self.t = 0.0
        self.next_conn = 1
        self.open: dict[str, tuple[int, list[int]]] = {}  # route → (conn, [c2s n, s2c n])
        self.ids = self.profile.request_ids()

    @classmethod
    def create(cls, path: str, profile: str = "golem", **kwargs: Any) -> TraceBuilder:
        """Write to ``path`` (replaced if it exists, mode 0600)."""
        return cls(open_private(path, overwrite=True), profile, **kwargs)

    def _conn(self, route: str) -> tuple[int, list[int]]:
        if route not in self.open:
            conn = self.next_conn
            self.next_conn += 1
            self.writer.write(
                ConnectionOpened(
                    conn=conn, route=route, client="127.0.0.1:50000", upstream="upstream", t=self.t
                )
            )
            self.open[route] = (conn, [0, 0])
        return self.open[route]

    def fresh_id(self) -> Any:
        """The next request id, minted as the profile's reference client does."""
        return next(self.ids)

    def call(
        self,
        method: str,
        params: Optional[dict[str, Any]] = None,
        result: Any = None,
        *,
        error: Optional[tuple[Any, str]] = None,
        route: str = "main",
        latency: float = 0.001,
        request_id: Any = None,
    ) -> Any:
        """Record ``method(params)`` answered by ``result`` (or ``error=(code, message)``).
        Returns the request id used."""
        ident = self.fresh_id() if request_id is None else request_id
        request = self.profile.request(ident, method, params or {})
        if error is not None:
            response = self.profile.error(ident, error[0], error[1])
        else:
            response = self.profile.success(ident, {} if result is None else result)
        self.raw_exchange(
            self.profile.encode_payload(request),
            self.profile.encode_payload(response),
            route=route,
            latency=latency,
        )
        return ident

    def raw_exchange(
        self, request: bytes, response: bytes, *, route: str = "main", latency: float = 0.001
    ) -> None:
        """Record an exchange from exact payload bytes (malformed ones included)."""
        conn, counters = self._conn(route)
        self.t += self.step
        req = self._frame(conn, route, Direction.C2S, counters[0], request, Role.REQUEST)
        counters[0] += 1
        self.t += latency
        resp = self._frame(
            conn, route, Direction.S2C, counters[1], response, Role.RESPONSE, answers=req.index
        )
        counters[1] += 1
        outcome = self.profile.outcome(req.message, resp.message)
        self.writer.write(
            ExchangeCompleted(conn=conn, route=route, request=req, response=resp, outcome=outcome)
        )

    def _frame(
        self,
        conn: int,
        route: str,
        direction: Direction,
        n: int,
        payload: bytes,
        role: Role,
        answers: Optional[int] = None,
    ) -> FrameSeen:
        message = self.profile.parse(payload, role)
        size = len(self.profile.frame_payload(payload)) if b"\n" not in payload else len(payload)
        frame = FrameSeen(
            conn=conn,
            route=route,
            direction=direction,
            index=n,
            t=self.t,
            size=size,
            payload=payload,
            message=message,
            expects_answer=role is Role.REQUEST,
            answers=answers,
        )
        self.writer.write(frame)
        return frame

    def reconnect(self, route: str = "main") -> None:
        """Close the route's connection; the next call opens a new one."""
        if route in self.open:
            conn, _ = self.open.pop(route)
            self.writer.write(
                ConnectionClosed(conn=conn, route=route, reason="client closed", t=self.t)
            )

    def close(self) -> None:
        for route in list(self.open):
            self.reconnect(route)
        self.writer.close()

    def __enter__(self) -> TraceBuilder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
