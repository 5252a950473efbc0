"""``manipulation.*`` of golem-3dmcp@9819b31 (``handlers/manipulation.py``) on the document's
structure and attributes: delete, group, ungroup, join, explode, properties, user text and
selection (the transforms and arrays: `manipulation`). Every handler is wrapped: a failure is
an error dict inside a success envelope. ``rs.SelectObjects`` returns a count, which the
handler then iterates, so selecting objects that exist answers INVALID_PARAMS ``'int' object
is not iterable``, with the objects selected all the same.
"""

from __future__ import annotations

from typing import Any, Optional

from ..document import Document
from .kit import GolemFailure, Params
from .manipulation_kit import (
    ManipulationBase,
    explode_pieces,
    find_layer,
    read_id,
    read_ids,
)

__all__ = ["ObjectManipulationHandlers"]


class ObjectManipulationHandlers(ManipulationBase):
    """``manipulation.*`` on structure, attributes and selection."""

    def __init__(self, document: Document) -> None:
        super().__init__(document)
        self._group_serial = 0  # names Group01, Group02, … as Rhino does

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
