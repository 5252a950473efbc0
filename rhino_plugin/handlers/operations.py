"""``operations.boolean_*`` on bounding boxes.

Every solid is its axis-aligned box, so the Booleans are box algebra:

- union: the box enclosing all inputs;
- intersection: the common overlap, OPERATION_FAILED when the inputs share no volume;
- difference: each target box is kept (as a new object) unless the cutters' overlap removes all
  of it, which is OPERATION_FAILED, as Rhino returns no result for an empty difference.

Only solids (type ``Brep``) take part; a curve or point input is OPERATION_FAILED. With
``delete_input`` (default true, as in Rhino) the inputs are removed.
"""

from __future__ import annotations

from typing import Any, Optional

from golem_core.dispatcher import Handler
from golem_core.errors import InvalidParams, OperationFailed

from ..document import DocObject, Document
from ..geometry import BoundingBox
from ..params import opt_bool, req_guid_list
from .common import created

__all__ = ["OperationHandlers"]

Params = dict[str, Any]


class OperationHandlers:
    """Boolean operations over one `Document`."""

    def __init__(self, document: Document) -> None:
        self.doc = document

    def table(self) -> dict[str, Handler]:
        """Method name → handler."""
        return {
            "operations.boolean_union": self.boolean_union,
            "operations.boolean_intersection": self.boolean_intersection,
            "operations.boolean_difference": self.boolean_difference,
        }

    def _solids(self, params: Params, names: tuple[str, ...], minimum: int) -> list[DocObject]:
        name, guids = req_guid_list(params, names)
        objects = self.doc.get_all(guids)
        if len(objects) < minimum:
            raise InvalidParams(
                f"Parameter '{name}' needs at least {minimum} distinct GUIDs.", name
            )
        for obj in objects:
            if obj.object_type != "Brep":
                raise OperationFailed(
                    f"Object {obj.guid} is a {obj.object_type}, not a solid.", {"guid": obj.guid}
                )
        return objects

    def _finish(
        self, params: Params, inputs: list[DocObject], boxes: list[tuple[DocObject, BoundingBox]]
    ) -> dict[str, Any]:
        results = [self.doc.copy_object(source, box) for source, box in boxes]
        for obj in results:
            obj.geometry = {"kind": "boolean_result", "sources": [o.guid for o in inputs]}
        if opt_bool(params, "delete_input", True):
            for obj in inputs:
                self.doc.delete(obj.guid)
        return {
            "count": len(results),
            "guids": [o.guid for o in results],
            "objects": [created(o) for o in results],
        }

    def boolean_union(self, params: Params) -> dict[str, Any]:
        objects = self._solids(params, ("guids", "ids"), 2)
        box = objects[0].bbox
        for obj in objects[1:]:
            box = box.union(obj.bbox)
        return self._finish(params, objects, [(objects[0], box)])

    def boolean_intersection(self, params: Params) -> dict[str, Any]:
        objects = self._solids(params, ("guids", "ids"), 2)
        box: Optional[BoundingBox] = objects[0].bbox
        for obj in objects[1:]:
            box = box.intersection(obj.bbox) if box is not None else None
        if box is None:
            raise OperationFailed("Boolean intersection failed: the objects do not overlap.")
        return self._finish(params, objects, [(objects[0], box)])

    def boolean_difference(self, params: Params) -> dict[str, Any]:
        targets = self._solids(params, ("target_guids", "guids", "ids"), 1)
        cutters = self._solids(params, ("cutter_guids",), 1)
        shared = {o.guid for o in targets} & {o.guid for o in cutters}
        if shared:
            raise InvalidParams(
                "An object cannot be both a target and a cutter.",
                "cutter_guids",
                {"guids": sorted(shared)},
            )
        kept: list[tuple[DocObject, BoundingBox]] = []
        for target in targets:
            if any(cutter.bbox.contains(target.bbox) for cutter in cutters):
                raise OperationFailed(
                    f"Boolean difference failed: the cutters remove all of {target.guid}.",
                    {"guid": target.guid},
                )
            kept.append((target, target.bbox))
        return self._finish(params, targets + cutters, kept)
