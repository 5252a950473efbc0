"""``manipulation.*`` transforms, groups, properties and user text, plus the MCP server's
spellings (``manipulation.move_objects``, ``operations.mirror_objects``, ...).

The plugin's handlers read ``ids``; the MCP server sends ``guids``: every handler here accepts
both. A transform maps each object's bounding box (see `geometry`); with ``copy`` it maps a
copy and leaves the original alone.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from golem_core.dispatcher import Handler
from golem_core.errors import InvalidParams, ObjectNotFound

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
from ..params import (
    Point,
    first_present,
    opt_bool,
    opt_int,
    opt_point,
    opt_str,
    req_guid_list,
    req_number,
    req_point,
    req_str,
)
from .common import parse_color

__all__ = ["ManipulationHandlers"]

Params = dict[str, Any]
ORIGIN: Point = (0.0, 0.0, 0.0)
Z_AXIS: Point = (0.0, 0.0, 1.0)


def _scale_factors(params: Params, name: str) -> tuple[float, float, float]:
    """A uniform factor or ``[sx, sy, sz]``; zero factors collapse geometry, so they are
    rejected as Rhino's Scale does."""
    value = params.get(name)
    if isinstance(value, list):
        factors = req_point(params, name)
    else:
        factor = req_number(params, name)
        factors = (factor, factor, factor)
    if any(f == 0 for f in factors):
        raise InvalidParams(f"Parameter '{name}' must not be zero.", name)
    return factors


