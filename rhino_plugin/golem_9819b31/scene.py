"""``scene.*`` of golem-3dmcp@9819b31 (``handlers/scene.py``): not wrapped, so every failure is
a -32000 error envelope."""

from __future__ import annotations

import fnmatch
from typing import Any

from ..document import DocObject, Document, Layer
from .kit import Params, find_object
from .serialize import serialize_any, serialize_object

__all__ = ["SceneHandlers", "type_matches"]


# _object_type_matches: the filter word → the RhinoCommon classes it accepts.
_TYPE_FILTER = {
    "point": ("Point",),
    "curve": ("Curve",),
    "surface": ("Surface",),
    "brep": ("Brep",),
    "mesh": ("Mesh",),
    "extrusion": ("Extrusion",),
    "subd": ("SubD",),
    "annotation": ("TextEntity", "Dimension"),
    "light": (),
}


def type_matches(obj: DocObject, type_filter: str) -> bool:
    """``_object_type_matches``: an unknown filter word accepts everything."""
    word = type_filter.lower().strip()
    if word in ("all", ""):
        return True
    classes = _TYPE_FILTER.get(word)
    return True if classes is None else obj.object_type in classes


def layer_json(doc: Document, layer: Layer) -> dict[str, Any]:
    """``_serialize_layer``."""
    r, g, b = layer.color
    return {
        "name": layer.name,
        "full_path": layer.full_path,
        "color": {"r": r, "g": g, "b": b, "a": 255},
        "visible": layer.visible,
        "locked": layer.locked,
        "parent_name": layer.parent,
        "object_count": sum(1 for o in doc.objects.values() if o.layer == layer.full_path),
        "is_current": layer.full_path == doc.current_layer,
    }


