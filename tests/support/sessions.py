"""Deterministic synthetic GOLEM sessions, built event by event as the tap would report them.

Used by the TUI tests and the screenshot script: real payloads encoded with the
`golem` profile, typed by its parser, contract-checked, with fixed times, so that snapshots
and screenshots are reproducible.

Fed through the real tap (`TapSimulator`), `demo_session` comes out the same but for its
framing error: `frame_error` writes an oversized header as fatal, where the tap skips the
declared body (`BytesDiscarded`) and reports the stream truncated when it closes. Moving this
builder onto the tap means taking those events into the TUI snapshots.
"""

from __future__ import annotations

import base64
import dataclasses
import random
from collections.abc import Iterator
from typing import Any, Optional

from golem_core.contract import Violation
from golem_core.framing import FrameErrorKind
from golem_core.profiles import GOLEM, Profile
from golem_proxy.events import (
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    ExchangeCompleted,
    FrameSeen,
    FramingErrorSeen,
    ViolationSeen,
)
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo
from rhino_plugin.png import encode_rgb
from tests.support.frames import frame_seen

__all__ = ["SessionBuilder", "bulk_session", "demo_session", "golem_header", "write_recording"]


def golem_header() -> Header:
    """A fixed header for the two GOLEM routes (fixed start time: reproducible files)."""
    routes = (
        RouteInfo("main", "127.0.0.1:19876", "127.0.0.1:9876"),
        RouteInfo("gh", "127.0.0.1:19877", "127.0.0.1:9877"),
    )
    return Header("golem", routes, "2025-01-01T12:00:00.000000Z")


class SessionBuilder:
    """Appends the events of connections, requests and responses to ``events``."""

    def __init__(self, profile: Profile = GOLEM, *, check: bool = True) -> None:
        self.profile = profile
        self.check = check
        self.events: list[Event] = []
        self._index: dict[tuple[int, Direction], int] = {}
        self._routes: dict[int, str] = {}
        self._ids = 0

    def open(self, conn: int, t: float, route: str = "main") -> None:
        self._routes[conn] = route
        port = "9876" if route == "main" else "9877"
        self.events.append(
            ConnectionOpened(
                conn=conn,
                route=route,
                client=f"127.0.0.1:{50000 + conn}",
                upstream=f"127.0.0.1:{port}",
                t=t,
            )
        )

    def close(self, conn: int, t: float, reason: str = "client closed") -> None:
        self.events.append(
            ConnectionClosed(conn=conn, route=self._routes[conn], reason=reason, t=t)
        )

    def _frame(
        self,
        conn: int,
        direction: Direction,
        payload: bytes,
        t: float,
        answers: Optional[int] = None,
    ) -> FrameSeen:
        index = self._index.get((conn, direction), 0)
        self._index[(conn, direction)] = index + 1
        asks = direction is Direction.C2S
        frame = frame_seen(
            self.profile,
            direction,
            index,
            payload,
            conn=conn,
            route=self._routes[conn],
            t=t,
            size=len(payload) + 4,
            answers=answers,
        )
        # The tap's pairing decision: a request waits for its answer, which names it.
        if asks and self.profile.expects_response(frame.message):
            frame = dataclasses.replace(frame, expects_answer=True)
        self.events.append(frame)
        if self.check:
            for violation in self.profile.check_message(frame.message, payload):
                self._violation(frame, t, violation)
        return frame

    def _violation(self, frame: FrameSeen, t: float, violation: Violation) -> None:
        """What the tap reports when ``frame`` (or its exchange) breaks a rule."""
        self.events.append(
            ViolationSeen(
                conn=frame.conn,
                route=frame.route,
                direction=frame.direction,
                frame_index=frame.index,
                t=t,
                violation=violation,
            )
        )

    def request(
        self, conn: int, method: str, params: Any, t: float, *, raw: Optional[bytes] = None
    ) -> FrameSeen:
        """A request frame (``raw`` bytes instead of an encoded object, for malformed ones)."""
        self._ids += 1
        request_id = f"{self._ids:08x}-4e29-41d4-a716-446655440000"
        obj = {"id": request_id, "method": method, "params": params}
        payload = raw if raw is not None else self.profile.encode_payload(obj)
        return self._frame(conn, Direction.C2S, payload, t)

    def respond(
        self,
        request: FrameSeen,
        t: float,
        *,
        result: Any = None,
        error: Optional[dict[str, Any]] = None,
        obj: Optional[dict[str, Any]] = None,
    ) -> ExchangeCompleted:
        """The response to ``request`` (``obj`` overrides the envelope, to break the rules)."""
        if obj is None:
            request_id = getattr(request.message, "id", None)
            obj = {"id": request_id, "result": result, "error": error}
            if error is None and result is None:
                obj["result"] = {}
        payload = self.profile.encode_payload(obj)
        response = self._frame(request.conn, Direction.S2C, payload, t, answers=request.index)
        found = self.profile.check_exchange(request.message, response.message) if self.check else []
        for violation in found:
            self._violation(response, t, violation)
        outcome = self.profile.outcome(request.message, response.message)
        exchange = ExchangeCompleted(
            conn=request.conn,
            route=request.route,
            request=request,
            response=response,
            outcome=outcome,
        )
        self.events.append(exchange)
        return exchange

    def frame_error(self, conn: int, t: float, raw: bytes, declared: int) -> None:
        self.events.append(
            FramingErrorSeen(
                conn=conn,
                route=self._routes[conn],
                direction=Direction.C2S,
                t=t,
                kind=FrameErrorKind.OVERSIZED,
                detail=f"declared length {declared} exceeds the 64 MiB cap",
                raw=raw,
                recoverable=False,
                declared_length=declared,
            )
        )


