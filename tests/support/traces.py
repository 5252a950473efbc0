"""Scripted recordings for the replay and command tests: each call's bytes run through the
proxy's own tap (`TapSimulator`) and what it reports is written with `RecordingWriter`, so the
file holds the events a proxy would have recorded for that session."""

from __future__ import annotations

from typing import IO, Any, Optional

from golem_core.profiles import Profile, get_profile
from golem_proxy.events import Direction
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo, open_private
from tests.support.trace_builder import TapSimulator

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
        self.upstreams = {info.name: info.upstream for info in routes}
        self.tap = TapSimulator(self.profile)
        self.next_conn = 1
        self.open: dict[str, int] = {}  # route → its current connection
        self.ids = self.profile.request_ids()

    @classmethod
    def create(cls, path: str, profile: str = "golem", **kwargs: Any) -> TraceBuilder:
        """Write to ``path`` (replaced if it exists, mode 0600)."""
        return cls(open_private(path, overwrite=True), profile, **kwargs)

    def _conn(self, route: str) -> int:
        if route not in self.open:
            self.open[route] = self.next_conn
            self.tap.open(self.next_conn, route, upstream=self.upstreams.get(route, "upstream"))
            self.next_conn += 1
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
        conn = self._conn(route)
        self.tap.tick(self.step)
        self.tap.send(conn, Direction.C2S, self.profile.frame_payload(request))
        self.tap.tick(latency)
        self.tap.send(conn, Direction.S2C, self.profile.frame_payload(response))
        self._write()

    def reconnect(self, route: str = "main") -> None:
        """Close the route's connection; the next call opens a new one."""
        if route in self.open:
            self.tap.close(self.open.pop(route))
            self._write()

    def close(self) -> None:
        for route in list(self.open):
            self.reconnect(route)
        self._write()
        self.writer.close()

    def _write(self) -> None:
        for event in self.tap.events:
            self.writer.write(event)
        self.tap.events = []

    def __enter__(self) -> TraceBuilder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
