"""``viewport.*``: captures, display modes, named views.

``viewport.capture`` returns a real PNG (base64) of exactly the requested size, showing the
visible objects' bounding boxes as wireframes in the view's projection, always fit to the
extents (so ``viewport.zoom_extents`` has nothing left to change and reports success). The
display mode is recorded and reported; the drawing is a wireframe in every mode. Cameras,
background colors and per-object zoom are NOT_IMPLEMENTED.
"""

from __future__ import annotations

import base64
from typing import Any

from golem_core.dispatcher import Handler
from golem_core.errors import InvalidParams, ObjectNotFound

from ..document import Document
from ..params import first_present, opt_int, opt_str, req_str
from ..png import encode_rgb
from ..render import render_wireframe

__all__ = ["ViewportHandlers"]

Params = dict[str, Any]
MAX_CAPTURE_SIZE = 4096
DISPLAY_MODES = (
    "Wireframe",
    "Shaded",
    "Rendered",
    "Ghosted",
    "XRay",
    "Technical",
    "Artistic",
    "Pen",
    "Arctic",
)
_CAMERAS = {
    "perspective": ([-100.0, -100.0, 100.0], [0.0, 0.0, 1.0], "perspective"),
    "top": ([0.0, 0.0, 100.0], [0.0, 1.0, 0.0], "parallel"),
    "front": ([0.0, -100.0, 0.0], [0.0, 0.0, 1.0], "parallel"),
    "right": ([100.0, 0.0, 0.0], [0.0, 0.0, 1.0], "parallel"),
}


def _display_mode(params: Params, name: str) -> str:
    mode = req_str(params, name)
    for known in DISPLAY_MODES:
        if known.lower() == mode.lower():
            return known
    raise InvalidParams(f"Parameter '{name}' must be one of {', '.join(DISPLAY_MODES)}.", name)


class ViewportHandlers:
    """Viewport methods over one `Document`."""

    def __init__(self, document: Document) -> None:
        self.doc = document

    def table(self) -> dict[str, Handler]:
        """Method name → handler."""
        return {
            "viewport.capture": self.capture,
            "viewport.get_view_info": self.get_view_info,
            "viewport.set_display_mode": self.set_display_mode,
            "viewport.zoom_extents": self.zoom_extents,
            "viewport.list_named_views": self.list_named_views,
            "viewport.add_named_view": self.add_named_view,
            "viewport.create_named_view": self.add_named_view,
            "viewport.restore_named_view": self.restore_named_view,
        }

    def capture(self, params: Params) -> dict[str, Any]:
        width = opt_int(params, "width", 800, minimum=1, maximum=MAX_CAPTURE_SIZE)
        height = opt_int(params, "height", 600, minimum=1, maximum=MAX_CAPTURE_SIZE)
        view_name, view = self.doc.view(opt_str(params, "view_name"))
        mode = (
            _display_mode(params, "display_mode")
            if params.get("display_mode") is not None
            else view["display_mode"]
        )
        boxes = [(o.bbox, o.selected) for o in self.doc.objects.values() if o.visible]
        canvas = render_wireframe(width, height, view["projection"], boxes)
        png = encode_rgb(width, height, bytes(canvas.pixels))
        return {
            "success": True,
            "image": base64.b64encode(png).decode("ascii"),
            "width": width,
            "height": height,
            "view_name": view_name,
            "display_mode": mode,
            "format": "png",
            "code": None,
            "error": None,
        }

    def get_view_info(self, params: Params) -> dict[str, Any]:
        view_name, view = self.doc.view(opt_str(params, "view_name"))
        location, up, projection = _CAMERAS[view["projection"]]
        return {
            "success": True,
            "view_name": view_name,
            "display_mode": view["display_mode"],
            "projection": projection,
            "camera_location": location,
            "target": [0.0, 0.0, 0.0],
            "up_vector": up,
            "lens_length": 50.0,
            "viewport_size": [800, 600],
        }

    def set_display_mode(self, params: Params) -> dict[str, Any]:
        view_name, view = self.doc.view(opt_str(params, "view_name"))
        view["display_mode"] = _display_mode(params, "mode")
        return {
            "success": True,
            "view_name": view_name,
            "display_mode": view["display_mode"],
            "code": None,
            "error": None,
        }

    def zoom_extents(self, params: Params) -> dict[str, Any]:
        view_name, _ = self.doc.view(opt_str(params, "view_name"))
        return {"success": True, "zoomed": True, "view_name": view_name}

    def list_named_views(self, params: Params) -> dict[str, Any]:
        named = [{"name": name, **saved} for name, saved in sorted(self.doc.named_views.items())]
        return {"success": True, "named_views": named, "count": len(named)}

    def add_named_view(self, params: Params) -> dict[str, Any]:
        name_param = first_present(params, "save_as", "name") or "save_as"
        name = req_str(params, name_param)
        source_param = first_present(params, "source_view_name", "view_name") or "view_name"
        source, view = self.doc.view(opt_str(params, source_param), source_param)
        self.doc.named_views[name] = {
            "source_view": source,
            "projection": view["projection"],
            "display_mode": view["display_mode"],
        }
        return {"success": True, "name": name, "source_view": source}

    def restore_named_view(self, params: Params) -> dict[str, Any]:
        name_param = first_present(params, "named_view", "name") or "named_view"
        name = req_str(params, name_param)
        saved = self.doc.named_views.get(name)
        if saved is None:
            raise ObjectNotFound(f"Named view not found: {name}", {"named_view": name})
        target_param = first_present(params, "target_view_name", "view_name") or "view_name"
        target, view = self.doc.view(opt_str(params, target_param), target_param)
        view["projection"] = saved["projection"]
        view["display_mode"] = saved["display_mode"]
        return {"success": True, "restored": name, "view_name": target, "code": None, "error": None}
