"""``geometry.*`` of golem-3dmcp@9819b31 (the second half of ``handlers/creation.py``), points
and curves (surfaces, solids, meshes and annotations are in `geometry_solids`): points as
``[x, y, z]`` or ``{x, y, z}``, answers ``{guid, type, bounding_box}``. Not wrapped: failures
are -32000 error envelopes.
"""

from __future__ import annotations

import math
from typing import Any

from ..geometry import BoundingBox
from .creation import Creator
from .kit import (
    Params,
    flat_point,
    layer_path,
    param_or_value_error,
    plane_origin,
    pt3d,
    read_origin,
    read_points,
    require_positive,
)
from .shapes import (
    arc_data,
    circle_data,
    polyline_data,
)

__all__ = ["GeometryHandlers"]


class GeometryHandlers(Creator):
    """``geometry.*`` points and curves: point lists, ``{guid, type, bounding_box}`` answers."""

    def create_point(self, p: Params) -> dict[str, Any]:
        if "x" in p or "y" in p or "z" in p:
            location = flat_point(p, "")
        elif "point" in p:
            location = pt3d(p["point"])
        elif "location" in p:
            location = pt3d(p["location"])
        else:
            raise ValueError("create_point requires 'x'/'y'/'z', 'point', or 'location'.")
        return self._add(p, "Point", "point", "point", (BoundingBox(location, location), {}))

    def create_point_cloud(self, p: Params) -> dict[str, Any]:
        raw = param_or_value_error(p, "points")
        if not isinstance(raw, (list, tuple)) or len(raw) == 0:
            raise ValueError("'points' must be a non-empty list.")
        points = read_points(raw)
        data = (BoundingBox.around(points), {"count": len(points)})
        result = self._add(p, "PointCloud", "point_cloud", "point_cloud", data)
        result["point_count"] = len(points)
        result["bounding_box"] = result.pop("bounding_box")
        return result

    def create_line(self, p: Params) -> dict[str, Any]:
        start = pt3d(param_or_value_error(p, "start"))
        end = pt3d(param_or_value_error(p, "end"))
        if start == end:
            raise ValueError("start and end must be distinct points.")
        return self._add(p, "Curve", "line", "line", polyline_data([start, end]))

    def create_polyline(self, p: Params) -> dict[str, Any]:
        raw = param_or_value_error(p, "points")
        if not isinstance(raw, (list, tuple)) or len(raw) < 2:
            raise ValueError("'points' must have at least 2 entries.")
        points = read_points(raw)
        return self._add(p, "Curve", "polyline", "polyline", polyline_data(points))

    def create_nurbs_curve(self, p: Params) -> dict[str, Any]:
        raw = param_or_value_error(p, "points")
        degree = int(p.get("degree", 3))
        if not isinstance(raw, (list, tuple)) or len(raw) < 2:
            raise ValueError("'points' must have at least 2 entries.")
        if degree < 1 or degree > 11:
            raise ValueError(f"'degree' must be 1-11, got {degree}.")
        points = read_points(raw)
        degree = min(degree, len(points) - 1)
        bool(p.get("periodic", False))
        weights = p.get("weights")
        if weights is not None:
            if len(weights) != len(points):
                raise ValueError("'weights' length must match 'points' length.")
            [float(w) for w in weights]
        knots = p.get("knots")
        knot_count = len(points) + degree - 1
        if knots is not None:
            if len(knots) != knot_count:
                raise ValueError(f"'knots' length {len(knots)} must be {knot_count}.")
            [float(k) for k in knots]
        bbox, extra = polyline_data(points)
        return self._add(p, "Curve", "nurbs", "nurbs_curve", (bbox, {**extra, "degree": degree}))

    def create_interp_curve(self, p: Params) -> dict[str, Any]:
        raw = param_or_value_error(p, "points")
        degree = max(1, min(int(p.get("degree", 3)), 11))
        if not isinstance(raw, (list, tuple)) or len(raw) < 2:
            raise ValueError("'points' must have at least 2 entries.")
        points = read_points(raw)
        degree = min(degree, len(points) - 1)
        bbox, extra = polyline_data(points)
        return self._add(p, "Curve", "nurbs", "interp_curve", (bbox, {**extra, "degree": degree}))

    def create_arc(self, p: Params) -> dict[str, Any]:
        layer = layer_path(self.doc, p.get("layer"))
        if "start" in p and "end" in p and "point_on" in p:
            a, m, b = pt3d(p["start"]), pt3d(p["point_on"]), pt3d(p["end"])
            bbox = BoundingBox.around([a, m, b])
            data = (bbox, polyline_data([a, m, b])[1])
            return self._add(p, "Curve", "arc", "arc", data, layer=layer)
        radius = float(param_or_value_error(p, "radius"))
        require_positive(radius=radius)
        start = float(param_or_value_error(p, "start_angle"))
        end = float(param_or_value_error(p, "end_angle"))
        if p.get("plane") is not None:
            center = plane_origin(p["plane"])
        elif "center" in p:
            center = pt3d(p["center"])
        else:
            raise ValueError(
                "create_arc needs 'start'+'end'+'point_on' OR "
                "'center'/'plane'+'radius'+'start_angle'+'end_angle'."
            )
        if start == end:
            raise RuntimeError("Rhino refused to add the arc.")
        return self._add(
            p, "Curve", "arc", "arc", arc_data(center, radius, start, end), layer=layer
        )

    def create_circle(self, p: Params) -> dict[str, Any]:
        radius = float(param_or_value_error(p, "radius"))
        require_positive(radius=radius)
        center = read_origin(
            p, "plane", "center", message="create_circle requires 'center' or 'plane'."
        )
        return self._add(p, "Curve", "circle", "circle", circle_data(center, radius))

    def create_ellipse(self, p: Params) -> dict[str, Any]:
        rx = float(param_or_value_error(p, "rx"))
        ry = float(param_or_value_error(p, "ry"))
        require_positive(rx=rx, ry=ry)
        center = read_origin(
            p, "plane", "center", message="create_ellipse requires 'center' or 'plane'."
        )
        bbox = BoundingBox(
            (center[0] - rx, center[1] - ry, center[2]), (center[0] + rx, center[1] + ry, center[2])
        )
        h = ((rx - ry) / (rx + ry)) ** 2
        length = math.pi * (rx + ry) * (1 + 3 * h / (10 + math.sqrt(4 - 3 * h)))
        start = [center[0] + rx, center[1], center[2]]
        data = {"points": [start, start], "closed": True, "length": length, "degree": 2}
        return self._add(p, "Curve", "nurbs", "ellipse", (bbox, data))

    def create_helix(self, p: Params) -> dict[str, Any]:
        axis_start = pt3d(param_or_value_error(p, "axis_start"))
        axis_end = pt3d(param_or_value_error(p, "axis_end"))
        start_point = pt3d(param_or_value_error(p, "start_point"))
        pitch = float(param_or_value_error(p, "pitch"))
        turns = float(param_or_value_error(p, "turns"))
        require_positive(pitch=pitch, turns=turns)
        if axis_start == axis_end:
            raise ValueError("'axis_start' and 'axis_end' must differ.")
        if p.get("radius") is not None:
            radius = float(p["radius"])
        else:
            radius = math.sqrt(sum((a - b) ** 2 for a, b in zip(start_point, axis_start)))
        if radius <= 0.0:
            raise ValueError("Helix radius must be > 0.")
        axis_len = math.sqrt(sum((a - b) ** 2 for a, b in zip(axis_end, axis_start)))
        direction = tuple((b - a) / axis_len for a, b in zip(axis_start, axis_end))
        top = tuple(a + d * pitch * turns for a, d in zip(axis_start, direction))
        corners = [
            (c[0] + dx, c[1] + dy, c[2] + dz)
            for c in (axis_start, top)
            for dx in (-radius, radius)
            for dy in (-radius, radius)
            for dz in (0.0,)
        ]
        length = turns * math.hypot(2 * math.pi * radius, pitch)
        data = {"points": [list(start_point), list(start_point)], "length": length}
        return self._add(p, "Curve", "nurbs", "helix", (BoundingBox.around(corners), data))
