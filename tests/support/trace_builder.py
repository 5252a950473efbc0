"""Build realistic recordings for the reader tests without sockets.

`TapSimulator` feeds the exact bytes of a session, in arbitrary chunks, to the proxy's own
`ConnectionTap` (one per connection), so the events it collects are the ones the proxy would
record, and it keeps the bytes, so exports can be compared with what was fed.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any, Optional

from golem_core.profiles import GOLEM, Profile
from golem_proxy.events import ConnectionClosed, ConnectionOpened, Direction, Event
from golem_proxy.live.tap import ConnectionTap
from golem_proxy.live.tap_limits import DEFAULT_LIMITS, ObserveLimits
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo


@dataclass
class _Conn:
    route: str
    tap: ConnectionTap
    fed: dict[Direction, bytearray] = field(
        default_factory=lambda: {d: bytearray() for d in Direction}
    )


class TapSimulator:
    """Turns the bytes of a session into the events the proxy's tap emits."""

    def __init__(
        self,
        profile: Profile = GOLEM,
        cap: Optional[int] = None,
        limits: ObserveLimits = DEFAULT_LIMITS,
    ) -> None:
        self.profile = profile
        self.cap = cap
        self.limits = limits
        self.events: list[Event] = []
        self.conns: dict[int, _Conn] = {}
        self._micros = 0  # whole microseconds, so times survive the recording's rounding

    @property
    def t(self) -> float:
        return self._micros / 1e6

    def tick(self, seconds: float) -> None:
        self._micros += round(seconds * 1e6)

    def open(self, conn: int, route: str = "main", *, upstream: str = "127.0.0.1:9876") -> None:
        tap = ConnectionTap(
            conn, route, self.profile, self._publish, cap=self.cap, limits=self.limits
        )
        self.conns[conn] = _Conn(route, tap)
        client = f"127.0.0.1:{50000 + conn}"
        opened = ConnectionOpened(
            conn=conn, route=route, client=client, upstream=upstream, t=self.t
        )
        self.events.append(opened)

    def _publish(self, event: Event) -> None:
        # Looked up on each event: a caller may hand ``events`` a fresh list between batches.
        self.events.append(event)

    def send(self, conn: int, direction: Direction, data: bytes, *, chunk: int = 0) -> None:
        """Bytes crossing the proxy; ``chunk`` > 0 splits them into reads of that size."""
        state = self.conns[conn]
        state.fed[direction] += data
        pieces = [data[i : i + chunk] for i in range(0, len(data), chunk)] if chunk else [data]
        for piece in pieces:
            state.tap.process(direction, piece, self.t)

    def request(self, conn: int, obj: Any, **kw: Any) -> None:
        self.send(conn, Direction.C2S, self.profile.encode(obj), **kw)

    def respond(self, conn: int, obj: Any, **kw: Any) -> None:
        self.send(conn, Direction.S2C, self.profile.encode(obj), **kw)

    def close(self, conn: int, reason: str = "client closed") -> None:
        state = self.conns[conn]
        for direction in Direction:
            state.tap.process(direction, b"", self.t)
        self.events.append(
            ConnectionClosed(
                conn=conn,
                route=state.route,
                reason=reason,
                t=self.t,
                bytes_c2s=len(state.fed[Direction.C2S]),
                bytes_s2c=len(state.fed[Direction.S2C]),
            )
        )

    def fed(self, conn: int, direction: Direction) -> bytes:
        return bytes(self.conns[conn].fed[direction])


def write_recording(
    events: list[Event], profile: str = "golem", routes: Optional[list[RouteInfo]] = None
) -> bytes:
    """The bytes of a recording holding ``events`` (header included)."""
    stream = io.BytesIO()
    header = Header(
        profile,
        tuple(routes or [RouteInfo("main", "127.0.0.1:19876", "127.0.0.1:9876")]),
        "2024-01-01T00:00:00.000000Z",
    )
    writer = RecordingWriter(stream, header)
    for event in events:
        writer.write(event)
    writer.flush()
    return stream.getvalue()