class SceneHandlers:
    def __init__(self, document: Document) -> None:
        self.doc = document

    def get_document_info(self, params: Params) -> dict[str, Any]:
        doc = self.doc
        return {
            "file_path": doc.path or "",
            "units": doc.units,
            "absolute_tolerance": float(doc.tolerance),
            "angle_tolerance": float(doc.angle_tolerance_degrees),
            "object_count": len(doc.objects),
            "layer_count": len(doc.layers),
        }

    def list_layers(self, params: Params) -> dict[str, Any]:
        return {"layers": [layer_json(self.doc, layer) for layer in self.doc.sorted_layers()]}

    def list_objects(self, params: Params) -> dict[str, Any]:
        object_type = str(params.get("object_type", "all") or "all").lower().strip()
        layer_filter = params.get("layer", None)
        name_pattern = params.get("name_pattern", None)
        selected_only = bool(params.get("selected_only", False))
        offset = int(params.get("offset", 0))
        limit = int(params.get("limit", 100))
        if layer_filter is not None:
            layer_filter = str(layer_filter).strip()
        if name_pattern is not None:
            name_pattern = str(name_pattern).strip()
        if layer_filter and layer_filter not in self.doc.layers:
            return {"objects": [], "total": 0, "offset": offset, "limit": limit}
        matching = []
        for obj in self.doc.objects.values():
            if selected_only and not obj.selected:
                continue
            if object_type not in ("all", "") and not type_matches(obj, object_type):
                continue
            if layer_filter and obj.layer != layer_filter:
                continue
            if name_pattern and not fnmatch.fnmatch(obj.name, name_pattern):
                continue
            matching.append(obj)
        total = len(matching)
        if offset > 0:
            matching = matching[offset:]
        if limit > 0:
            matching = matching[:limit]
        return {
            "objects": [serialize_object(self.doc, o) for o in matching],
            "total": total,
            "offset": offset,
            "limit": limit,
        }

    def get_object_info(self, params: Params) -> dict[str, Any]:
        guid_str = params.get("guid", "")
        if not guid_str:
            raise ValueError("'guid' parameter is required and must be a non-empty string.")
        obj = find_object(self.doc, guid_str)
        result = serialize_object(self.doc, obj)
        result["geometry_detail"] = serialize_any(obj)
        result["attributes"] = {
            "object_id": obj.guid,
            "name": obj.name,
            "layer_index": self.doc.layers[obj.layer].index,
            "space": 1,
            "linetype_index": -1,
            "material_index": -1,
            "wire_density": 1,
            "color_source": "ColorFromObject" if obj.color is not None else "ColorFromLayer",
            "visible": obj.visible,
            "mode": "Locked" if obj.locked else "Normal",
        }
        return result

    def get_selected_objects(self, params: Params) -> dict[str, Any]:
        selected = [o for o in self.doc.objects.values() if o.selected]
        return {"objects": [serialize_object(self.doc, o) for o in selected]}

    def get_groups(self, params: Params) -> dict[str, Any]:
        groups = []
        for index, (name, members) in enumerate(self.doc.groups.items()):
            live = [g for g in members if g in self.doc.objects]
            groups.append(
                {"name": name, "index": index, "member_count": len(live), "member_guids": live}
            )
        return {"groups": groups}

    def get_blocks(self, params: Params) -> dict[str, Any]:
        return {"blocks": []}  # the headless document has no block definitions

    def create_layer(self, params: Params) -> dict[str, Any]:
        name = params.get("name", "")
        if not name:
            raise ValueError("'name' parameter is required for create_layer.")
        color_param = params.get("color", {}) or {}
        try:
            color = (
                int(color_param.get("r", 0)),
                int(color_param.get("g", 0)),
                int(color_param.get("b", 0)),
            )
            int(color_param.get("a", 255))
            if not all(0 <= c <= 255 for c in color):
                raise ValueError("colour component out of range")
        except Exception:
            color = (0, 0, 0)  # the real handler falls back to black on anything else
        visible = bool(params.get("visible", True))
        locked = bool(params.get("locked", False))
        parent_name = params.get("parent_name", None)
        if parent_name is None:
            parent_name = params.get("parent", None)
        full_path = str(name)
        if parent_name and str(parent_name) in self.doc.layers:
            full_path = f"{parent_name}::{name}"
        if full_path in self.doc.layers or "::" in str(name):
            raise RuntimeError(f"Rhino failed to create layer '{name}'.")
        layer = self.doc.add_layer(full_path, color, visible, locked)
        return {"layer_index": layer.index, "full_path": layer.full_path, "success": True}

    def delete_layer(self, params: Params) -> dict[str, Any]:
        name = params.get("name", "")
        if not name:
            raise ValueError("'name' parameter is required for delete_layer.")
        delete_objects = bool(params.get("delete_objects", False))
        layer = self.doc.layers.get(str(name))
        if layer is None:
            raise ValueError(f"Layer not found: '{name}'")
        if layer.full_path == self.doc.current_layer:
            raise RuntimeError(f"Cannot delete the current active layer: '{name}'.")
        on_layer = [o.guid for o in self.doc.objects.values() if o.layer == layer.full_path]
        deleted = 0
        if on_layer:
            if not delete_objects:
                raise RuntimeError(
                    f"Layer '{name}' has {len(on_layer)} object(s). "
                    "Set delete_objects=True to remove them along with the layer."
                )
            for guid in on_layer:
                self.doc.delete(guid)
                deleted += 1
        if any(path.startswith(layer.full_path + "::") for path in self.doc.layers):
            raise RuntimeError(
                f"Rhino refused to delete layer '{name}'. "
                "It may have sub-layers; delete those first."
            )
        self.doc.remove_layer(layer.full_path)
        return {"success": True, "deleted_objects": deleted, "message": f"Layer '{name}' deleted."}

    def set_current_layer(self, params: Params) -> dict[str, Any]:
        name = params.get("name", "")
        if not name:
            raise ValueError("'name' parameter is required for set_current_layer.")
        layer = self.doc.layers.get(str(name))
        if layer is None:
            raise ValueError(f"Layer not found: '{name}'")
        if not layer.visible:
            raise RuntimeError(f"Cannot set a hidden layer as current: '{name}'.")
        if layer.locked:
            raise RuntimeError(f"Cannot set a locked layer as current: '{name}'.")
        self.doc.current_layer = layer.full_path
        return {"success": True, "layer_index": layer.index, "full_path": layer.full_path}