def _capture_base64(width: int = 96, height: int = 60) -> str:
    """A small viewport capture, as the headless plugin encodes one: a shaded floor, a sky,
    and a box drawn in outline."""
    pixels = bytearray()
    for y in range(height):
        for x in range(width):
            if y < height * 0.55:
                shade = 150 + y
                pixel = (shade // 2, shade // 2 + 20, min(shade + 60, 255))  # sky
            else:
                pixel = (90 + (x + y) % 7, 95, 88)  # floor
            on_box = 30 <= x <= 66 and 16 <= y <= 46
            edge = on_box and (x in (30, 66) or y in (16, 46) or x - 30 == y - 16)
            if edge:
                pixel = (250, 210, 60)
            elif on_box:
                pixel = (200, 200, 205)
            pixels += bytes(pixel)
    return base64.b64encode(encode_rgb(width, height, bytes(pixels))).decode("ascii")


def demo_session() -> list[Event]:
    """A short realistic session on both routes: built-ins, scene queries, creation, a
    viewport capture with a base64 image, domain and JSON-RPC errors, a contract violation,
    a malformed request, an oversized frame, and a request still pending at the end."""
    s = SessionBuilder()
    s.open(1, 0.000)
    ping = s.request(1, "ping", {}, 0.002)
    s.respond(ping, 0.003, result={"pong": True})
    listed = s.request(1, "list_methods", {}, 0.010)
    s.respond(listed, 0.014, result={"methods": ["ping", "shutdown", "list_methods"]})
    info = s.request(1, "scene.get_document_info", {}, 0.120)
    s.respond(info, 0.151, result={"name": "bracket.3dm", "units": "Millimeters", "objects": 42})
    box = s.request(
        1,
        "creation.create_box",
        {
            "corner_x": 0.0,
            "corner_y": 0.0,
            "corner_z": 0.0,
            "width": 100.0,
            "depth": 50.0,
            "height": 30.0,
            "layer": "Default",
            "name": "base",
        },
        0.400,
    )
    s.respond(
        box,
        0.437,
        result={
            "guid": "a1b2c3d4-0000-4000-8000-00000000b0c5",
            "bounding_box": {"min": [0.0, 0.0, 0.0], "max": [100.0, 50.0, 30.0]},
        },
    )
    objects = s.request(1, "scene.list_objects", {"layer": "Default"}, 0.900)
    s.respond(
        objects,
        0.962,
        result={
            "objects": [
                {
                    "guid": f"a1b2c3d4-0000-4000-8000-{i:012x}",
                    "type": "Brep",
                    "layer": "Default",
                    "name": f"part-{i}",
                }
                for i in range(60)
            ]
        },
    )
    capture = s.request(
        1,
        "viewport.capture",
        {"view_name": "Perspective", "width": 800, "height": 600, "display_mode": "Shaded"},
        1.300,
    )
    s.respond(
        capture,
        1.774,
        result={
            "success": True,
            "image": _capture_base64(),
            "width": 800,
            "height": 600,
            "view_name": "Perspective",
            "display_mode": "Shaded",
        },
    )
    union = s.request(1, "operations.boolean_union", {"guids": ["a1b2c3d4"]}, 2.010)
    s.respond(
        union,
        2.031,
        error={
            "code": "INVALID_PARAMS",
            "message": "boolean_union needs at least two objects",
            "details": {"method": "operations.boolean_union"},
        },
        result=None,
    )
    hexagon = s.request(1, "creation.create_hexagon", {"radius": 5.0}, 2.500)
    s.respond(
        hexagon,
        2.502,
        error={"code": -32601, "message": "Method not found: creation.create_hexagon"},
    )
    s.open(2, 3.000, route="gh")
    components = s.request(2, "grasshopper.list_components", {}, 3.010)
    # A response without the explicit "error": null the contract requires.
    s.respond(
        components,
        3.090,
        obj={
            "id": getattr(components.message, "id", None),
            "result": {"components": ["Slider", "Panel"]},
        },
    )
    bad = s.request(1, "scene.list_layers", {}, 3.500, raw=b'{"id": "7", "method": "scene.li')
    s.respond(
        bad,
        3.502,
        obj={"id": None, "result": None, "error": {"code": -32603, "message": "Invalid JSON"}},
    )
    s.frame_error(2, 4.000, b'\x7f\xff\xff\xff{"id":', 2147483647)
    s.close(2, 4.001, "frame error: oversized")
    s.request(1, "grasshopper.recompute", {"definition": "bracket.gh"}, 4.800)
    return s.events


_METHODS = (
    "scene.list_objects",
    "creation.create_box",
    "scene.get_object_info",
    "manipulation.move",
    "viewport.zoom_extents",
    "ping",
    "scene.list_layers",
)


def bulk_session(exchanges: int, seed: int = 1) -> Iterator[Event]:
    """``exchanges`` small request/response pairs over a few connections, about 1% of them
    errors, at 1 ms intervals; yielded incrementally so a huge session needs little memory."""
    rng = random.Random(seed)
    s = SessionBuilder(check=False)  # all well-formed; checking 100k of them only costs time
    for conn in range(1, 5):
        s.open(conn, 0.0)
    yield from s.events
    for number in range(exchanges):
        s.events = []
        t = number * 0.001
        conn = 1 + number % 4
        method = _METHODS[number % len(_METHODS)]
        request = s.request(conn, method, {"layer": "Default", "n": number}, t)
        latency = rng.uniform(0.0002, 0.05)
        if rng.random() < 0.01:
            s.respond(
                request,
                t + latency,
                result=None,
                error={"code": "OBJECT_NOT_FOUND", "message": "no such object"},
            )
        else:
            s.respond(request, t + latency, result={"guid": f"{number:032x}", "ok": True})
        yield from s.events


def write_recording(path: str, events: Iterator[Event] | list[Event]) -> None:
    """Write ``events`` as a GOLEM recording at ``path`` (overwriting it)."""
    with RecordingWriter.create(path, golem_header(), overwrite=True) as writer:
        for event in events:
            writer.write(event)