class ManipulationHandlers:
    """Transforms and attribute edits over one `Document`."""

    def __init__(self, document: Document) -> None:
        self.doc = document

    def table(self) -> dict[str, Handler]:
        """Method name → handler, for the plugin's and the MCP server's names."""
        return {
            "manipulation.move": self._transform("moved_ids", self._translation, copy=False),
            "manipulation.move_objects": self._transform(
                "moved_ids", self._translation, copy=False
            ),
            "manipulation.copy": self._transform("new_ids", self._translation, copy=True),
            "manipulation.copy_objects": self._transform("new_ids", self._translation, copy=True),
            "manipulation.rotate": self._transform("result_ids", self._rotation),
            "manipulation.rotate_objects": self._transform("result_ids", self._rotation),
            "manipulation.scale": self._transform("result_ids", self._scaling),
            "manipulation.scale_objects": self._transform("result_ids", self._scaling),
            "manipulation.mirror": self._transform(
                "result_ids", self._line_mirror, copy_default=True
            ),
            "operations.mirror_objects": self._transform(
                "result_ids", self._plane_mirror, copy_default=True
            ),
            "manipulation.group": self.group,
            "operations.group_objects": self.group,
            "manipulation.ungroup": self.ungroup,
            "operations.ungroup_objects": self.ungroup_objects,
            "manipulation.set_properties": self.set_properties,
            "manipulation.set_user_text": self.set_user_text,
            "manipulation.get_user_text": self.get_user_text,
        }

    # -- transforms -----------------------------------------------------------------------------
    def _transform(
        self,
        key: str,
        point_map: Callable[[Params], PointMap],
        *,
        copy: Optional[bool] = None,
        copy_default: bool = False,
    ) -> Handler:
        """A handler mapping the objects' boxes by ``point_map(params)``; ``copy`` fixes the
        copy mode (move/copy), otherwise the ``copy`` parameter decides."""

        def handle(params: Params) -> dict[str, Any]:
            objects = self.doc.get_all(req_guid_list(params)[1])
            mapping = point_map(params)
            as_copy = copy if copy is not None else opt_bool(params, "copy", copy_default)
            results: list[DocObject] = []
            for obj in objects:
                box = obj.bbox.mapped(mapping)
                if as_copy:
                    results.append(self.doc.copy_object(obj, box))
                else:
                    obj.bbox = box
                    results.append(obj)
            return {"count": len(results), key: [o.guid for o in results]}

        return handle

    def _translation(self, params: Params) -> PointMap:
        return translation_map(req_point(params, "translation"))

    def _rotation(self, params: Params) -> PointMap:
        angle_param = first_present(params, "angle_degrees", "angle") or "angle_degrees"
        angle = req_number(params, angle_param)
        axis = unit(opt_point(params, "axis", Z_AXIS), "axis")
        return rotation_map(opt_point(params, "center", ORIGIN), axis, angle)

    def _scaling(self, params: Params) -> PointMap:
        factor_param = first_present(params, "scale", "scale_factor") or "scale"
        origin_param = first_present(params, "center", "origin") or "center"
        return scale_map(
            opt_point(params, origin_param, ORIGIN), _scale_factors(params, factor_param)
        )

    def _line_mirror(self, params: Params) -> PointMap:
        start = req_point(params, "start")
        return mirror_map(start, line_mirror_normal(start, req_point(params, "end")))

    def _plane_mirror(self, params: Params) -> PointMap:
        normal = unit(opt_point(params, "plane_normal", (1.0, 0.0, 0.0)), "plane_normal")
        return mirror_map(opt_point(params, "plane_origin", ORIGIN), normal)

    # -- groups ---------------------------------------------------------------------------------
    def group(self, params: Params) -> dict[str, Any]:
        objects = self.doc.get_all(req_guid_list(params)[1])
        name_param = first_present(params, "group_name", "name") or "group_name"
        name = opt_str(params, name_param) or self._next_group_name()
        if name in self.doc.groups:
            raise InvalidParams(f"Group '{name}' already exists.", name_param)
        self.doc.groups[name] = [o.guid for o in objects]
        return {"group_name": name, "count": len(objects), "guids": [o.guid for o in objects]}

    def _next_group_name(self) -> str:
        number = 1
        while f"Group{number:02d}" in self.doc.groups:
            number += 1
        return f"Group{number:02d}"

    def ungroup(self, params: Params) -> dict[str, Any]:
        name = req_str(params, "group_name")
        if name not in self.doc.groups:
            raise ObjectNotFound(f"Group not found: {name}", {"group_name": name})
        freed = self.doc.groups.pop(name)
        return {"count": len(freed), "freed_ids": freed}

    def ungroup_objects(self, params: Params) -> dict[str, Any]:
        objects = self.doc.get_all(req_guid_list(params)[1])
        wanted = {o.guid for o in objects}
        dissolved = sorted(
            name for name, members in self.doc.groups.items() if wanted.intersection(members)
        )
        freed: list[str] = []
        for name in dissolved:
            freed.extend(g for g in self.doc.groups.pop(name) if g not in freed)
        return {"count": len(freed), "freed_ids": freed, "groups": dissolved}

    # -- attributes -----------------------------------------------------------------------------
    def set_properties(self, params: Params) -> dict[str, Any]:
        objects = self.doc.get_all(req_guid_list(params)[1])
        applied: dict[str, Any] = {}
        color = parse_color(params, "color")
        if color is not None:
            applied["color"] = list(color)
        if params.get("layer") is not None:
            applied["layer"] = self.doc.layer(req_str(params, "layer")).full_path
        if params.get("name") is not None:
            applied["name"] = req_str(params, "name", allow_empty=True)
        for flag in ("visible", "locked"):
            if params.get(flag) is not None:
                applied[flag] = opt_bool(params, flag, False)
        if params.get("material_index") is not None:
            applied["material_index"] = opt_int(params, "material_index", -1, minimum=-1)
        for obj in objects:
            if "color" in applied:
                obj.color = color
            obj.layer = applied.get("layer", obj.layer)
            obj.name = applied.get("name", obj.name)
            obj.visible = applied.get("visible", obj.visible)
            obj.locked = applied.get("locked", obj.locked)
            if "material_index" in applied:
                obj.geometry["material_index"] = applied["material_index"]
        return {"count": len(objects), "updated_ids": [o.guid for o in objects], "applied": applied}

    def _one(self, params: Params) -> DocObject:
        name = first_present(params, "id", "guid") or "id"
        return self.doc.get(req_str(params, name))

    def set_user_text(self, params: Params) -> dict[str, Any]:
        obj = self._one(params)
        key = req_str(params, "key")
        value = req_str(params, "value", allow_empty=True)
        attached = opt_bool(params, "attached_to_geometry", False)
        obj.user_text[key] = value
        return {"id": obj.guid, "key": key, "value": value, "attached_to_geometry": attached}

    def get_user_text(self, params: Params) -> dict[str, Any]:
        obj = self._one(params)
        key = opt_str(params, "key")
        if key is None:
            return {"id": obj.guid, "user_text": dict(sorted(obj.user_text.items()))}
        return {"id": obj.guid, "user_text": {key: obj.user_text.get(key)}}
