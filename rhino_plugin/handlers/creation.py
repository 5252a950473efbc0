"""Primitive creators under both spellings: ``creation.*`` (the plugin's names, flat params such
as ``corner_x``/``width``) and ``geometry.*`` (the MCP server's names, point lists such as
``corner=[x, y, z]``).

Each primitive is computed once, from a `Spec` (kind, type, bounding box, inputs), and added to
the document on ``layer`` (or the current layer). Both spellings answer ``guid``, ``type`` and
``bounding_box``.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

from golem_core.dispatcher import Handler
from golem_core.errors import InvalidParams

from ..document import Document
from ..geometry import BoundingBox
from ..params import (
    Point,
    first_present,
    opt_bool,
    opt_number,
    opt_point,
    opt_str,
    req_number,
    req_point,
    req_points,
    req_str,
)
from .common import created, parse_color

__all__ = ["CreationHandlers"]

Params = dict[str, Any]
ORIGIN: Point = (0.0, 0.0, 0.0)


class Spec(NamedTuple):
    """What a creator computed: Rhino object type, bounding box, and the inputs to record."""

    kind: str
    object_type: str
    bbox: BoundingBox
    inputs: dict[str, Any]


def _flat_point(params: Params, prefix: str) -> Point:
    """``prefix_x/_y/_z`` (each defaults to 0) as a point."""
    return (
        opt_number(params, f"{prefix}_x", 0.0),
        opt_number(params, f"{prefix}_y", 0.0),
        opt_number(params, f"{prefix}_z", 0.0),
    )


def _box(corner: Point, width: float, depth: float, height: float) -> Spec:
    far = (corner[0] + width, corner[1] + depth, corner[2] + height)
    return Spec(
        "box",
        "Brep",
        BoundingBox.around([corner, far]),
        {"corner": list(corner), "width": width, "depth": depth, "height": height},
    )


def _sphere(center: Point, radius: float) -> Spec:
    return Spec(
        "sphere",
        "Brep",
        _around(center, radius, radius),
        {"center": list(center), "radius": radius},
    )


def _around(center: Point, rx: float, rz: float) -> BoundingBox:
    return BoundingBox(
        (center[0] - rx, center[1] - rx, center[2] - rz),
        (center[0] + rx, center[1] + rx, center[2] + rz),
    )


def _upright(kind: str, base: Point, radius: float, height: float, cap: bool) -> Spec:
    top = (base[0] + radius, base[1] + radius, base[2] + height)
    bottom = (base[0] - radius, base[1] - radius, base[2])
    return Spec(
        kind,
        "Brep",
        BoundingBox.around([bottom, top]),
        {"base_center": list(base), "radius": radius, "height": height, "cap": cap},
    )


def _torus(center: Point, major: float, minor: float, param: str) -> Spec:
    if minor >= major:
        raise InvalidParams("Parameter 'minor_radius' must be smaller than 'major_radius'.", param)
    outer = major + minor
    return Spec(
        "torus",
        "Brep",
        _around(center, outer, minor),
        {"center": list(center), "major_radius": major, "minor_radius": minor},
    )


def _line(start: Point, end: Point) -> Spec:
    if start == end:
        raise InvalidParams("Parameter 'end' must differ from 'start'.", "end")
    return Spec(
        "line", "Curve", BoundingBox.around([start, end]), {"start": list(start), "end": list(end)}
    )


def _polyline(points: list[Point], closed: bool) -> Spec:
    return Spec(
        "polyline",
        "Curve",
        BoundingBox.around(points),
        {"points": [list(p) for p in points], "closed": closed},
    )


def _circle(center: Point, radius: float) -> Spec:
    return Spec(
        "circle", "Curve", _around(center, radius, 0.0), {"center": list(center), "radius": radius}
    )


def _arc(center: Point, radius: float, start_angle: float, end_angle: float) -> Spec:
    if math.isclose(start_angle % 360.0, end_angle % 360.0) or start_angle == end_angle:
        raise InvalidParams("Parameter 'end_angle' must differ from 'start_angle'.", "end_angle")
    sweep = (end_angle - start_angle) % 360.0 or 360.0
    # The arc's extent: its end points plus every axis crossing it sweeps over.
    angles = [start_angle, start_angle + sweep]
    angles += [a for a in range(0, 720, 90) if start_angle < a < start_angle + sweep]
    points = [
        (
            center[0] + radius * math.cos(math.radians(a)),
            center[1] + radius * math.sin(math.radians(a)),
            center[2],
        )
        for a in angles
    ]
    return Spec(
        "arc",
        "Curve",
        BoundingBox.around(points),
        {
            "center": list(center),
            "radius": radius,
            "start_angle": start_angle,
            "end_angle": end_angle,
        },
    )


def _point(location: Point) -> Spec:
    return Spec("point", "Point", BoundingBox(location, location), {"location": list(location)})


def _text(text: str, position: Point, height: float, font: str) -> Spec:
    # A rough text extent: 0.6 of the height per character, as a typical sans-serif.
    far = (position[0] + 0.6 * height * len(text), position[1] + height, position[2])
    return Spec(
        "text",
        "Annotation",
        BoundingBox.around([position, far]),
        {"text": text, "position": list(position), "height": height, "font": font},
    )


class CreationHandlers:
    """The creators over one `Document`."""

    def __init__(self, document: Document) -> None:
        self.doc = document

    def table(self) -> dict[str, Handler]:
        """Method name → handler, for both spellings."""
        plugin: dict[str, Callable[[Params], Spec]] = {
            "box": lambda p: _box(
                _flat_point(p, "corner"),
                req_number(p, "width", positive=True),
                req_number(p, "depth", positive=True),
                req_number(p, "height", positive=True),
            ),
            "sphere": lambda p: _sphere(
                _flat_point(p, "center"), req_number(p, "radius", positive=True)
            ),
            "cylinder": lambda p: _upright(
                "cylinder",
                _flat_point(p, "base"),
                req_number(p, "radius", positive=True),
                req_number(p, "height", positive=True),
                opt_bool(p, "cap", True),
            ),
            "cone": lambda p: _upright(
                "cone",
                _flat_point(p, "base"),
                req_number(p, "radius", positive=True),
                req_number(p, "height", positive=True),
                opt_bool(p, "cap", True),
            ),
            "torus": lambda p: _torus(
                _flat_point(p, "center"),
                req_number(p, "major_radius", positive=True),
                req_number(p, "minor_radius", positive=True),
                "minor_radius",
            ),
            "line": lambda p: _line(_flat_point(p, "start"), _flat_point(p, "end")),
            "polyline": lambda p: _polyline(
                req_points(p, "points", minimum=2), opt_bool(p, "closed", False)
            ),
            "arc": lambda p: _arc(
                _flat_point(p, "center"),
                req_number(p, "radius", positive=True),
                opt_number(p, "start_angle", 0.0),
                req_number(p, "end_angle"),
            ),
            "circle": lambda p: _circle(
                _flat_point(p, "center"), req_number(p, "radius", positive=True)
            ),
            "point": lambda p: _point(
                (req_number(p, "x"), req_number(p, "y"), opt_number(p, "z", 0.0))
            ),
            "text": lambda p: _text(
                req_str(p, "text"),
                _flat_point_xyz(p),
                opt_number(p, "height", 1.0, positive=True),
                opt_str(p, "font") or "Arial",
            ),
        }
        client: dict[str, Callable[[Params], Spec]] = {
            "box": lambda p: _box(
                opt_point(p, "corner", ORIGIN),
                req_number(p, "width", positive=True),
                req_number(p, "depth", positive=True),
                req_number(p, "height", positive=True),
            ),
            "sphere": lambda p: _sphere(
                opt_point(p, "center", ORIGIN), req_number(p, "radius", positive=True)
            ),
            "cylinder": lambda p: _upright(
                "cylinder",
                opt_point(p, "base_center", ORIGIN),
                req_number(p, "radius", positive=True),
                req_number(p, "height", positive=True),
                opt_bool(p, "cap", True),
            ),
            "cone": lambda p: _upright(
                "cone",
                opt_point(p, "base_center", ORIGIN),
                req_number(p, "radius", positive=True),
                req_number(p, "height", positive=True),
                opt_bool(p, "cap", True),
            ),
            "torus": lambda p: _torus(
                opt_point(p, "center", ORIGIN),
                req_number(p, "major_radius", positive=True),
                req_number(p, "minor_radius", positive=True),
                "minor_radius",
            ),
            "line": lambda p: _line(req_point(p, "start"), req_point(p, "end")),
            "polyline": lambda p: _polyline(
                req_points(p, "points", minimum=2), opt_bool(p, "closed", False)
            ),
            "arc": lambda p: _arc(
                opt_point(p, "center", ORIGIN),
                req_number(p, "radius", positive=True),
                opt_number(p, "start_angle", 0.0),
                req_number(p, "end_angle"),
            ),
            "circle": lambda p: _circle(
                opt_point(p, "center", ORIGIN), req_number(p, "radius", positive=True)
            ),
            "point": lambda p: _point(_client_location(p)),
            "text": lambda p: _text(
                req_str(p, "text"),
                opt_point(p, first_present(p, "position", "point") or "position", ORIGIN),
                opt_number(p, "height", 1.0, positive=True),
                opt_str(p, "font") or "Arial",
            ),
        }
        table: dict[str, Handler] = {}
        for kind, build in plugin.items():
            table[f"creation.create_{kind}"] = self._creator(build)
        for kind, build in client.items():
            table[f"geometry.create_{kind}"] = self._creator(build)
        return table

    def _creator(self, build: Callable[[Params], Spec]) -> Handler:
        def create(params: Params) -> dict[str, Any]:
            spec = build(params)
            color = parse_color(params, "color")
            layer = opt_str(params, "layer")
            geometry = {"kind": spec.kind, **spec.inputs}
            obj = self.doc.add_object(
                spec.object_type, spec.bbox, geometry, layer, opt_str(params, "name") or ""
            )
            obj.color = color
            return created(obj)

        return create


def _flat_point_xyz(params: Params) -> Point:
    """``x``/``y``/``z`` (each defaults to 0), as creation.create_text reads its position."""
    return (
        opt_number(params, "x", 0.0),
        opt_number(params, "y", 0.0),
        opt_number(params, "z", 0.0),
    )


def _client_location(params: Params) -> Point:
    """geometry.create_point's location: ``location`` or ``point`` as a point, else ``x/y/z``."""
    name = first_present(params, "location", "point")
    if name is not None:
        return req_point(params, name)
    if params.get("x") is None:
        raise InvalidParams("Required parameter 'location' is missing.", "location")
    return (req_number(params, "x"), req_number(params, "y"), opt_number(params, "z", 0.0))
