"""``creation.*`` and ``geometry.*`` of golem-3dmcp@9819b31 (``handlers/creation.py``).

``creation.*`` reads flat coordinates (``corner_x``…) with defaults and answers ``{"guid"}``;
``geometry.*`` reads points as ``[x, y, z]`` or ``{x, y, z}`` and answers ``{guid, type,
bounding_box}``. Not wrapped: failures are -32000 error envelopes.
"""

from __future__ import annotations

from typing import Any

from ..document import Document
from ..geometry import BoundingBox
from .kit import (
    Params,
    Point,
    add_object,
    bbox_json,
    dict_points,
    flat_point,
    layer_path,
)
from .shapes import (
    arc_data,
    box_data,
    circle_data,
    cone_data,
    cylinder_data,
    polyline_data,
    sphere_data,
    text_data,
    torus_data,
)

__all__ = ["CreationHandlers", "Creator"]


class Creator:
    """What both spellings share: the document and adding an object to it."""

    def __init__(self, document: Document) -> None:
        self.doc = document

    def _add_flat(self, params: Params, rhino_class: str, kind: str, data: Any) -> dict[str, Any]:
        """creation.*: layer and name, then ``{"guid"}``."""
        layer = layer_path(self.doc, params.get("layer", None))
        bbox, extra = data
        obj = add_object(
            self.doc, rhino_class, kind, bbox, layer=layer, name=params.get("name"), **extra
        )
        return {"guid": obj.guid}

    def _add(
        self, params: Params, rhino_class: str, kind: str, result_type: str, data: Any,
        *, layer: Any = None, box_in_result: bool = True,
    ) -> dict[str, Any]:  # fmt: skip
        """geometry.*: ``{guid, type, bounding_box}`` (``bounding_box`` null for annotations)."""
        if layer is None:
            layer = layer_path(self.doc, params.get("layer"))
        bbox, extra = data
        obj = add_object(
            self.doc, rhino_class, kind, bbox, layer=layer, name=params.get("name"),
            color=params.get("color"), **extra,
        )  # fmt: skip
        return {
            "guid": obj.guid,
            "type": result_type,
            "bounding_box": bbox_json(bbox) if box_in_result else None,
        }


