"""``manipulation.*`` of golem-3dmcp@9819b31 (``handlers/manipulation.py``).

Every handler is wrapped: a failure is an error dict *inside a success envelope*. The real
handlers lean on rhinoscriptsyntax, whose habits are kept: a GUID that is well formed but not
in the document is skipped silently by MoveObjects/CopyObjects/…, and ``rs.SelectObjects``
returns a count, which the handler then iterates (so selecting objects that exist answers
INVALID_PARAMS ``'int' object is not iterable``, with the objects selected all the same).
"""

from __future__ import annotations

import math
from typing import Any, Optional

from golem_core.dispatcher import Handler

from ..document import DocObject, Document
from ..geometry import (
    PointMap,
    line_mirror_normal,
    mirror_map,
    rotation_map,
    scale_map,
    translation_map,
    unit,
)
from .envelope import wrapped
from .kit import GolemFailure, find_or_none, parse_guid
from .manipulation_kit import (
    affine_map,
    explode_pieces,
    find_layer,
    is_guid,
    parse_point,
    parse_point_or,
    read_count,
    read_id,
    read_ids,
    shear_map,
    stations_along,
    times,
)

__all__ = ["ManipulationHandlers"]

Params = dict[str, Any]


class ManipulationHandlers:
    def __init__(self, document: Document) -> None:
        self.doc = document
        self._group_serial = 0

    def table(self) -> dict[str, Handler]:
        """Method name → handler."""
        handlers: dict[str, Handler] = {
            "manipulation.move": self.move,
            "manipulation.copy": self.copy,
            "manipulation.rotate": self.rotate,
            "manipulation.scale": self.scale,
            "manipulation.mirror": self.mirror,
            "manipulation.orient": self.orient,
            "manipulation.shear": self.shear,
            "manipulation.array_linear": self.array_linear,
            "manipulation.array_polar": self.array_polar,
            "manipulation.array_along_curve": self.array_along_curve,
            "manipulation.apply_transform": self.apply_transform,
            "manipulation.delete": self.delete,
            "manipulation.group": self.group,
            "manipulation.ungroup": self.ungroup,
            "manipulation.join": self.join,
            "manipulation.explode": self.explode,
            "manipulation.set_properties": self.set_properties,
            "manipulation.set_user_text": self.set_user_text,
            "manipulation.get_user_text": self.get_user_text,
            "manipulation.select_objects": self.select_objects,
            "manipulation.unselect_all": self.unselect_all,
        }
        return {name: wrapped(handler) for name, handler in handlers.items()}

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
            try:
                key = parse_guid(text)
            except Exception:
                raise ValueError(f"Invalid GUID format: '{text}'") from None
            obj = self.doc.objects.get(key)
            if obj is not None:
                result.extend(self._transform([obj], point_map, copy))
        if not result:
            raise GolemFailure(
                "OPERATION_FAILED",
                f"{what} could not be applied to any of the given objects",
                {"ids": ids},
            )
        return {"result_ids": result, "count": len(result)}

    def _find(self, text: str) -> DocObject:
        """``_find_object``."""
        try:
            key = parse_guid(text)
        except Exception:
            raise ValueError(f"Invalid GUID format: '{text}'") from None
        obj = self.doc.objects.get(key)
        if obj is None:
            raise KeyError(f"Object not found in Rhino document: '{text}'")
        return obj

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
        if angle is None:
            raise ValueError("'angle' (degrees) is required")
        try:
            degrees = float(angle)
        except (TypeError, ValueError):
            raise ValueError(f"'angle' must be a number, got: {angle}") from None
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
        raw_angle = p.get("shear_angle")
        if raw_angle is None:
            raise ValueError("'shear_angle' (degrees) is required")
        try:
            angle = float(raw_angle)
        except (TypeError, ValueError):
            raise ValueError("'shear_angle' must be a number") from None
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

    def delete(self, p: Params) -> dict[str, Any]:
        objects = self._rs_objects(read_ids(p.get("ids")))
        for obj in objects:
            self.doc.delete(obj.guid)
        return {"deleted_count": len(objects)}

    def group(self, p: Params) -> dict[str, Any]:
        ids = read_ids(p.get("ids"))
        name = p.get("name")
        if name is not None and not isinstance(name, str):
            raise ValueError("'name' must be a string")
        if name and name in self.doc.groups:
            raise GolemFailure(
                "OPERATION_FAILED", "rs.AddGroup failed to create a group", {"requested_name": name}
            )
        if not name:
            self._group_serial += 1
            name = f"Group{self._group_serial:02d}"
        members = [o.guid for o in self._rs_objects(ids)]
        if not members:
            raise GolemFailure(
                "OPERATION_FAILED",
                f"rs.AddObjectsToGroup could not add objects to group '{name}'",
                {"ids": ids, "group_name": name},
            )
        self.doc.groups[name] = members
        return {"group_name": name}

    def ungroup(self, p: Params) -> dict[str, Any]:
        name = p.get("group_name")
        if not isinstance(name, str) or not name:
            raise ValueError("'group_name' must be a non-empty string")
        members = self.doc.groups.pop(name, None)
        if members is None:
            raise GolemFailure(
                "OPERATION_FAILED",
                f"rs.DeleteGroup failed for group '{name}'",
                {"group_name": name},
            )
        return {"freed_ids": list(members), "count": len(members)}

    def join(self, p: Params) -> dict[str, Any]:
        ids = read_ids(p.get("ids"))
        if len(ids) < 2:
            raise ValueError("'ids' must contain at least 2 objects to join")
        delete_input = bool(p.get("delete_input", True))
        objects = [self.doc.objects.get(str(i).strip("{}").lower()) for i in ids]
        kinds = [o.object_type if o else "other" for o in objects]
        breps = sum(k in ("Brep", "Extrusion") for k in kinds)
        curves = sum(k == "Curve" for k in kinds)
        wanted = ("Brep", "Extrusion", "Surface") if breps >= curves else ("Curve",)
        parts = [o for o in objects if o is not None and o.object_type in wanted]
        if len(parts) < 2:
            raise GolemFailure(
                "OPERATION_FAILED",
                "Join operation returned no results -- objects may not be joinable",
                {"ids": ids},
            )
        bbox = parts[0].bbox
        for part in parts[1:]:
            bbox = bbox.union(part.bbox)
        joined = self.doc.copy_object(parts[0], bbox)
        if wanted == ("Curve",):
            joined.geometry = {"kind": "nurbs", "points": [list(bbox.minimum), list(bbox.maximum)]}
        else:
            joined.object_type = "Brep"
            joined.geometry = {"kind": "polysurface", "faces": len(parts), "solid": False}
        if delete_input:
            for part in parts:
                self.doc.delete(part.guid)
        return {"joined_ids": [joined.guid], "count": 1}

    def explode(self, p: Params) -> dict[str, Any]:
        obj_id = read_id(p)
        delete_input = bool(p.get("delete_input", True))
        obj = self._find(obj_id)
        pieces = explode_pieces(self.doc, obj)
        if not pieces:
            raise GolemFailure(
                "OPERATION_FAILED",
                "rs.ExplodeObjects returned no results -- object may not be explodable",
                {"id": obj_id},
            )
        if delete_input:
            self.doc.delete(obj.guid)
        return {"exploded_ids": pieces, "count": len(pieces)}

    def set_properties(self, p: Params) -> dict[str, Any]:
        ids = read_ids(p.get("ids"))
        layer, color, name = p.get("layer"), p.get("color"), p.get("name")
        visible, locked, material = p.get("visible"), p.get("locked"), p.get("material_index")
        if layer is not None:
            if not isinstance(layer, str):
                raise ValueError("'layer' must be a string")
            if find_layer(self.doc, layer) is None:
                raise ValueError(f"Layer '{layer}' does not exist in the document")
        channels: Optional[list[int]] = None
        if color is not None:
            if not isinstance(color, (list, tuple)) or len(color) not in (3, 4):
                raise ValueError("'color' must be a list [r,g,b] or [r,g,b,a] (0-255)")
            try:
                channels = [int(c) for c in color]
            except (TypeError, ValueError):
                raise ValueError("All 'color' channel values must be integers 0-255") from None
            if not all(0 <= v <= 255 for v in channels):
                raise ValueError("Color channel values must be in range 0-255")
        applied: dict[str, Any] = {}
        updated = []
        for text in ids:
            obj = self._find(text)
            changes: dict[str, Any] = {}
            if layer is not None:
                path = find_layer(self.doc, layer)
                if path is not None:
                    changes["layer"] = path
                    applied["layer"] = layer
            if channels is not None:
                changes["color"] = (channels[0], channels[1], channels[2])
                applied["color"] = list(channels)
            if name is not None:
                if not isinstance(name, str):
                    raise ValueError("'name' must be a string")
                changes["name"] = applied["name"] = name
            if visible is not None:
                changes["visible"] = applied["visible"] = bool(visible)
            if locked is not None:
                changes["locked"] = applied["locked"] = bool(locked)
            if material is not None:
                try:
                    applied["material_index"] = int(material)
                except (TypeError, ValueError):
                    raise ValueError("'material_index' must be an integer") from None
                changes["material_index"] = applied["material_index"]
            for attribute, value in changes.items():
                if attribute != "material_index":  # the headless document has no materials
                    setattr(obj, attribute, value)
            if changes:
                updated.append(text)
        return {"updated_ids": updated, "count": len(updated), "applied": applied}

    def set_user_text(self, p: Params) -> dict[str, Any]:
        obj_id = read_id(p)
        key = p.get("key")
        if not isinstance(key, str) or not key:
            raise ValueError("'key' must be a non-empty string")
        value = p.get("value")
        if not isinstance(value, str):
            raise ValueError("'value' must be a string")
        attached = bool(p.get("attached_to_geometry", False))
        self._find(obj_id).user_text[key] = value
        return {"id": obj_id, "key": key, "value": value, "attached_to_geometry": attached}

    def get_user_text(self, p: Params) -> dict[str, Any]:
        obj_id = read_id(p)
        key = p.get("key")
        obj = self._find(obj_id)
        if key is not None:
            if not isinstance(key, str):
                raise ValueError("'key' must be a string when provided")
            return {"id": obj_id, "user_text": obj.user_text.get(key)}
        return {"id": obj_id, "user_text": dict(obj.user_text)}

    def select_objects(self, p: Params) -> dict[str, Any]:
        objects = self._rs_objects(read_ids(p.get("ids")))
        for obj in objects:
            obj.selected = True
        if objects:
            # rs.SelectObjects returns a count, which the real handler iterates.
            raise TypeError("'int' object is not iterable")
        return {"selected_ids": [], "count": 0}

    def unselect_all(self, p: Params) -> dict[str, Any]:
        count = 0
        for obj in self.doc.objects.values():
            count += obj.selected
            obj.selected = False
        return {"unselected_count": count}
