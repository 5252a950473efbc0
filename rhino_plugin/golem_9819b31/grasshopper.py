"""``grasshopper.*`` of golem-3dmcp@9819b31 (``handlers/grasshopper.py``, ``gh_handlers.py``).

Not wrapped. Until a definition is open the canvas is empty and every call that needs one
fails with the real "Grasshopper canvas is not open" ValueError. ``open_definition`` needs a
file that exists (the real GH_DocumentIO fails on a missing one); whatever the file, the
headless canvas then holds one fixed definition: Number Sliders Width, Depth and Height (0 to
100) wired into a Box, whose volume a Panel called Volume shows. Baking the Box adds a Brep to
the shared document.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any, Optional

from ..document import Document
from .kit import Params, add_object, layer_path
from .shapes import box_data

__all__ = ["GrasshopperHandlers"]

SLIDERS = (("Width", 10.0), ("Depth", 10.0), ("Height", 5.0))


@dataclass
class Component:
    guid: str
    nickname: str
    name: str
    type_name: str
    value: Any = None
    position: tuple[float, float] = (0.0, 0.0)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


class Canvas:
    """The open definition (or none)."""

    def __init__(self, document: Document) -> None:
        self.doc = document
        self.components: list[Component] = []
        self.open = False
        self.solutions = 0

    def load(self) -> None:
        new = self.doc.new_guid
        sliders = [
            Component(
                new(), nick, "Number Slider", "GH_NumberSlider", value, (50.0, 50.0 + 40.0 * i)
            )
            for i, (nick, value) in enumerate(SLIDERS)
        ]
        box = Component(
            new(), "Box", "Center Box", "Component_CenterBox", None, (250.0, 90.0),
            ["B", "X", "Y", "Z"], ["B"],
        )  # fmt: skip
        panel = Component(new(), "Volume", "Panel", "GH_Panel", "", (450.0, 90.0), ["I"], [])
        self.components = [*sliders, box, panel]
        self.open = True
        self.solve()

    def find(self, nickname: Any = None, guid: Any = None) -> Component:
        for component in self.components:
            if guid is not None and component.guid == guid:
                return component
            if nickname is not None and component.nickname == nickname:
                return component
        raise ValueError(
            "Component not found in active definition: "
            f"{nickname if nickname is not None else guid}"
        )

    def sizes(self) -> tuple[float, float, float]:
        width, depth, height = (float(self.find(n).value) for n, _ in SLIDERS)
        return width, depth, height

    def solve(self) -> None:
        width, depth, height = self.sizes()
        self.find("Volume").value = f"{width * depth * height:g}"
        self.solutions += 1


class GrasshopperHandlers:
    def __init__(self, document: Document) -> None:
        self.doc = document
        self.canvas = Canvas(document)

    def _gh(self) -> Canvas:
        """``_get_gh_doc``."""
        if not self.canvas.open:
            raise ValueError(
                "Grasshopper canvas is not open. "
                "Open Grasshopper first via the 'Grasshopper' command."
            )
        return self.canvas

    def open_definition(self, p: Params) -> dict[str, Any]:
        path = p.get("file_path")
        if not path:
            raise ValueError("'file_path' parameter is required.")
        if not os.path.isfile(str(path)):
            cause = RuntimeError(f"GH_DocumentIO.Open() returned False for path: {path}")
            raise RuntimeError(f"Failed to open Grasshopper definition '{path}': {cause}")
        self.canvas.load()
        count = len(self.canvas.components)
        return {"status": "opened", "file_path": path, "component_count": count}

    def close_definition(self, p: Params) -> dict[str, Any]:
        self._gh()
        self.canvas.components = []
        self.canvas.open = False
        return {"status": "closed"}

    def list_components(self, p: Params) -> dict[str, Any]:
        canvas = self._gh()
        return {"components": [self._component(c) for c in canvas.components]}

    def _component(self, c: Component) -> dict[str, Any]:
        return {
            "nickname": c.nickname,
            "name": c.name,
            "type": c.type_name,
            "guid": c.guid,
            "position": {"x": c.position[0], "y": c.position[1]},
            "input_params": [
                {"name": n, "type": "Param_Number", "value_summary": None} for n in c.inputs
            ],
            "output_params": [{"name": n, "type": "Param_Brep"} for n in c.outputs],
        }

    def _target(self, p: Params) -> tuple[Component, Any, Any]:
        nickname, guid = p.get("component_nickname"), p.get("component_guid")
        if not nickname and not guid:
            raise ValueError("Either 'component_nickname' or 'component_guid' must be supplied.")
        return self._gh().find(nickname, guid), nickname, guid

    def get_param(self, p: Params) -> dict[str, Any]:
        component, _, _ = self._target(p)
        if component.type_name == "GH_NumberSlider":
            return {
                "type": "slider",
                "value": float(component.value),
                "min": 0.0,
                "max": 100.0,
                "slider_type": "float",
            }
        if component.type_name == "GH_Panel":
            return {"type": "panel", "value": str(component.value)}
        return {"type": "param", "component_type": component.type_name, "value": "<1 items>"}

    def set_param(self, p: Params) -> dict[str, Any]:
        nickname, guid = p.get("component_nickname"), p.get("component_guid")
        if not nickname and not guid:
            raise ValueError("Either 'component_nickname' or 'component_guid' must be supplied.")
        if "value" not in p:
            raise ValueError("'value' parameter is required.")
        value = p["value"]
        component = self._gh().find(nickname, guid)
        _set(component, value)
        self.canvas.solve()
        target = nickname if nickname is not None else guid
        return {"status": "set", "component": target, "value": value}

    def recompute(self, p: Params) -> dict[str, Any]:
        self._gh().solve()
        return {"status": "ok", "solution_state": "Success"}

    def _bake(self, layer: Optional[str]) -> list[str]:
        width, depth, height = self.canvas.sizes()
        bbox, data = box_data((0.0, 0.0, 0.0), width, depth, height)
        path = layer if layer and layer in self.doc.layers else layer_path(self.doc, None)
        obj = add_object(self.doc, "Brep", "box", bbox, layer=path, **data)
        return [obj.guid]

    def bake(self, p: Params) -> dict[str, Any]:
        nickname, guid = p.get("component_nickname"), p.get("component_guid")
        layer = p.get("layer")
        canvas = self._gh()
        if nickname or guid:
            component = canvas.find(nickname, guid)
            baked = self._bake(layer) if component.nickname == "Box" else []
        else:
            baked = self._bake(layer)
        return {"baked_guids": baked, "count": len(baked)}

    def run_definition(self, p: Params) -> dict[str, Any]:
        path = p.get("file_path")
        inputs = p.get("inputs") or {}
        bake = bool(p.get("bake", False))
        layer = p.get("layer")
        if path:
            self.open_definition({"file_path": path})
        canvas = self._gh()
        for name, value in inputs.items():
            # The real handler logs a bad input and goes on.
            with contextlib.suppress(Exception):
                _set(canvas.find(name), value)
        canvas.solve()
        width, depth, height = canvas.sizes()
        outputs = {"Box.B": f"Box (volume {width * depth * height:g})"}
        baked = self._bake(layer) if bake else []
        return {"status": "ok", "outputs": outputs, "baked_guids": baked}

    def get_connections(self, p: Params) -> dict[str, Any]:
        canvas = self._gh()
        connections = [
            {
                "source_component": nick,
                "source_param": nick,
                "target_component": "Box",
                "target_param": axis,
            }
            for (nick, _), axis in zip(SLIDERS, ("X", "Y", "Z"))
        ]
        if canvas.components:
            connections.append(
                {
                    "source_component": "Box",
                    "source_param": "B",
                    "target_component": "Volume",
                    "target_param": "I",
                }
            )
        return {"connections": connections}


def _set(component: Component, value: Any) -> None:
    """``set_param_value``: a slider clamps to its range, a panel takes text."""
    if component.type_name == "GH_NumberSlider":
        try:
            component.value = max(0.0, min(100.0, float(value)))
        except Exception as exc:
            raise TypeError(f"Failed to set slider '{component.nickname}': {exc}") from None
    elif component.type_name == "GH_Panel":
        component.value = str(value)
    else:
        raise TypeError(
            f"Component '{component.nickname}' (type: {component.type_name}) "
            "is not a recognised settable type."
        )