class CreationHandlers(Creator):
    """``creation.*``: flat coordinates, ``{"guid"}`` answers."""

    def create_box(self, p: Params) -> dict[str, Any]:
        corner = flat_point(p, "corner_")
        w, d, h = (float(p.get(k, 1.0)) for k in ("width", "depth", "height"))
        if w <= 0 or d <= 0 or h <= 0:
            raise ValueError("width, depth, and height must all be greater than zero.")
        return self._add_flat(p, "Brep", "box", box_data(corner, w, d, h))

    def create_sphere(self, p: Params) -> dict[str, Any]:
        center, r = _center_and_radius(p)
        return self._add_flat(p, "Brep", "sphere", sphere_data(center, r))

    def _c_upright(self, p: Params, kind: str) -> dict[str, Any]:
        base = flat_point(p, "base_")
        r = float(p.get("radius", 1.0))
        h = float(p.get("height", 1.0))
        cap = bool(p.get("cap", True))
        if r <= 0:
            raise ValueError("radius must be greater than zero.")
        if h == 0:
            raise ValueError("height must be non-zero.")
        build = cylinder_data if kind == "cylinder" else cone_data
        return self._add_flat(p, "Brep", kind, build(base, r, h, cap))

    def create_cylinder(self, p: Params) -> dict[str, Any]:
        return self._c_upright(p, "cylinder")

    def create_cone(self, p: Params) -> dict[str, Any]:
        return self._c_upright(p, "cone")

    def create_torus(self, p: Params) -> dict[str, Any]:
        center = flat_point(p, "center_")
        major = float(p.get("major_radius", 2.0))
        minor = float(p.get("minor_radius", 0.5))
        if major <= 0 or minor <= 0:
            raise ValueError("major_radius and minor_radius must both be greater than zero.")
        if minor >= major:
            raise ValueError("minor_radius must be less than major_radius.")
        return self._add_flat(p, "Brep", "torus", torus_data(center, major, minor))

    def create_line(self, p: Params) -> dict[str, Any]:
        start = flat_point(p, "start_")
        end = flat_point(p, "end_", (1.0, 0.0, 0.0))
        layer = layer_path(self.doc, p.get("layer", None))
        if start == end:
            raise ValueError("start and end points must be distinct.")
        bbox, extra = polyline_data([start, end])
        obj = add_object(self.doc, "Curve", "line", bbox, layer=layer, name=p.get("name"), **extra)
        return {"guid": obj.guid}

    def create_circle(self, p: Params) -> dict[str, Any]:
        center, r = _center_and_radius(p)
        return self._add_flat(p, "Curve", "circle", circle_data(center, r))

    def create_arc(self, p: Params) -> dict[str, Any]:
        center = flat_point(p, "center_")
        r = float(p.get("radius", 1.0))
        start = float(p.get("start_angle", 0.0))
        end = float(p.get("end_angle", 90.0))
        if r <= 0:
            raise ValueError("radius must be greater than zero.")
        layer = layer_path(self.doc, p.get("layer", None))
        if start == end:
            raise RuntimeError("Rhino refused to add the arc to the document.")
        bbox, extra = arc_data(center, r, start, end)
        obj = add_object(self.doc, "Curve", "arc", bbox, layer=layer, name=p.get("name"), **extra)
        return {"guid": obj.guid}

    def create_polyline(self, p: Params) -> dict[str, Any]:
        raw = p.get("points", [])
        if len(raw) < 2:
            raise ValueError("At least 2 points are required to create a polyline.")
        closed = bool(p.get("closed", False))
        layer = layer_path(self.doc, p.get("layer", None))
        points = dict_points(raw, "point")
        if closed and points[0] != points[-1]:
            points.append(points[0])
        bbox, extra = polyline_data(points)
        obj = add_object(
            self.doc, "Curve", "polyline", bbox, layer=layer, name=p.get("name"), **extra
        )
        return {"guid": obj.guid}

    def create_nurbs_curve(self, p: Params) -> dict[str, Any]:
        raw = p.get("control_points", [])
        if len(raw) < 2:
            raise ValueError("At least 2 control points are required to create a NURBS curve.")
        degree = max(1, min(int(p.get("degree", 3)), 11))
        layer = layer_path(self.doc, p.get("layer", None))
        points = dict_points(raw, "control point")
        degree = min(degree, len(points) - 1)
        bbox, extra = polyline_data(points)
        obj = add_object(
            self.doc, "Curve", "nurbs", bbox, layer=layer, name=p.get("name"),
            degree=degree, **extra,
        )  # fmt: skip
        return {"guid": obj.guid, "degree": degree}

    def create_point(self, p: Params) -> dict[str, Any]:
        location = flat_point(p, "")
        return self._add_flat(p, "Point", "point", (BoundingBox(location, location), {}))

    def create_text(self, p: Params) -> dict[str, Any]:
        text = str(p.get("text", ""))
        if not text:
            raise ValueError("'text' parameter is required and must be non-empty.")
        position = flat_point(p, "")
        height = float(p.get("height", 1.0))
        str(p.get("font", "Arial"))
        bool(p.get("bold", False))
        bool(p.get("italic", False))
        if height <= 0:
            raise ValueError("height must be greater than zero.")
        return self._add_flat(p, "TextEntity", "text", text_data(text, position, height))


def _center_and_radius(p: Params) -> tuple[Point, float]:
    """The flat ``center_x/y/z`` and ``radius`` of a sphere or a circle. Raises ValueError
    for a radius not above zero (or not a number)."""
    center = flat_point(p, "center_")
    r = float(p.get("radius", 1.0))
    if r <= 0:
        raise ValueError("radius must be greater than zero.")
    return center, r