def golem_session() -> TapSimulator:
    """A GOLEM session with every kind of row: successes, both error code families, non-ASCII,
    a payload spanning lines, malformed frames both ways, an orphan, catalogue drift, a framing
    error with discarded bytes, a truncated frame and requests left pending or unanswered."""
    tap = TapSimulator(GOLEM, cap=1024)
    c2s, s2c = Direction.C2S, Direction.S2C
    tap.open(1)
    tap.request(1, {"id": "a1", "method": "ping", "params": {}}, chunk=3)
    tap.tick(0.004)
    tap.respond(1, {"id": "a1", "result": {"alive": True}, "error": None})
    tap.tick(0.010)
    box = {"corner_x": 0.0, "corner_y": 0.0, "corner_z": 0.0, "width": 10.0, "depth": 5.0}
    box.update(height=3.0, name="Boîte 🧊", colour="red")
    tap.request(1, {"id": "a2", "method": "creation.create_box", "params": box})
    tap.tick(0.120)
    tap.respond(1, {"id": "a2", "result": {"guid": "g-1"}, "error": None}, chunk=7)
    tap.tick(0.010)
    tap.request(1, {"id": "a3", "method": "creation.create_hexagon", "params": {}})
    tap.tick(0.002)
    not_found = {"code": -32601, "message": "Method not found: creation.create_hexagon"}
    tap.respond(1, {"id": "a3", "result": None, "error": not_found})
    tap.tick(0.010)
    tap.request(1, {"id": "a4", "method": "scene.get_object", "params": {"guid": "nope"}})
    tap.tick(0.030)
    missing = {"code": "OBJECT_NOT_FOUND", "message": "No object with GUID nope"}
    tap.respond(1, {"id": "a4", "result": None, "error": missing})
    tap.tick(0.010)
    # A request that is not JSON, answered -32603 with a null id, as the plugin does.
    tap.send(1, c2s, GOLEM.frame_payload(b'{"id": "a5", "method": '))
    tap.tick(0.001)
    internal = {"code": -32603, "message": "Invalid request: Expecting value"}
    tap.respond(1, {"id": None, "result": None, "error": internal})
    tap.tick(0.010)
    # Pretty-printed JSON: the payload spans lines, so the recording stores it raw.
    pretty = b'{\n  "id": "a6",\n  "method": "ping",\n  "params": {}\n}'
    tap.send(1, c2s, GOLEM.frame_payload(pretty))
    tap.tick(0.003)
    tap.send(1, s2c, GOLEM.frame_payload(b'{"id": "a6", "result": {"alive": true}}'))
    tap.tick(0.010)
    tap.request(1, {"id": "a7", "method": "scene.list_objects", "params": {}})
    tap.tick(0.050)
    tap.send(1, s2c, GOLEM.frame_payload(b'{"id": "a7", "result": "\xff\xfe"}'))
    tap.tick(0.010)
    tap.respond(1, {"id": "zz", "result": {}, "error": None})  # answers nothing: an orphan
    tap.tick(0.010)
    tap.request(1, {"id": "a8", "method": "view.capture_viewport", "params": {}})
    tap.tick(0.500)
    tap.close(1)  # a8 is never answered

    tap.open(2, "gh")
    tap.request(2, {"id": "b1", "method": "grasshopper.get_canvas_info", "params": {}})
    tap.tick(0.200)
    tap.respond(2, {"id": "b1", "result": {"components": 3}, "error": None})
    tap.tick(0.010)
    # A frame over the (1 KiB) cap: its body is forwarded as discarded bytes.
    tap.send(2, c2s, (1500).to_bytes(4, "big") + b"x" * 1500, chunk=600)
    tap.tick(0.010)
    tap.request(2, {"id": "b2", "method": "grasshopper.recompute", "params": {}})
    tap.tick(0.010)
    tap.send(2, s2c, b"\x00\x00\x01\x00{partial")  # the stream stops inside this frame
    tap.close(2, "upstream reset")

    tap.open(3)
    tap.request(3, {"id": "c1", "method": "scene.list_layers", "params": {}})  # still pending
    return tap
