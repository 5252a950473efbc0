"""What the manipulation handlers share: `ManipulationBase` (the document and the GUID
lookups of rhinoscriptsyntax and ``_find_object``), their parameter readers (``_parse_point``,
``_require_list_of_strings``, …) with the real messages, and the geometry stand-ins for the
rhinoscriptsyntax calls they make (shear, 4x4 transforms, stations along a curve, explode)."""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

from ..document import DocObject, Document
from ..geometry import BoundingBox, PointMap
from .kit import Number, Params, Point, find_object, parse_guid

__all__ = [
    "ManipulationBase",
    "affine_map",
    "explode_pieces",
    "find_layer",
    "is_guid",
    "parse_point",
    "parse_point_or",
    "read_count",
    "read_id",
    "read_ids",
    "required_number",
    "shear_map",
    "stations_along",
    "times",
]


def parse_point(raw: Any, field: str) -> Point:
    """``_parse_point``."""
    if isinstance(raw, dict):
        try:
            return (float(raw["x"]), float(raw["y"]), float(raw["z"]))
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"'{field}' dict must contain numeric 'x', 'y', 'z' keys") from None
    if isinstance(raw, (list, tuple)) and len(raw) == 3:
        try:
            return (float(raw[0]), float(raw[1]), float(raw[2]))
        except (TypeError, ValueError):
            raise ValueError(f"'{field}' list must contain 3 numbers") from None
    raise ValueError(
        f"'{field}' must be a list [x, y, z] or dict with 'x','y','z' keys, "
        f"got: {type(raw).__name__}"
    )


def parse_point_or(raw: Any, default: Point, field: str) -> Point:
    return default if raw is None else parse_point(raw, field)


def read_ids(value: Any, field: str = "ids") -> list[str]:
    """``_require_list_of_strings``."""
    if not isinstance(value, (list, tuple)) or len(value) == 0:
        raise ValueError(f"'{field}' must be a non-empty list of GUID strings")
    for item in value:
        if not isinstance(item, str):
            raise ValueError(
                f"Each item in '{field}' must be a string GUID, got: {type(item).__name__}"
            )
    return list(value)


def read_id(params: Params, field: str = "id") -> str:
    value = params.get(field)
    if not isinstance(value, str) or not value:
        raise ValueError(f"'{field}' must be a non-empty GUID string")
    return value


def required_number(raw: Any, cast: Callable[[Any], Number], missing: str, invalid: str) -> Number:
    """``cast(raw)``. Raises ValueError ``missing`` when ``raw`` is None, ``invalid`` when
    the cast fails."""
    if raw is None:
        raise ValueError(missing)
    try:
        return cast(raw)
    except (TypeError, ValueError):
        raise ValueError(invalid) from None


def read_count(params: Params, minimum: int) -> int:
    count = required_number(
        params.get("count"), int, "'count' (int) is required", "'count' must be an integer"
    )
    if count < minimum:
        raise ValueError(f"'count' must be at least {minimum}")
    return count


def is_guid(text: str) -> bool:
    try:
        parse_guid(text)
    except Exception:
        return False
    return True


def times(vector: Point, factor: float) -> Point:
    return (vector[0] * factor, vector[1] * factor, vector[2] * factor)


def find_layer(doc: Document, name: str) -> Optional[str]:
    """``FindByFullPath`` then ``Find`` by short name."""
    if name in doc.layers:
        return name
    matches = [path for path, layer in doc.layers.items() if layer.name == name]
    return matches[0] if matches else None


def shear_map(origin: Point, shift: Point) -> PointMap:
    # Points move by `shift` times their height above the plane through `origin`.
    return lambda q: (
        q[0] + shift[0] * (q[2] - origin[2]),
        q[1] + shift[1] * (q[2] - origin[2]),
        q[2] + shift[2] * (q[2] - origin[2]),
    )


def affine_map(m: list[list[float]]) -> PointMap:
    def apply(q: Point) -> Point:
        w = m[3][0] * q[0] + m[3][1] * q[1] + m[3][2] * q[2] + m[3][3]
        w = w if abs(w) > 1e-12 else 1.0
        return (
            (m[0][0] * q[0] + m[0][1] * q[1] + m[0][2] * q[2] + m[0][3]) / w,
            (m[1][0] * q[0] + m[1][1] * q[1] + m[1][2] * q[2] + m[1][3]) / w,
            (m[2][0] * q[0] + m[2][1] * q[1] + m[2][2] * q[2] + m[2][3]) / w,
        )

    return apply


def stations_along(curve: DocObject, stations: int, closed: bool) -> list[Point]:
    """``stations`` points spread along the curve's recorded points (a polyline)."""
    raw = curve.geometry.get("points") or [list(curve.bbox.minimum), list(curve.bbox.maximum)]
    points = [(float(q[0]), float(q[1]), float(q[2])) for q in raw]
    if len(points) < 2:
        return points * stations
    segments = list(zip(points, points[1:]))
    lengths = [math.dist(a, b) for a, b in segments]
    total = sum(lengths) or 1.0
    result = []
    for i in range(stations):
        target = total * i / (stations if closed else max(stations - 1, 1))
        for (a, b), length in zip(segments, lengths):
            if target <= length or (a, b) == segments[-1]:
                t = 0.0 if length == 0 else min(target / length, 1.0)
                result.append(
                    (a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t)
                )
                break
            target -= length
    return result


def explode_pieces(doc: Document, obj: DocObject) -> list[str]:
    """``rs.ExplodeObjects``: a polysurface into its faces, a polyline into its segments."""
    g = obj.geometry
    if obj.object_type == "Brep" and int(g.get("faces", 1)) > 1:
        faces = int(g["faces"])
        pieces = []
        for _ in range(faces):
            piece = doc.copy_object(obj, obj.bbox)
            piece.geometry = {"kind": "face", "faces": 1, "solid": False}
            pieces.append(piece.guid)
        return pieces
    if obj.object_type == "Curve" and g.get("kind") == "polyline":
        points = g.get("points") or []
        pieces = []
        for a, b in zip(points, points[1:]):
            bbox = BoundingBox.around([tuple(a), tuple(b)])  # type: ignore[list-item]
            piece = doc.copy_object(obj, bbox)
            piece.geometry = {"kind": "line", "points": [a, b], "length": math.dist(a, b)}
            pieces.append(piece.guid)
        return pieces
    return []


class ManipulationBase:
    """The document, and the two ways the real handlers look objects up."""

    def __init__(self, document: Document) -> None:
        self.doc = document

    def _rs_objects(self, ids: list[str]) -> list[DocObject]:
        """``coerceguid`` on each id (a malformed one raises), then the ones in the document."""
        found = []
        for text in ids:
            try:
                key = parse_guid(text)
            except Exception:
                raise ValueError(f"{text} cannot be converted to a Guid") from None
            obj = self.doc.objects.get(key)
            if obj is not None:
                found.append(obj)
        return found

    def _find(self, text: str) -> DocObject:
        """``_find_object``."""
        return find_object(self.doc, text)
