"""The headless document: an in-memory stand-in for the Rhino document the real plugin edits.

Objects are their bounding boxes plus attributes (layer, name, user text, visibility, lock,
selection, color). GUIDs come from a `random.Random(seed)`, so one seed and one sequence of
calls always yield the same GUIDs. Objects are kept in creation order, layers in index order,
groups and named views sorted by name: every listing is deterministic.

Not thread-safe by itself: every handler runs on the single UI thread (see `ui_thread`).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any, Optional

from golem_core.errors import InvalidParams

from .geometry import BoundingBox

__all__ = ["DEFAULT_LAYER", "DocObject", "Document", "Layer"]

DEFAULT_LAYER = "Default"
LAYER_SEPARATOR = "::"
Color = tuple[int, int, int]


@dataclass
class DocObject:
    """One object of the document. ``geometry`` records how it was created (kind + inputs);
    after a transform the bounding box is the authority."""

    guid: str
    object_type: str
    layer: str
    bbox: BoundingBox
    geometry: dict[str, Any]
    name: str = ""
    user_text: dict[str, str] = field(default_factory=dict)
    visible: bool = True
    locked: bool = False
    selected: bool = False
    color: Optional[Color] = None


@dataclass
class Layer:
    """A layer; ``full_path`` is ``Parent::Child`` like Rhino's."""

    full_path: str
    index: int
    guid: str
    color: Color = (0, 0, 0)
    visible: bool = True
    locked: bool = False

    @property
    def name(self) -> str:
        return self.full_path.rsplit(LAYER_SEPARATOR, 1)[-1]

    @property
    def parent(self) -> Optional[str]:
        parts = self.full_path.rsplit(LAYER_SEPARATOR, 1)
        return parts[0] if len(parts) == 2 else None


class Document:
    """The document model. Layer methods raise `InvalidParams` for unknown or duplicate
    layers."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._rng = random.Random(seed)
        self.objects: dict[str, DocObject] = {}
        self.layers: dict[str, Layer] = {}
        self.groups: dict[str, list[str]] = {}
        self.named_views: dict[str, dict[str, Any]] = {}
        self.units = "Millimeters"
        self.tolerance = 0.001
        self.angle_tolerance_degrees = 1.0
        self.path: Optional[str] = None
        self.current_layer = DEFAULT_LAYER
        self.add_layer(DEFAULT_LAYER)
        self.views: dict[str, dict[str, Any]] = standard_views()
        self.active_view = "Perspective"

    def new_guid(self) -> str:
        """A fresh GUID drawn from the seeded generator."""
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def add_layer(
        self, full_path: str, color: Color = (0, 0, 0), visible: bool = True, locked: bool = False
    ) -> Layer:
        """Add a layer (its parent must exist). Raises InvalidParams naming ``name`` when the
        layer exists and naming ``parent`` when the parent does not."""
        if full_path in self.layers:
            raise InvalidParams(f"Layer '{full_path}' already exists.", "name")
        parent = full_path.rsplit(LAYER_SEPARATOR, 1)[0] if LAYER_SEPARATOR in full_path else None
        if parent is not None and parent not in self.layers:
            raise InvalidParams(f"Parent layer '{parent}' does not exist.", "parent")
        index = max((layer.index for layer in self.layers.values()), default=-1) + 1
        layer = Layer(full_path, index, self.new_guid(), color, visible, locked)
        self.layers[full_path] = layer
        return layer

    def layer(self, name: str, param: str = "layer") -> Layer:
        """The layer called ``name`` (full path, or a unique short name). Raises InvalidParams
        naming ``param`` when there is no such layer."""
        if name in self.layers:
            return self.layers[name]
        matches = [layer for layer in self.layers.values() if layer.name == name]
        if len(matches) == 1:
            return matches[0]
        raise InvalidParams(f"Layer '{name}' does not exist.", param)

    def sorted_layers(self) -> list[Layer]:
        return sorted(self.layers.values(), key=lambda layer: layer.index)

    def remove_layer(self, full_path: str) -> None:
        """Remove a layer and its sublayers (callers check objects and the current layer)."""
        for path in [p for p in self.layers if p == full_path or p.startswith(full_path + "::")]:
            del self.layers[path]

    def add_object(
        self,
        object_type: str,
        bbox: BoundingBox,
        geometry: dict[str, Any],
        layer: Optional[str] = None,
        name: str = "",
    ) -> DocObject:
        """Add an object on ``layer`` (default: the current layer) and return it. Raises
        InvalidParams naming ``layer`` when the layer does not exist."""
        layer_path = self.layer(layer).full_path if layer is not None else self.current_layer
        obj = DocObject(self.new_guid(), object_type, layer_path, bbox, dict(geometry), name)
        self.objects[obj.guid] = obj
        return obj

    def copy_object(self, source: DocObject, bbox: BoundingBox) -> DocObject:
        """A copy of ``source`` with a new GUID and ``bbox``; it is not selected."""
        obj = DocObject(
            self.new_guid(),
            source.object_type,
            source.layer,
            bbox,
            dict(source.geometry),
            source.name,
            dict(source.user_text),
            source.visible,
            source.locked,
            False,
            source.color,
        )
        self.objects[obj.guid] = obj
        return obj

    def delete(self, guid: str) -> None:
        """Remove an object and its group memberships (empty groups disappear)."""
        del self.objects[guid]
        for name in list(self.groups):
            members = [g for g in self.groups[name] if g != guid]
            if members:
                self.groups[name] = members
            else:
                del self.groups[name]

    def clear(self) -> None:
        """Start a new empty document (the GUID generator keeps its state)."""
        self.objects.clear()
        self.layers.clear()
        self.groups.clear()
        self.named_views.clear()
        self.path = None
        self.current_layer = DEFAULT_LAYER
        self.add_layer(DEFAULT_LAYER)
        self.views = standard_views()
        self.active_view = "Perspective"


def standard_views() -> dict[str, dict[str, Any]]:
    """Rhino's four default viewports; ``projection`` drives the headless capture."""
    return {
        "Perspective": {"display_mode": "Wireframe", "projection": "perspective"},
        "Top": {"display_mode": "Wireframe", "projection": "top"},
        "Front": {"display_mode": "Wireframe", "projection": "front"},
        "Right": {"display_mode": "Wireframe", "projection": "right"},
    }
