"""``surfaces.*`` of golem-3dmcp@9819b31 (``handlers/surfaces.py``).

Not wrapped, but of two minds: bad parameters and unknown GUIDs raise (a -32000 error
envelope), while a geometry operation that produces nothing *returns* the error dict
``{"code": "OPERATION_FAILED", "message": …}`` in a success envelope, as the real module does.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from ..document import DocObject, Document
from ..geometry import BoundingBox, translation_map
from .kit import Params, add_object, bbox_json, find_or_none, validate_guid_or_key_error

__all__ = ["SurfaceHandlers"]

LOFT_TYPES = ("normal", "loose", "tight", "straight", "developable", "uniform")


def _failed(message: str) -> dict[str, Any]:
    return {"code": "OPERATION_FAILED", "message": message}


def _not_a_curve(call: str, ids: list[Any], objects: list[DocObject]) -> Optional[dict[str, Any]]:
    """What ``rs.CALL`` raising in ``coercecurve`` comes back as (the handler catches it and
    returns an OPERATION_FAILED dict), or None when every object is a curve."""
    for text, obj in zip(ids, objects):
        if obj.object_type != "Curve":
            return _failed(f"rs.{call} failed: unable to convert {text} into Curve geometry")
    return None


def _list(params: Params, key: str) -> list[Any]:
    value = params.get(key)
    if not isinstance(value, list):
        raise ValueError(f"Parameter '{key}' must be a list of GUID strings.")
    if len(value) == 0:
        raise ValueError(f"Parameter '{key}' must contain at least one GUID.")
    return value


def _text(params: Params, key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"Parameter '{key}' must be a non-empty GUID string.")
    return value


def _opt_xyz(params: Params, key: str) -> Optional[tuple[float, float, float]]:
    value = params.get(key)
    if value is None:
        return None
    if not (isinstance(value, (list, tuple)) and len(value) == 3):
        raise ValueError(f"Parameter '{key}' must be a list [x, y, z].")
    try:
        return (float(value[0]), float(value[1]), float(value[2]))
    except (TypeError, ValueError):
        raise ValueError(f"Parameter '{key}' values must be numeric.") from None


def _req_xyz(params: Params, key: str) -> tuple[float, float, float]:
    point = _opt_xyz(params, key)
    if point is None:
        raise ValueError(f"Required parameter '{key}' ([x, y, z]) is missing.")
    return point


def _union(objects: list[DocObject]) -> BoundingBox:
    box = objects[0].bbox
    for obj in objects[1:]:
        box = box.union(obj.bbox)
    return box


class SurfaceHandlers:
    def __init__(self, document: Document) -> None:
        self.doc = document

    def _curve(self, guid: str) -> DocObject:
        obj = validate_guid_or_key_error(self.doc, guid)
        if obj.object_type != "Curve":
            raise ValueError(f"Object '{guid}' is not a Curve (got {_class(obj)}).")
        return obj

    def _brep(self, bbox: BoundingBox, **data: Any) -> DocObject:
        # The real handlers add results without attributes (rs.AddLoftSrf, AddBrep, …):
        # they land on the current layer, not on an input's.
        data.setdefault("faces", 1)
        return add_object(self.doc, "Brep", "surface", bbox, **data)

    def _one(self, obj: DocObject) -> dict[str, Any]:
        return {"guid": obj.guid, "bounding_box": bbox_json(obj.bbox)}

    def loft(self, p: Params) -> dict[str, Any]:
        curve_ids = _list(p, "curve_ids")
        if len(curve_ids) < 2:
            raise ValueError("loft requires at least 2 curve GUIDs in 'curve_ids'.")
        loft_type = str(p.get("loft_type", "normal")).lower()
        if loft_type not in LOFT_TYPES:
            raise ValueError(f"Unknown loft_type '{loft_type}'. Valid values: {list(LOFT_TYPES)}.")
        closed = bool(p.get("closed", False))
        _opt_xyz(p, "start_point")
        _opt_xyz(p, "end_point")
        curves = [validate_guid_or_key_error(self.doc, g) for g in curve_ids]
        failure = _not_a_curve("AddLoftSrf", curve_ids, curves)
        if failure is not None:
            return failure
        return self._one(self._brep(_union(curves), closed_v=closed))

    def _sweep(self, rails: list[DocObject], shapes: list[DocObject]) -> dict[str, Any]:
        return self._one(self._brep(_union(rails + shapes), faces=1))

    def sweep1(self, p: Params) -> dict[str, Any]:
        rail_id = _text(p, "rail_id")
        shape_ids = _list(p, "shape_ids")
        bool(p.get("closed", False))
        validate_guid_or_key_error(self.doc, rail_id)
        [validate_guid_or_key_error(self.doc, s) for s in shape_ids]
        rail = self._curve(rail_id)
        shapes = [self._curve(s) for s in shape_ids]
        return self._sweep([rail], shapes)

    def sweep2(self, p: Params) -> dict[str, Any]:
        rail1_id, rail2_id = _text(p, "rail1_id"), _text(p, "rail2_id")
        shape_ids = _list(p, "shape_ids")
        bool(p.get("closed", False))
        validate_guid_or_key_error(self.doc, rail1_id)
        validate_guid_or_key_error(self.doc, rail2_id)
        [validate_guid_or_key_error(self.doc, s) for s in shape_ids]
        rails = [self._curve(rail1_id), self._curve(rail2_id)]
        shapes = [self._curve(s) for s in shape_ids]
        return self._sweep(rails, shapes)

    def revolve(self, p: Params) -> dict[str, Any]:
        curve_id = _text(p, "curve_id")
        start = _req_xyz(p, "axis_start")
        end = _req_xyz(p, "axis_end")
        start_angle = float(p.get("start_angle", 0.0))
        end_angle = float(p.get("end_angle", 360.0))
        if start_angle == end_angle:
            raise ValueError(f"start_angle and end_angle must differ (got both as {start_angle}).")
        profile = validate_guid_or_key_error(self.doc, curve_id)
        failure = _not_a_curve("AddRevSrf", [curve_id], [profile])
        if failure is not None:
            return failure
        if start == end:
            return _failed(
                "Revolve produced no geometry. Check that the profile and axis are valid."
            )
        reach = max(math.dist(start, c) for c in profile.bbox.corners())
        box = BoundingBox.around(
            [(start[0] - reach, start[1] - reach, min(start[2], end[2], profile.bbox.minimum[2])),
             (start[0] + reach, start[1] + reach, max(start[2], end[2], profile.bbox.maximum[2]))]
        )  # fmt: skip
        surface = add_object(self.doc, "Surface", "revolution", box)
        return self._one(surface)

    def extrude_curve(self, p: Params) -> dict[str, Any]:
        curve_id = _text(p, "curve_id")
        cap = bool(p.get("cap", False))
        profile = validate_guid_or_key_error(self.doc, curve_id)
        direction, path_id = p.get("direction"), p.get("path_id")
        if direction is None and path_id is None:
            raise ValueError("Either 'direction' ([x, y, z]) or 'path_id' (GUID) must be provided.")
        if direction is not None:
            if not (isinstance(direction, (list, tuple)) and len(direction) == 3):
                raise ValueError("'direction' must be a list [x, y, z].")
            dx, dy, dz = (float(v) for v in direction)
            distance = float(p.get("distance", 1.0))
            length = math.sqrt(dx * dx + dy * dy + dz * dz)
            if length < 1e-12:
                raise ValueError("'direction' vector has zero or near-zero length.")
            scale = distance / length
            offset = (dx * scale, dy * scale, dz * scale)
        else:
            path = validate_guid_or_key_error(self.doc, path_id)
            (x0, y0, z0), (x1, y1, z1) = path.bbox.minimum, path.bbox.maximum
            offset = (x1 - x0, y1 - y0, z1 - z0)
        call = "ExtrudeCurveStraight" if direction is not None else "ExtrudeCurve"
        failure = _not_a_curve(call, [curve_id], [profile])
        if failure is not None:
            return failure
        box = profile.bbox.union(profile.bbox.mapped(translation_map(offset)))
        solid = cap and bool(profile.geometry.get("closed"))
        return self._one(self._brep(box, faces=3 if solid else 1, solid=solid))

    def extrude_surface(self, p: Params) -> dict[str, Any]:
        surface_id = _text(p, "surface_id")
        direction = p.get("direction")
        distance = float(p.get("distance", 1.0))
        cap = bool(p.get("cap", False))
        if direction is None:
            raise ValueError("'direction' ([x, y, z]) is required for extrude_surface.")
        if not (isinstance(direction, (list, tuple)) and len(direction) == 3):
            raise ValueError("'direction' must be a list [x, y, z].")
        dx, dy, dz = (float(v) for v in direction)
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        if length < 1e-12:
            raise ValueError("'direction' vector has zero or near-zero length.")
        source = validate_guid_or_key_error(self.doc, surface_id)
        # The temporary path curve takes a GUID of its own before it is deleted again.
        self.doc.new_guid()
        if source.object_type not in ("Surface", "Brep", "Extrusion"):
            return _failed("Extrude surface produced no geometry.")
        scale = distance / length
        box = source.bbox.union(
            source.bbox.mapped(translation_map((dx * scale, dy * scale, dz * scale)))
        )
        return self._one(self._brep(box, faces=6 if cap else 5, solid=cap))

    def network_surface(self, p: Params) -> dict[str, Any]:
        u_ids = _list(p, "curves_u")
        v_ids = _list(p, "curves_v")
        continuity = int(p.get("continuity", 1))
        if continuity not in (0, 1, 2):
            raise ValueError(
                "'continuity' must be 0 (position), 1 (tangent), or 2 (curvature). "
                f"Got {continuity}."
            )
        [validate_guid_or_key_error(self.doc, g) for g in u_ids + v_ids]
        curves = [self._curve(g) for g in u_ids + v_ids]
        surface = add_object(
            self.doc, "Surface", "nurbs", _union(curves),
            degree_u=3, degree_v=3, count_u=len(u_ids) + 2, count_v=len(v_ids) + 2,
        )  # fmt: skip
        return self._one(surface)

    def patch(self, p: Params) -> dict[str, Any]:
        object_ids = _list(p, "object_ids")
        spans_u, spans_v = int(p.get("spans_u", 10)), int(p.get("spans_v", 10))
        float(p.get("flexibility", 1.0))
        if spans_u < 1 or spans_v < 1:
            raise ValueError("'spans_u' and 'spans_v' must each be at least 1.")
        objects = [validate_guid_or_key_error(self.doc, g) for g in object_ids]
        surface = add_object(
            self.doc, "Surface", "nurbs", _union(objects),
            degree_u=3, degree_v=3, count_u=spans_u + 3, count_v=spans_v + 3,
        )  # fmt: skip
        return self._one(surface)

    def edge_surface(self, p: Params) -> dict[str, Any]:
        curve_ids = _list(p, "curve_ids")
        if len(curve_ids) < 2 or len(curve_ids) > 4:
            raise ValueError(
                f"edge_surface requires 2, 3, or 4 curves in 'curve_ids' (got {len(curve_ids)})."
            )
        curves = [validate_guid_or_key_error(self.doc, g) for g in curve_ids]
        failure = _not_a_curve("AddEdgeSrf", curve_ids, curves)
        if failure is not None:
            return failure
        surface = add_object(self.doc, "Surface", "nurbs", _union(curves))
        return self._one(surface)

    def cap_planar_holes(self, p: Params) -> dict[str, Any]:
        brep_id = _text(p, "brep_id")
        brep = validate_guid_or_key_error(self.doc, brep_id)
        if (
            brep.object_type != "Brep"
            or brep.geometry.get("solid")
            or brep.geometry.get("kind")
            not in ("surface", "polysurface", "pipe", "cylinder", "cone")
        ):
            return {
                "guid": brep_id,
                "bounding_box": bbox_json(brep.bbox),
                "caps_added": False,
                "note": "No planar holes were found or the operation had no effect.",
            }
        brep.geometry.update(solid=True, faces=int(brep.geometry.get("faces", 1)) + 2)
        return {"guid": brep.guid, "bounding_box": bbox_json(brep.bbox), "caps_added": True}

    def unroll(self, p: Params) -> dict[str, Any]:
        surface_id = _text(p, "surface_id")
        explode = bool(p.get("explode", False))
        validate_guid_or_key_error(self.doc, surface_id)
        source = find_or_none(self.doc, str(surface_id).strip().strip("{}").lower())
        assert source is not None  # validated above
        if source.object_type not in ("Brep", "Surface", "Extrusion"):
            raise ValueError(
                f"Object '{surface_id}' is not a Surface or Brep (got {_class(source)})."
            )
        faces = int(source.geometry.get("faces", 1)) if explode else 1
        (x0, y0, _), (x1, y1, z1) = source.bbox.minimum, source.bbox.maximum
        flat = BoundingBox((x0, y0, 0.0), (x1 + (z1 - source.bbox.minimum[2]), y1, 0.0))
        added = [self._brep(flat).guid for _ in range(faces)]
        return {"guids": added, "bounding_box": bbox_json(flat)}

    def planar_surface(self, p: Params) -> dict[str, Any]:
        curve_ids = _list(p, "curve_ids")
        curves = [validate_guid_or_key_error(self.doc, g) for g in curve_ids]
        failure = _not_a_curve("AddPlanarSrf", curve_ids, curves)
        if failure is not None:
            return failure
        closed = [c for c in curves if c.geometry.get("closed")]
        if not closed:
            return _failed(
                "Planar surface produced no geometry. "
                "Check that the boundary curves are closed and planar."
            )
        guids = [self._brep(c.bbox).guid for c in closed]
        return {"guid": guids[0], "guids": guids, "bounding_box": bbox_json(_union(closed))}


def _class(obj: DocObject) -> str:
    """The RhinoCommon class name a ``type(geom).__name__`` would give."""
    names = {"Curve": "NurbsCurve", "Point": "Point", "TextEntity": "TextEntity"}
    return names.get(obj.object_type, obj.object_type)
