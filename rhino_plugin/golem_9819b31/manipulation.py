"""``manipulation.*`` of golem-3dmcp@9819b31 (``handlers/manipulation.py``): transforms and
arrays (structure, attributes and selection: `manipulation_objects`).

Every handler is wrapped: a failure is an error dict *inside a success envelope*. The real
handlers lean on rhinoscriptsyntax, whose habits are kept: a GUID that is well formed but not
in the document is skipped silently by MoveObjects/CopyObjects/….
"""

from __future__ import annotations

import math
from typing import Any

from ..document import DocObject
from ..geometry import (
    PointMap,
    line_mirror_normal,
    mirror_map,
    rotation_map,
    scale_map,
    translation_map,
    unit,
)
from .kit import GolemFailure, Params, find_or_none, guid_or_value_error
from .manipulation_kit import (
    ManipulationBase,
    affine_map,
    is_guid,
    parse_point,
    parse_point_or,
    read_count,
    read_id,
    read_ids,
    required_number,
    shear_map,
    stations_along,
    times,
)

__all__ = ["ManipulationHandlers"]


class ManipulationHandlers(ManipulationBase):
    """``manipulation.*`` transforms and arrays."""

    def _transform(self, objects: list[DocObject], point_map: PointMap, copy: bool) -> list[str]:
        """``TransformObjects``: the ids that moved, or the new copies' ids."""
        result = []
        for obj in objects:
            if copy:
                result.append(self.doc.copy_object(obj, obj.bbox.mapped(point_map)).guid)
            else:
                obj.bbox = obj.bbox.mapped(point_map)
                result.append(obj.guid)
        return result

    def _transform_each(
        self, ids: list[Any], point_map: PointMap, copy: bool, what: str
    ) -> dict[str, Any]:
        """Transform every object the ids name (skipping ids of no object, failing on a bad
        GUID), as the shear and matrix handlers do; fails when none could be transformed."""
        result = []
        for text in ids:
            obj = self.doc.objects.get(guid_or_value_error(text))
            if obj is not None:
                result.extend(self._transform([obj], point_map, copy))
        if not result:
            raise GolemFailure(
                "OPERATION_FAILED",
                f"{what} could not be applied to any of the given objects",
                {"ids": ids},
            )
        return {"result_ids": result, "count": len(result)}

    def move(self, p: Params) -> dict[str, Any]:
        ids = read_ids(p.get("ids"))
        translation = parse_point(p.get("translation", [0.0, 0.0, 0.0]), "translation")
        moved = self._transform(self._rs_objects(ids), translation_map(translation), False)
        return {"moved_ids": moved, "count": len(moved)}

    def copy(self, p: Params) -> dict[str, Any]:
        ids = read_ids(p.get("ids"))
        translation = parse_point_or(p.get("translation"), (0.0, 0.0, 0.0), "translation")
        new = self._transform(self._rs_objects(ids), translation_map(translation), True)
        return {"new_ids": new, "count": len(new)}

    def rotate(self, p: Params) -> dict[str, Any]:
        ids = read_ids(p.get("ids"))
        center = parse_point(p.get("center"), "center")
        angle = p.get("angle")
        degrees = required_number(
            angle, float, "'angle' (degrees) is required", f"'angle' must be a number, got: {angle}"
        )
        axis = parse_point_or(p.get("axis"), (0.0, 0.0, 1.0), "axis")
        copy = bool(p.get("copy", False))
        rotate = rotation_map(center, unit(axis, "axis"), degrees)
        result = self._transform(self._rs_objects(ids), rotate, copy)
        return {"result_ids": result, "count": len(result)}

    def scale(self, p: Params) -> dict[str, Any]:
        ids = read_ids(p.get("ids"))
        if p.get("origin") is None:
            raise ValueError("'origin' [x,y,z] is required")
        origin = parse_point(p["origin"], "origin")
        raw = p.get("scale_factor")
        if raw is None:
            raise ValueError("'scale_factor' is required (float or [x,y,z])")
        copy = bool(p.get("copy", False))
        if isinstance(raw, (int, float)):
            factors = (float(raw),) * 3
        elif isinstance(raw, (list, tuple)) and len(raw) == 3:
            try:
                factors = (float(raw[0]), float(raw[1]), float(raw[2]))
            except (TypeError, ValueError):
                raise ValueError("'scale_factor' list must contain 3 numbers") from None
        else:
            raise ValueError(
                "'scale_factor' must be a float (uniform) or list [sx, sy, sz] "
                f"(non-uniform), got: {type(raw).__name__}"
            )
        result = self._transform(
            self._rs_objects(ids), scale_map(origin, (factors[0], factors[1], factors[2])), copy
        )
        return {"result_ids": result, "count": len(result)}

    def mirror(self, p: Params) -> dict[str, Any]:
        ids = read_ids(p.get("ids"))
        start = parse_point(p.get("start"), "start")
        end = parse_point(p.get("end"), "end")
        copy = bool(p.get("copy", False))
        objects = self._rs_objects(ids)
        if start == end:
            raise Exception("start and end points are too close to each other")
        result = self._transform(objects, mirror_map(start, line_mirror_normal(start, end)), copy)
        return {"result_ids": result, "count": len(result)}

    def orient(self, p: Params) -> dict[str, Any]:
        ids = read_ids(p.get("ids"))
        ref_raw, tgt_raw = p.get("reference_points"), p.get("target_points")
        if ref_raw is None or not isinstance(ref_raw, (list, tuple)):
            raise ValueError("'reference_points' must be a list of [x,y,z] points")
        if tgt_raw is None or not isinstance(tgt_raw, (list, tuple)):
            raise ValueError("'target_points' must be a list of [x,y,z] points")
        if len(ref_raw) != len(tgt_raw):
            raise ValueError("'reference_points' and 'target_points' must have the same length")
        if len(ref_raw) < 2:
            raise ValueError("At least 2 reference/target point pairs are required")
        refs = [parse_point(x, f"reference_points[{i}]") for i, x in enumerate(ref_raw)]
        targets = [parse_point(x, f"target_points[{i}]") for i, x in enumerate(tgt_raw)]
        copy = bool(p.get("copy", False))
        # The headless document keeps boxes: orienting moves the first reference point
        # onto the first target point.
        offset = tuple(t - r for r, t in zip(refs[0], targets[0]))
        objects = [o for o in (self.doc.objects.get(str(i).lower()) for i in ids) if o]
        result = self._transform(objects, translation_map((offset[0], offset[1], offset[2])), copy)
        if not result:
            raise GolemFailure(
                "OPERATION_FAILED",
                "rs.OrientObject returned None for all objects -- verify GUIDs",
                {"ids": ids},
            )
        return {"result_ids": result, "count": len(result)}

    def shear(self, p: Params) -> dict[str, Any]:
        ids = read_ids(p.get("ids"))
        plane = p.get("plane")
        if plane is None or not isinstance(plane, dict):
            raise ValueError("'plane' must be a dict with 'origin', 'x_axis', 'y_axis' keys")
        angle = required_number(
            p.get("shear_angle"),
            float,
            "'shear_angle' (degrees) is required",
            "'shear_angle' must be a number",
        )
        if p.get("shear_direction") is None:
            raise ValueError("'shear_direction' [x,y,z] is required")
        direction = parse_point(p["shear_direction"], "shear_direction")
        copy = bool(p.get("copy", False))
        origin = parse_point_or(plane.get("origin"), (0.0, 0.0, 0.0), "plane.origin")
        parse_point_or(plane.get("x_axis"), (1.0, 0.0, 0.0), "plane.x_axis")
        parse_point_or(plane.get("y_axis"), (0.0, 1.0, 0.0), "plane.y_axis")
        tan = math.tan(math.radians(angle))
        shear = shear_map(origin, (direction[0] * tan, direction[1] * tan, direction[2] * tan))
        return self._transform_each(ids, shear, copy, "Shear transform")

    def array_linear(self, p: Params) -> dict[str, Any]:
        obj_id = read_id(p)
        count = read_count(p, 2)
        direction = parse_point(p.get("direction"), "direction")
        source = self._array_source(obj_id, {"id": obj_id, "count": count, "direction": direction})
        copies = [
            self.doc.copy_object(source, source.bbox.mapped(translation_map(times(direction, i))))
            for i in range(1, count)
        ]
        ids = [c.guid for c in copies]
        return {"array_ids": ids, "count": len(ids)}

    def array_polar(self, p: Params) -> dict[str, Any]:
        obj_id = read_id(p)
        count = read_count(p, 2)
        center = parse_point(p.get("center"), "center")
        angle = float(p.get("angle", 360.0))
        axis = parse_point_or(p.get("axis"), (0.0, 0.0, 1.0), "axis")
        source = self._array_source(obj_id, {"id": obj_id, "count": count, "center": center})
        step = angle / count if abs(angle) >= 360.0 else angle / max(count - 1, 1)
        copies = [
            self.doc.copy_object(
                source, source.bbox.mapped(rotation_map(center, unit(axis, "axis"), step * i))
            )
            for i in range(1, count)
        ]
        ids = [c.guid for c in copies]
        return {"array_ids": ids, "count": len(ids)}

    def _array_source(self, obj_id: str, details: dict[str, Any]) -> DocObject:
        obj = find_or_none(self.doc, obj_id) if is_guid(obj_id) else None
        if obj is None:
            raise GolemFailure(
                "OPERATION_FAILED",
                "rs.ArrayLinear returned None -- verify the GUID and parameters"
                if "direction" in details
                else "rs.ArrayPolar returned None -- verify the GUID and parameters",
                details,
            )
        return obj

    def array_along_curve(self, p: Params) -> dict[str, Any]:
        obj_id = read_id(p)
        curve_id = read_id(p, "curve_id")
        count = read_count(p, 1)
        bool(p.get("orient", True))
        source = self._find(obj_id)
        curve = self._find(curve_id)
        if curve.object_type != "Curve":
            raise ValueError(f"'curve_id' does not refer to a curve object: '{curve_id}'")
        closed = bool(curve.geometry.get("closed", False))
        stations = count if closed else count + 1
        points = stations_along(curve, stations, closed)
        center = source.bbox.center
        ids = []
        for point in points:
            offset = (point[0] - center[0], point[1] - center[1], point[2] - center[2])
            ids.append(
                self.doc.copy_object(source, source.bbox.mapped(translation_map(offset))).guid
            )
        return {"array_ids": ids, "count": len(ids)}

    def apply_transform(self, p: Params) -> dict[str, Any]:
        ids = read_ids(p.get("ids"))
        matrix = p.get("matrix")
        if matrix is None:
            raise ValueError("'matrix' (4x4 nested list) is required")
        if not isinstance(matrix, (list, tuple)) or len(matrix) != 4:
            raise ValueError("'matrix' must be a list of exactly 4 rows")
        for index, row in enumerate(matrix):
            if not isinstance(row, (list, tuple)) or len(row) != 4:
                raise ValueError(f"'matrix' row {index} must have exactly 4 elements")
        copy = bool(p.get("copy", False))
        cells = [[0.0] * 4 for _ in range(4)]
        for r in range(4):
            for c in range(4):
                try:
                    cells[r][c] = float(matrix[r][c])
                except (TypeError, ValueError):
                    raise ValueError(f"'matrix[{r}][{c}]' must be a number") from None
        affine = affine_map(cells)
        return self._transform_each(ids, affine, copy, "Transform")
