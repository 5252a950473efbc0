"""``viewport.*`` of golem-3dmcp@9819b31 (``handlers/viewport.py``, ``utils/screenshot.py``).

Not wrapped: parameter errors are -32000 envelopes; a Rhino call that fails *returns*
``{"success": false, "error": …, "code": …}`` in a success envelope. ``viewport.capture``
renders the headless document's boxes as a wireframe PNG of the requested size.
"""

from __future__ import annotations

import base64
from typing import Any, Optional

from ..document import Document
from ..png import encode_rgb
from ..render import render_wireframe
from .kit import Params, parse_guid

__all__ = ["ViewportHandlers"]

STANDARD_VIEWS = (
    "top", "bottom", "left", "right", "front", "back", "perspective", "twopointperspective",
)  # fmt: skip
DISPLAY_MODES = (
    "wireframe", "shaded", "rendered", "ghosted", "xray", "technical", "artistic", "pen",
)  # fmt: skip
MAX_RENDERED_SIDE = 4096
CAMERAS = {
    "top": ((0.0, 0.0, 100.0), (0.0, 1.0, 0.0)),
    "bottom": ((0.0, 0.0, -100.0), (0.0, 1.0, 0.0)),
    "front": ((0.0, -100.0, 0.0), (0.0, 0.0, 1.0)),
    "back": ((0.0, 100.0, 0.0), (0.0, 0.0, 1.0)),
    "right": ((100.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    "left": ((-100.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    "perspective": ((-60.0, -80.0, 60.0), (0.0, 0.0, 1.0)),
}


def _xyz(point: Any) -> dict[str, float]:
    return {"x": float(point[0]), "y": float(point[1]), "z": float(point[2])}


class ViewportHandlers:
    def __init__(self, document: Document) -> None:
        self.doc = document

    def _view(self, name: Any) -> str:
        """``_resolve_view``: the active view for None, else a case-insensitive match."""
        if name is None:
            return self.doc.active_view
        for view_name in self.doc.views:
            if view_name.lower() == str(name).lower():
                return view_name
        raise ValueError(f"View not found: '{name}'")

    def capture(self, p: Params) -> dict[str, Any]:
        width = int(p.get("width", 1920))
        height = int(p.get("height", 1080))
        display_mode = p.get("display_mode", None)
        view_name = p.get("view_name", None)
        if width < 1 or width > 16384:
            raise ValueError(f"width must be between 1 and 16384, got {width}")
        if height < 1 or height > 16384:
            raise ValueError(f"height must be between 1 and 16384, got {height}")
        if view_name is not None:
            matches = [v for v in self.doc.views if v.lower() == str(view_name).lower()]
            if not matches:
                return {
                    "success": False,
                    "error": f"View not found: '{view_name}'",
                    "code": "OBJECT_NOT_FOUND",
                }
            name = matches[0]
        else:
            name = self.doc.active_view
        view = self.doc.views[name]
        mode = str(view["display_mode"])
        if display_mode is not None and str(display_mode).lower() in DISPLAY_MODES:
            mode = _mode_name(str(display_mode))
        # The headless renderer keeps memory bounded; Rhino reports the bitmap's real size,
        # so the answer carries the size actually rendered.
        width, height = min(width, MAX_RENDERED_SIDE), min(height, MAX_RENDERED_SIDE)
        boxes = [(o.bbox, o.selected) for o in self.doc.objects.values() if o.visible]
        canvas = render_wireframe(width, height, str(view["projection"]), boxes)
        png = encode_rgb(width, height, bytes(canvas.pixels))
        return {
            "success": True,
            "image": base64.b64encode(png).decode("ascii"),
            "width": width,
            "height": height,
            "view_name": name,
            "display_mode": mode,
        }

    def set_view(self, p: Params) -> dict[str, Any]:
        view_name = p.get("view_name", None)
        named_view = p.get("named_view", None)
        if named_view is not None:
            if str(named_view) not in self.doc.named_views:
                return {
                    "success": False,
                    "error": f"RestoreNamedView failed for '{named_view}'.",
                    "code": "OPERATION_FAILED",
                }
            self._restore(str(named_view), self.doc.active_view)
            return {"success": True, "restored_named_view": named_view}
        if view_name is None:
            raise ValueError("Either 'view_name' or 'named_view' must be provided.")
        key = str(view_name).lower()
        if key not in STANDARD_VIEWS:
            raise ValueError(
                f"view_name '{view_name}' is not a recognised standard view. "
                "Choose from: Top, Bottom, Left, Right, Front, Back, "
                "Perspective, TwoPointPerspective."
            )
        projection = key if key in ("top", "front", "right") else "perspective"
        self.doc.views[self.doc.active_view]["projection"] = projection
        return {"success": True, "view_set": view_name}

    def zoom_object(self, p: Params) -> dict[str, Any]:
        ids = p.get("ids", None)
        if ids is None:
            raise ValueError("'ids' parameter is required.")
        if not isinstance(ids, list) or len(ids) == 0:
            raise ValueError("'ids' must be a non-empty list of GUID strings.")
        found, missing = [], []
        for guid in ids:
            obj = self.doc.objects.get(_system_guid(guid))
            if obj is None:
                missing.append(guid)
            else:
                found.append(obj)
        if not found:
            return {
                "success": False,
                "error": "Could not compute a valid bounding box for the supplied objects.",
                "code": "OPERATION_FAILED",
                "missing_ids": missing,
            }
        box = found[0].bbox
        for obj in found[1:]:
            box = box.union(obj.bbox)
        result: dict[str, Any] = {
            "success": True,
            "bounding_box": {"min": _xyz(box.minimum), "max": _xyz(box.maximum)},
            "object_count": len(ids) - len(missing),
        }
        if missing:
            result["missing_ids"] = missing
        return result

    def zoom_extents(self, p: Params) -> dict[str, Any]:
        view_name = p.get("view_name", None)
        if view_name is None:
            return {"success": True, "zoomed": "all_views"}
        self._view(view_name)
        return {"success": True, "zoomed": view_name}

    def zoom_selected(self, p: Params) -> dict[str, Any]:
        return {"success": True}

    def set_display_mode(self, p: Params) -> dict[str, Any]:
        mode = p.get("mode", None)
        if mode is None:
            raise ValueError("'mode' parameter is required.")
        view_name = p.get("view_name", None)
        mode_str = str(mode)
        if mode_str.lower() not in DISPLAY_MODES:
            raise ValueError(
                f"Unrecognised display mode '{mode_str}'. Valid modes: "
                "Wireframe, Shaded, Rendered, Ghosted, XRay, Technical, Artistic, Pen."
            )
        target = self._view(view_name)
        self.doc.views[target]["display_mode"] = _mode_name(mode_str)
        return {"success": True, "view_name": target, "display_mode": mode_str}

    def set_camera(self, p: Params) -> dict[str, Any]:
        location = p.get("camera_location", None)
        target = p.get("target", None)
        lens: Optional[Any] = p.get("lens_length", 50)
        view_name = p.get("view_name", None)
        if location is None:
            raise ValueError("'camera_location' parameter is required.")
        if target is None:
            raise ValueError("'target' parameter is required.")
        camera = _camera_point(location, "camera_location")
        aim = _camera_point(target, "target")
        if lens is not None:
            lens = float(lens)
            if lens <= 0:
                raise ValueError(f"lens_length must be positive, got {lens}")
        name = self._view(view_name)
        view = self.doc.views[name]
        view.update(camera=camera, target=aim, lens=lens if lens is not None else 50.0)
        return {
            "success": True,
            "view_name": name,
            "camera_location": _xyz(camera),
            "target": _xyz(aim),
            "lens_length": lens,
        }

    def _add_named(self, p: Params) -> dict[str, Any]:
        name = p.get("name", None) or p.get("save_as", None)
        view_name = p.get("view_name", None) or p.get("source_view_name", None)
        if name is None or str(name).strip() == "":
            raise ValueError("'name' (or 'save_as') parameter is required and must not be empty.")
        name = str(name).strip()
        source = self._view(view_name)
        self.doc.named_views[name] = dict(self.doc.views[source])
        return {"success": True, "name": name, "saved_from": source}

    def create_named_view(self, p: Params) -> dict[str, Any]:
        return self._add_named(p)

    def add_named_view(self, p: Params) -> dict[str, Any]:
        return self._add_named(p)

    def _restore(self, name: str, target: str) -> None:
        saved = dict(self.doc.named_views[name])
        self.doc.views[target].update(saved)

    def restore_named_view(self, p: Params) -> dict[str, Any]:
        name = p.get("name", None)
        view_name = p.get("view_name", None)
        if name is None or str(name).strip() == "":
            raise ValueError("'name' parameter is required and must not be empty.")
        name = str(name).strip()
        target = self._view(view_name) if view_name is not None else self.doc.active_view
        if name not in self.doc.named_views:
            return {
                "success": False,
                "error": f"RestoreNamedView failed for '{name}'. Check that the named view exists.",
                "code": "OPERATION_FAILED",
            }
        self._restore(name, target)
        return {"success": True, "restored": name}

    def list_named_views(self, p: Params) -> dict[str, Any]:
        views = list(self.doc.named_views)
        return {"success": True, "named_views": views, "count": len(views)}

    def get_view_info(self, p: Params) -> dict[str, Any]:
        name = self._view(p.get("view_name", None))
        view = self.doc.views[name]
        projection = str(view["projection"])
        default_camera, up = CAMERAS.get(projection, CAMERAS["perspective"])
        camera = view.get("camera", default_camera)
        return {
            "success": True,
            "view_name": name,
            "camera_location": _xyz(camera),
            "target": _xyz(view.get("target", (0.0, 0.0, 0.0))),
            "up_vector": _xyz(up),
            "lens_length": float(view.get("lens", 50.0)),
            "projection": "perspective" if projection == "perspective" else "parallel",
            "display_mode": str(view["display_mode"]),
            "viewport_size": {"width": 1280, "height": 720},
        }

    def set_background_color(self, p: Params) -> dict[str, Any]:
        color = p.get("color", None)
        if color is None:
            raise ValueError("'color' parameter is required.")
        if isinstance(color, (list, tuple)):
            if len(color) != 3:
                raise ValueError("'color' list must have exactly 3 elements [r, g, b].")
            r, g, b = int(color[0]), int(color[1]), int(color[2])
        elif isinstance(color, dict):
            try:
                r, g, b = int(color["r"]), int(color["g"]), int(color["b"])
            except KeyError as exc:
                raise ValueError(f"'color' dict is missing key: {exc}") from None
        else:
            kind = type(color).__name__
            raise TypeError(f"'color' must be a list [r,g,b] or dict {{r,g,b}}, got {kind}.")
        for channel, value in (("r", r), ("g", g), ("b", b)):
            if not 0 <= value <= 255:
                raise ValueError(
                    f"Color channel '{channel}' must be between 0 and 255, got {value}."
                )
        return {"success": True, "color": {"r": r, "g": g, "b": b}}


def _mode_name(mode: str) -> str:
    return {"xray": "XRay"}.get(mode.lower(), mode.lower().capitalize())


def _system_guid(text: Any) -> str:
    """``System.Guid(str(text))``, which raises for a malformed GUID."""
    return parse_guid(text)


def _camera_point(value: Any, name: str) -> tuple[float, float, float]:
    if isinstance(value, (list, tuple)):
        if len(value) != 3:
            raise ValueError(f"'{name}' must have exactly 3 elements [x, y, z].")
        return (float(value[0]), float(value[1]), float(value[2]))
    if isinstance(value, dict):
        try:
            return (float(value["x"]), float(value["y"]), float(value["z"]))
        except KeyError as exc:
            raise ValueError(f"'{name}' dict is missing key: {exc}") from None
    kind = type(value).__name__
    raise TypeError(f"'{name}' must be a list [x,y,z] or dict {{x,y,z}}, got {kind}.")
