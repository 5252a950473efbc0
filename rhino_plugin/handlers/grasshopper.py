"""``grasshopper.*`` over a small in-memory definition.

Opening any ``file_path`` loads the same deterministic definition: three Number Sliders
(Width, Depth, Height) wired into a Box component whose volume feeds a Panel. Setting a slider
recomputes the solution; baking the Box adds a solid to the shared document, so it shows up on
the main channel at once. Calls that need a definition answer OPERATION_FAILED while none is
open; a ``definition_id`` that is not the open one is OBJECT_NOT_FOUND.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from golem_core.dispatcher import Handler
from golem_core.errors import InvalidParams, ObjectNotFound, OperationFailed

from ..document import Document
from ..geometry import BoundingBox
from ..params import first_present, opt_bool, opt_str, req_number, req_str

__all__ = ["GrasshopperHandlers"]

Params = dict[str, Any]
_SLIDERS = (("Width", 10.0), ("Depth", 10.0), ("Height", 5.0))
SLIDER_RANGE = (0.0, 100.0)


@dataclass
class Component:
    """One component of the definition; ``value`` is a slider's number or a panel's text."""

    guid: str
    name: str
    nickname: str
    kind: str
    value: Any = None
    sources: list[str] = field(default_factory=list)  # guids wired into this component

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "guid": self.guid,
            "name": self.name,
            "nickname": self.nickname,
            "type": self.kind,
            "value": self.value,
        }
        if self.kind == "slider":
            data["minimum"], data["maximum"] = SLIDER_RANGE
        return data


@dataclass
class Definition:
    """The open definition and its last solution."""

    definition_id: str
    file_path: str
    components: list[Component]
    solution_count: int = 0
    outputs: dict[str, Any] = field(default_factory=dict)

    def find(self, key: str, param: str) -> Component:
        for component in self.components:
            if key in (component.guid, component.nickname, component.name):
                return component
        raise ObjectNotFound(f"Grasshopper component not found: {key}", {param: key})

    def slider(self, nickname: str) -> float:
        value: float = self.find(nickname, "component_nickname").value
        return value

    def solve(self) -> None:
        """Recompute: the Box spans the slider sizes from the origin; the Panel shows its
        volume."""
        width, depth, height = (self.slider(name) for name, _ in _SLIDERS)
        box = BoundingBox((0.0, 0.0, 0.0), (width, depth, height))
        volume = width * depth * height
        self.find("Volume", "component_nickname").value = f"{volume:g}"
        self.solution_count += 1
        self.outputs = {"Box": {"bounding_box": box.to_json(), "volume": volume}, "Volume": volume}


class GrasshopperHandlers:
    """The Grasshopper session; baked objects go into ``document``."""

    def __init__(self, document: Document) -> None:
        self.doc = document
        self.definition: Optional[Definition] = None

    def table(self) -> dict[str, Handler]:
        """Method name → handler, for the plugin's and the MCP server's names."""
        return {
            "grasshopper.open_definition": self.open_definition,
            "grasshopper.close_definition": self.close_definition,
            "grasshopper.list_components": self.list_components,
            "grasshopper.get_param": self.get_param,
            "grasshopper.set_param": self.set_param,
            "grasshopper.set_input": self.set_input,
            "grasshopper.recompute": self.recompute,
            "grasshopper.run_definition": self.run_definition,
            "grasshopper.get_connections": self.get_connections,
            "grasshopper.get_outputs": self.get_outputs,
            "grasshopper.bake": self.bake,
            "grasshopper.bake_objects": self.bake_objects,
        }

    # -- definition lifecycle -------------------------------------------------------------------
    def _open(self, file_path: str) -> Definition:
        sliders = [
            Component(self.doc.new_guid(), "Number Slider", name, "slider", value)
            for name, value in _SLIDERS
        ]
        box = Component(
            self.doc.new_guid(), "Box", "Box", "component", sources=[s.guid for s in sliders]
        )
        panel = Component(self.doc.new_guid(), "Panel", "Volume", "panel", sources=[box.guid])
        definition = Definition(self.doc.new_guid(), file_path, [*sliders, box, panel])
        definition.solve()
        self.definition = definition
        return definition

    def _current(self, params: Params) -> Definition:
        if self.definition is None:
            raise OperationFailed(
                "No Grasshopper definition is open; call grasshopper.open_definition first."
            )
        wanted = opt_str(params, "definition_id")
        if wanted is not None and wanted != self.definition.definition_id:
            raise ObjectNotFound(
                f"Grasshopper definition not found: {wanted}", {"definition_id": wanted}
            )
        return self.definition

    def open_definition(self, params: Params) -> dict[str, Any]:
        definition = self._open(req_str(params, "file_path"))
        return {
            "status": "opened",
            "file_path": definition.file_path,
            "definition_id": definition.definition_id,
            "component_count": len(definition.components),
        }

    def close_definition(self, params: Params) -> dict[str, Any]:
        definition = self._current(params)
        self.definition = None
        return {"status": "closed", "definition_id": definition.definition_id}

    # -- inspection -----------------------------------------------------------------------------
    def list_components(self, params: Params) -> dict[str, Any]:
        definition = self._current(params)
        kind = opt_str(params, "component_type")
        components = [
            c.to_json()
            for c in definition.components
            if kind is None or kind.lower() in (c.kind, c.name.lower())
        ]
        return {"components": components, "count": len(components)}

    def _component(self, params: Params, names: tuple[str, ...]) -> Component:
        definition = self._current(params)
        param = first_present(params, *names)
        if param is None:
            raise InvalidParams(f"Required parameter '{names[0]}' is missing.", names[0])
        return definition.find(req_str(params, param), param)

    def get_param(self, params: Params) -> dict[str, Any]:
        component = self._component(params, ("component_guid", "component_nickname"))
        return {"component": component.to_json(), "value": component.value}

    def get_connections(self, params: Params) -> dict[str, Any]:
        definition = self._current(params)
        by_guid = {c.guid: c for c in definition.components}
        connections = [
            {
                "source": source,
                "source_nickname": by_guid[source].nickname,
                "target": target.guid,
                "target_nickname": target.nickname,
            }
            for target in definition.components
            for source in target.sources
        ]
        return {"connections": connections, "count": len(connections)}

    def get_outputs(self, params: Params) -> dict[str, Any]:
        definition = self._current(params)
        return {"outputs": definition.outputs, "solution_count": definition.solution_count}

    # -- changes --------------------------------------------------------------------------------
    def _set_slider(self, component: Component, params: Params) -> float:
        if component.kind != "slider":
            raise OperationFailed(
                f"Component '{component.nickname}' is not a Number Slider.",
                {"component": component.guid},
            )
        value = req_number(params, "value")
        low, high = SLIDER_RANGE
        if not low <= value <= high:
            raise InvalidParams(f"Parameter 'value' must be within {low:g}..{high:g}.", "value")
        component.value = value
        return value

    def set_param(self, params: Params) -> dict[str, Any]:
        component = self._component(params, ("component_guid", "component_nickname"))
        value = self._set_slider(component, params)
        self._current(params).solve()
        return {"status": "set", "component": component.nickname, "value": value}

    def set_input(self, params: Params) -> dict[str, Any]:
        component = self._component(params, ("component_name", "component_guid"))
        value = self._set_slider(component, params)
        if opt_bool(params, "run_after", True):
            self._current(params).solve()
        return {"status": "set", "component": component.nickname, "value": value}

    def recompute(self, params: Params) -> dict[str, Any]:
        definition = self._current(params)
        definition.solve()
        return {
            "status": "recomputed",
            "solution_state": "ok",
            "solution_count": definition.solution_count,
        }

    def run_definition(self, params: Params) -> dict[str, Any]:
        file_path = opt_str(params, "file_path")
        if file_path is not None and (
            self.definition is None or self.definition.file_path != file_path
        ):
            self._open(file_path)
        definition = self._current(params)
        inputs = params.get("inputs") or {}
        if not isinstance(inputs, dict):
            raise InvalidParams("Parameter 'inputs' must be an object of name → value.", "inputs")
        for name in sorted(inputs):
            self._set_slider(definition.find(name, "inputs"), {"value": inputs[name]})
        definition.solve()
        baked = (
            self._bake_box(definition, opt_str(params, "layer"))
            if opt_bool(params, "bake", False)
            else []
        )
        return {"status": "ok", "outputs": definition.outputs, "baked_guids": baked}

    def _bake_box(self, definition: Definition, layer: Optional[str]) -> list[str]:
        width, depth, height = (definition.slider(name) for name, _ in _SLIDERS)
        bbox = BoundingBox((0.0, 0.0, 0.0), (width, depth, height))
        obj = self.doc.add_object(
            "Brep",
            bbox,
            {"kind": "box", "source": "grasshopper", "definition": definition.file_path},
            layer,
        )
        return [obj.guid]

    def bake(self, params: Params) -> dict[str, Any]:
        component = self._component(params, ("component_guid", "component_nickname"))
        if component.name != "Box":
            raise OperationFailed(
                f"Component '{component.nickname}' has no geometry to bake.",
                {"component": component.guid},
            )
        baked = self._bake_box(self._current(params), opt_str(params, "layer"))
        return {"baked_guids": baked, "count": len(baked)}

    def bake_objects(self, params: Params) -> dict[str, Any]:
        definition = self._current(params)
        names = params.get("component_names")
        if names is not None and (
            not isinstance(names, list) or not all(isinstance(n, str) for n in names)
        ):
            raise InvalidParams(
                "Parameter 'component_names' must be a list of strings.", "component_names"
            )
        wanted = (
            [definition.find(n, "component_names") for n in names]
            if names
            else [c for c in definition.components if c.name == "Box"]
        )
        layer = opt_str(params, "layer")
        baked: list[str] = []
        for component in wanted:
            if component.name == "Box":
                baked.extend(self._bake_box(definition, layer))
        if not baked:
            raise OperationFailed("None of the components has geometry to bake.")
        return {"baked_guids": baked, "count": len(baked)}
