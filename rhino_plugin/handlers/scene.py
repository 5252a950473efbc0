"""``scene.*``: document info, layers, object queries and object attributes.

Serves the plugin's names and the ones the MCP server sends but the real plugin lacks
(``scene.delete_objects``, ``scene.hide_objects``, ...), with the client's parameter names.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from golem_core.dispatcher import Handler
from golem_core.errors import InvalidParams, OperationFailed

from ..document import LAYER_SEPARATOR, DocObject, Document
from ..params import (
    first_present,
    opt_bool,
    opt_int,
    opt_str,
    req_guid_list,
    req_str,
)
from .common import parse_color

__all__ = ["SceneHandlers"]

Params = dict[str, Any]

# Rhino's ObjectType names and the friendlier words clients use for them.
_TYPE_ALIASES = {
    "brep": "Brep",
    "polysurface": "Brep",
    "solid": "Brep",
    "surface": "Brep",
    "curve": "Curve",
    "point": "Point",
    "annotation": "Annotation",
    "text": "Annotation",
}


class SceneHandlers:
    """Handlers over one `Document`."""

    def __init__(self, document: Document) -> None:
        self.doc = document

    def table(self) -> dict[str, Handler]:
        """Method name → handler."""
        return {
            "scene.get_document_info": self.get_document_info,
            "scene.list_layers": self.list_layers,
            "scene.create_layer": self.create_layer,
            "scene.delete_layer": self.delete_layer,
            "scene.set_current_layer": self.set_current_layer,
            "scene.list_objects": self.list_objects,
            "scene.get_object_info": self.get_object_info,
            "scene.get_selected_objects": self.get_selected_objects,
            "scene.select_objects": self.select_objects,
            "scene.deselect_all": self.deselect_all,
            "scene.delete_objects": self.delete_objects,
            "scene.hide_objects": self.hide_objects,
            "scene.lock_objects": self.lock_objects,
            "scene.set_object_layer": self.set_object_layer,
            "scene.set_object_name": self.set_object_name,
            "scene.set_user_text": self.set_user_text,
            "scene.get_groups": self.get_groups,
            "scene.list_views": self.list_views,
            "scene.set_active_view": self.set_active_view,
            # The plugin's own names for the same operations (it reads ``ids``).
            "manipulation.select_objects": self.select_objects,
            "manipulation.unselect_all": self.deselect_all,
            "manipulation.delete": self.delete_objects,
        }

    # -- document and layers --------------------------------------------------------------------
    def get_document_info(self, params: Params) -> dict[str, Any]:
        doc = self.doc
        return {
            "file_path": doc.path,
            "file_name": doc.path.replace("\\", "/").rsplit("/", 1)[-1] if doc.path else None,
            "units": doc.units,
            "tolerance": doc.tolerance,
            "angle_tolerance_degrees": doc.angle_tolerance_degrees,
            "object_count": len(doc.objects),
            "layer_count": len(doc.layers),
            "group_count": len(doc.groups),
            "named_view_count": len(doc.named_views),
            "current_layer": doc.current_layer,
            "active_view": doc.active_view,
            "headless": True,
        }

    def list_layers(self, params: Params) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for obj in self.doc.objects.values():
            counts[obj.layer] = counts.get(obj.layer, 0) + 1
        layers = [
            layer.to_json(layer.full_path == self.doc.current_layer, counts.get(layer.full_path, 0))
            for layer in self.doc.sorted_layers()
        ]
        return {"layers": layers, "count": len(layers), "current_layer": self.doc.current_layer}

    def create_layer(self, params: Params) -> dict[str, Any]:
        name = req_str(params, "name")
        if LAYER_SEPARATOR in name:
            raise InvalidParams("Parameter 'name' must not contain '::'; use 'parent'.", "name")
        parent_param = first_present(params, "parent", "parent_name")
        full_path = name
        if parent_param is not None:
            parent = self.doc.layer(req_str(params, parent_param), parent_param)
            full_path = parent.full_path + LAYER_SEPARATOR + name
        color = parse_color(params, "color") or (0, 0, 0)
        layer = self.doc.add_layer(
            full_path, color, opt_bool(params, "visible", True), opt_bool(params, "locked", False)
        )
        return {
            "success": True,
            "full_path": layer.full_path,
            "layer_index": layer.index,
            "id": layer.guid,
        }

    def delete_layer(self, params: Params) -> dict[str, Any]:
        layer = self.doc.layer(req_str(params, "name"), "name")
        delete_objects = opt_bool(params, "delete_objects", False)
        subtree = layer.full_path + LAYER_SEPARATOR
        doomed = [p for p in self.doc.layers if p == layer.full_path or p.startswith(subtree)]
        if self.doc.current_layer in doomed:
            raise OperationFailed(f"Cannot delete the current layer '{self.doc.current_layer}'.")
        on_layer = [o.guid for o in self.doc.objects.values() if o.layer in doomed]
        if on_layer and not delete_objects:
            raise OperationFailed(
                f"Layer '{layer.full_path}' has {len(on_layer)} object(s); "
                "pass delete_objects=true to delete them with it."
            )
        for guid in on_layer:
            self.doc.delete(guid)
        self.doc.remove_layer(layer.full_path)
        return {
            "success": True,
            "deleted_objects": len(on_layer),
            "message": f"Layer '{layer.full_path}' deleted.",
        }

    def set_current_layer(self, params: Params) -> dict[str, Any]:
        layer = self.doc.layer(req_str(params, "name"), "name")
        self.doc.current_layer = layer.full_path
        return {"success": True, "full_path": layer.full_path, "layer_index": layer.index}

    # -- queries --------------------------------------------------------------------------------
    def list_objects(self, params: Params) -> dict[str, Any]:
        objects = list(self.doc.objects.values())
        layer_name = opt_str(params, "layer")
        if layer_name is not None:
            layer = self.doc.layer(layer_name).full_path
            objects = [o for o in objects if o.layer == layer]
        object_type = opt_str(params, "object_type")
        if object_type is not None:
            wanted = _TYPE_ALIASES.get(object_type.lower(), object_type).lower()
            objects = [o for o in objects if o.object_type.lower() == wanted]
        pattern_param = first_present(params, "name_pattern", "name")
        if pattern_param is not None:
            pattern = req_str(params, pattern_param, allow_empty=True)
            objects = [o for o in objects if fnmatch.fnmatchcase(o.name, pattern)]
        if opt_bool(params, "selected_only", False):
            objects = [o for o in objects if o.selected]
        if opt_bool(params, "visible_only", False):
            objects = [o for o in objects if o.visible]
        if opt_bool(params, "unlocked_only", False):
            objects = [o for o in objects if not o.locked]
        offset = opt_int(params, "offset", 0, minimum=0)
        limit = opt_int(params, "limit", 1000, minimum=1)
        page = objects[offset : offset + limit]
        return {
            "objects": [o.summary() for o in page],
            "count": len(page),
            "total": len(objects),
            "offset": offset,
            "limit": limit,
        }

    def get_object_info(self, params: Params) -> dict[str, Any]:
        obj = self.doc.get(req_str(params, "guid"))
        details = obj.info()
        details["groups"] = self.doc.groups_of(obj.guid)
        return details

    def get_selected_objects(self, params: Params) -> dict[str, Any]:
        selected = [o.summary() for o in self.doc.objects.values() if o.selected]
        return {"objects": selected, "count": len(selected)}

    # -- attributes -----------------------------------------------------------------------------
    def _objects(self, params: Params) -> list[DocObject]:
        return self.doc.get_all(req_guid_list(params)[1])

    def select_objects(self, params: Params) -> dict[str, Any]:
        objects = self._objects(params)
        for obj in objects:
            obj.selected = True
        return {"count": len(objects), "selected_ids": [o.guid for o in objects]}

    def deselect_all(self, params: Params) -> dict[str, Any]:
        count = 0
        for obj in self.doc.objects.values():
            count += obj.selected
            obj.selected = False
        return {"unselected_count": count}

    def delete_objects(self, params: Params) -> dict[str, Any]:
        objects = self._objects(params)
        for obj in objects:
            self.doc.delete(obj.guid)
        return {"deleted_count": len(objects), "deleted_ids": [o.guid for o in objects]}

    def hide_objects(self, params: Params) -> dict[str, Any]:
        objects = self._objects(params)
        hide = opt_bool(params, "hide", True)
        for obj in objects:
            obj.visible = not hide
            obj.selected = obj.selected and not hide
        return {"count": len(objects), "guids": [o.guid for o in objects], "hidden": hide}

    def lock_objects(self, params: Params) -> dict[str, Any]:
        objects = self._objects(params)
        lock = opt_bool(params, "lock", True)
        for obj in objects:
            obj.locked = lock
        return {"count": len(objects), "guids": [o.guid for o in objects], "locked": lock}

    def set_object_layer(self, params: Params) -> dict[str, Any]:
        objects = self._objects(params)
        layer = self.doc.layer(req_str(params, "layer"))
        for obj in objects:
            obj.layer = layer.full_path
        return {"count": len(objects), "guids": [o.guid for o in objects], "layer": layer.full_path}

    def set_object_name(self, params: Params) -> dict[str, Any]:
        obj = self.doc.get(req_str(params, "guid"))
        obj.name = req_str(params, "name", allow_empty=True)
        return {"guid": obj.guid, "name": obj.name}

    def set_user_text(self, params: Params) -> dict[str, Any]:
        obj = self.doc.get(req_str(params, "guid"))
        key = req_str(params, "key")
        value = req_str(params, "value", allow_empty=True)
        obj.user_text[key] = value
        return {"guid": obj.guid, "key": key, "value": value}

    # -- groups and views -----------------------------------------------------------------------
    def get_groups(self, params: Params) -> dict[str, Any]:
        groups = [
            {"name": name, "object_count": len(members), "guids": list(members)}
            for name, members in sorted(self.doc.groups.items())
        ]
        return {"groups": groups, "count": len(groups)}

    def list_views(self, params: Params) -> dict[str, Any]:
        views = [
            {
                "name": name,
                "display_mode": view["display_mode"],
                "projection": view["projection"],
                "active": name == self.doc.active_view,
            }
            for name, view in self.doc.views.items()
        ]
        return {"views": views, "count": len(views), "active_view": self.doc.active_view}

    def set_active_view(self, params: Params) -> dict[str, Any]:
        name, _ = self.doc.view(req_str(params, "view_name"))
        self.doc.active_view = name
        return {"success": True, "active_view": name}
