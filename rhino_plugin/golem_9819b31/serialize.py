"""The real ``utils/geometry_serializer.py`` shapes, computed from the headless document.

Objects carry their RhinoCommon class in ``DocObject.object_type`` and what the serializers
report in ``DocObject.geometry`` (``kind`` plus counts, lengths, points), so every listing has
the real keys and JSON types. Two real quirks are kept on purpose: a Brep, Mesh, SubD or
TextDot object's ``type`` is ``"unknown"`` (their summaries carry no ``type`` key), and an
Extrusion is reported as a generic ``"surface"`` (RhinoCommon's Extrusion is a Surface).
"""

from __future__ import annotations

from typing import Any

from ..document import DocObject, Document
from .kit import bbox_json

__all__ = [
    "serialize_any",
    "serialize_brep",
    "serialize_curve",
    "serialize_mesh",
    "serialize_object",
    "serialize_surface",
]

CURVE_TYPES = ("line", "arc", "circle", "polyline", "nurbs")


def serialize_curve(obj: DocObject) -> dict[str, Any]:
    g = obj.geometry
    points = g.get("points") or [list(obj.bbox.minimum), list(obj.bbox.maximum)]
    length = float(g.get("length", 0.0))
    closed = bool(g.get("closed", False))
    kind = g.get("kind", "nurbs")
    result: dict[str, Any] = {
        "type": kind if kind in CURVE_TYPES else "nurbs",
        "degree": int(g.get("degree", 1 if kind in ("line", "polyline") else 3)),
        "domain": [0.0, length],
        "length": length,
        "is_closed": closed,
        "start_point": [float(c) for c in points[0]],
        "end_point": [float(c) for c in (points[0] if closed else points[-1])],
    }
    if result["type"] in ("arc", "circle"):
        result["radius"] = float(g.get("radius", 0.0))
        result["center"] = [float(c) for c in g.get("center", obj.bbox.center)]
    elif result["type"] == "polyline":
        result["point_count"] = len(points)
    elif result["type"] == "nurbs":
        result["control_points"] = [[float(c) for c in p] for p in points]
        result["weights"] = [1.0 for _ in points]
        degree = result["degree"]
        result["knots"] = [float(k) for k in _clamped_knots(len(points), degree)]
    return result


def _clamped_knots(count: int, degree: int) -> list[int]:
    # Rhino's knot vector has count + degree - 1 knots, clamped at both ends.
    inner = max(count - degree - 1, 0)
    return [0] * degree + list(range(1, inner + 1)) + [inner + 1] * degree


def serialize_surface(obj: DocObject) -> dict[str, Any]:
    g = obj.geometry
    kind = g.get("kind", "surface")
    surface_type = kind if kind in ("nurbs", "plane", "revolution", "sum") else "surface"
    (x0, y0, _), (x1, y1, _) = obj.bbox.minimum, obj.bbox.maximum
    result: dict[str, Any] = {
        "type": surface_type,
        "degree_u": int(g.get("degree_u", 1)),
        "degree_v": int(g.get("degree_v", 1)),
        "domain_u": [0.0, float(x1 - x0)],
        "domain_v": [0.0, float(y1 - y0)],
        "is_closed_u": bool(g.get("closed_u", False)),
        "is_closed_v": bool(g.get("closed_v", False)),
    }
    if surface_type == "nurbs":
        count_u, count_v = int(g.get("count_u", 2)), int(g.get("count_v", 2))
        rows = [
            [[float(x0 + (x1 - x0) * i / max(count_u - 1, 1)), float(y0), 0.0]] * count_v
            for i in range(count_u)
        ]
        result["control_points"] = rows
        result["weights"] = [[1.0] * count_v for _ in range(count_u)]
    return result


def serialize_brep(obj: DocObject) -> dict[str, Any]:
    g = obj.geometry
    solid = bool(g.get("solid", False))
    return {
        "face_count": int(g.get("faces", 1)),
        "edge_count": int(g.get("edges", 4)),
        "vertex_count": int(g.get("vertices", 4)),
        "is_solid": solid,
        "is_valid": True,
        "volume": float(g.get("volume", _box_volume(obj))) if solid else None,
        "area": float(g.get("area", _box_area(obj))),
        "bounding_box": bbox_json(obj.bbox),
    }


def serialize_mesh(obj: DocObject) -> dict[str, Any]:
    g = obj.geometry
    return {
        "vertex_count": int(g.get("vertex_count", 8)),
        "face_count": int(g.get("face_count", 6)),
        "has_normals": bool(g.get("normals", True)),
        "has_vertex_colors": bool(g.get("colors", False)),
        "bounding_box": bbox_json(obj.bbox),
    }


def serialize_any(obj: DocObject) -> dict[str, Any]:
    """``serialize_any`` on the object's geometry."""
    rhino_class = obj.object_type
    if rhino_class == "Curve":
        return serialize_curve(obj)
    if rhino_class == "Brep":
        return serialize_brep(obj)
    if rhino_class == "Mesh":
        return serialize_mesh(obj)
    if rhino_class in ("Surface", "Extrusion"):
        return serialize_surface(obj)
    if rhino_class == "SubD":
        g = obj.geometry
        return {
            "vertex_count": int(g.get("vertex_count", 8)),
            "face_count": int(g.get("face_count", 6)),
            "edge_count": int(g.get("edge_count", 12)),
            "level": 0,
        }
    if rhino_class == "Point":
        return {"type": "point", "location": list(obj.bbox.minimum)}
    if rhino_class == "PointCloud":
        return {"type": "point_cloud", "count": int(obj.geometry.get("count", 0))}
    if rhino_class == "Hatch":
        return {"type": "hatch"}
    if rhino_class == "TextEntity":
        return {"type": "text"}
    if rhino_class == "Dimension":
        return {"type": "annotation"}
    return {"type": "unknown"}


def serialize_object(doc: Document, obj: DocObject) -> dict[str, Any]:
    """``serialize_object``: the document object with its attributes."""
    geometry = serialize_any(obj)
    r, g, b = obj.color if obj.color is not None else (0, 0, 0)
    return {
        "guid": obj.guid,
        "type": geometry.get("type", "unknown"),
        "layer": obj.layer,
        "name": obj.name,
        "color": {"r": r, "g": g, "b": b, "a": 255},
        "visible": obj.visible,
        "locked": obj.locked,
        "geometry": geometry,
        "bounding_box": bbox_json(obj.bbox),
        "user_text": dict(obj.user_text),
    }


def _box_volume(obj: DocObject) -> float:
    (x0, y0, z0), (x1, y1, z1) = obj.bbox.minimum, obj.bbox.maximum
    return float((x1 - x0) * (y1 - y0) * (z1 - z0))


def _box_area(obj: DocObject) -> float:
    (x0, y0, z0), (x1, y1, z1) = obj.bbox.minimum, obj.bbox.maximum
    w, d, h = x1 - x0, y1 - y0, z1 - z0
    return float(2 * (w * d + w * h + d * h))
