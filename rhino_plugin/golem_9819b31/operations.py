"""``operations.*`` of golem-3dmcp@9819b31 (``handlers/operations.py``).

Wrapped: failures are error dicts inside a success envelope. Inputs are checked the real way
(``_require(params, key, str)``, the GUID registry, ``rs.coerce*``); the geometry is the
headless document's boxes: a union is the enclosing box, an intersection the overlap, a
difference keeps the target unless a cutter covers it, and a boolean of disjoint solids fails
with the real OPERATION_FAILED message.
"""

from __future__ import annotations

from typing import Any

from ..geometry import BoundingBox
from .kit import (
    GolemFailure,
    Params,
    list_param,
    validate_guid_or_key_error,
)
from .operations_kit import (
    BREP_CLASSES,
    OperationsBase,
    typed_param_or_value_error,
)
from .serialize import serialize_brep

__all__ = ["OperationHandlers"]


class OperationHandlers(OperationsBase):
    """``operations.*`` Booleans, trims and splits."""

    def boolean_union(self, p: Params) -> dict[str, Any]:
        guids = list_param(p, "guids")
        if len(guids) < 2:
            raise ValueError("boolean_union requires at least 2 GUIDs.")
        breps = [self._brep(g) for g in guids]
        if not _connected([b.bbox for b in breps]):
            raise GolemFailure(
                "OPERATION_FAILED",
                "Boolean union failed -- check that all objects are valid, closed Breps "
                "and that they actually intersect.",
            )
        bbox = breps[0].bbox
        for brep in breps[1:]:
            bbox = bbox.union(brep.bbox)
        self._delete(*breps)
        return self._breps_result([self._solid(bbox)])

    def boolean_difference(self, p: Params) -> dict[str, Any]:
        guid_a = typed_param_or_value_error(p, "guid_a", str)
        guids_b = list_param(p, "guids_b")
        if len(guids_b) == 0:
            raise ValueError("guids_b must contain at least one GUID.")
        target = self._brep(guid_a)
        cutters = [self._brep(g) for g in guids_b]
        if not any(target.bbox.intersection(c.bbox) for c in cutters) or any(
            c.bbox.contains(target.bbox) for c in cutters
        ):
            raise GolemFailure(
                "OPERATION_FAILED",
                "Boolean difference failed -- ensure the cutter actually intersects "
                "the target and both are valid closed Breps.",
            )
        self._delete(target, *cutters)
        return self._breps_result([self._solid(target.bbox, faces=7)])

    def boolean_intersection(self, p: Params) -> dict[str, Any]:
        guids_a = list_param(p, "guids_a")
        guids_b = list_param(p, "guids_b")
        if len(guids_a) == 0 or len(guids_b) == 0:
            raise ValueError("guids_a and guids_b must each contain at least one GUID.")
        breps_a = [self._brep(g) for g in guids_a]
        breps_b = [self._brep(g) for g in guids_b]
        overlaps = [a.bbox.intersection(b.bbox) for a in breps_a for b in breps_b]
        found = [box for box in overlaps if box is not None]
        if not found:
            raise GolemFailure(
                "OPERATION_FAILED",
                "Boolean intersection failed -- the Breps may not intersect or may be "
                "geometrically invalid.",
            )
        self._delete(*breps_a, *breps_b)
        return self._breps_result([self._solid(box) for box in found])

    def boolean_split(self, p: Params) -> dict[str, Any]:
        guid = typed_param_or_value_error(p, "guid_to_split", str)
        cutter_guid = typed_param_or_value_error(p, "guid_cutter", str)
        target, cutter = self._brep(guid), self._brep(cutter_guid)
        pieces = self._split_boxes(target.bbox, cutter.bbox)
        if not pieces:
            raise GolemFailure(
                "OPERATION_FAILED",
                "Boolean split failed -- ensure the cutter intersects the target Brep.",
            )
        self._delete(target, cutter)
        return self._breps_result([self._solid(box) for box in pieces])

    def _split_boxes(self, target: BoundingBox, cutter: BoundingBox) -> list[BoundingBox]:
        """The part of ``target`` inside ``cutter`` and the rest (as its box)."""
        inside = target.intersection(cutter)
        if inside is None or cutter.contains(target):
            return []
        return [inside, target]

    def trim(self, p: Params) -> dict[str, Any]:
        object_id = typed_param_or_value_error(p, "object_id", str)
        cutter_id = typed_param_or_value_error(p, "cutter_id", str)
        pick = typed_param_or_value_error(p, "pick_point")
        if not isinstance(pick, (list, tuple)) or len(pick) < 3:
            raise ValueError("pick_point must be a list of three numbers [x, y, z].")
        (float(pick[0]), float(pick[1]), float(pick[2]))
        target, cutter = self._brep(object_id), self._brep(cutter_id)
        pieces = self._split_boxes(target.bbox, cutter.bbox)
        if not pieces:
            raise GolemFailure(
                "OPERATION_FAILED", "Trim failed -- the cutter may not intersect the target."
            )
        self._delete(target)
        kept = self._solid(pieces[-1])
        return {"guids": [kept.guid], "count": 1, "object": serialize_brep(kept)}

    def split(self, p: Params) -> dict[str, Any]:
        object_id = typed_param_or_value_error(p, "object_id", str)
        cutter_ids = list_param(p, "cutter_ids")
        if len(cutter_ids) == 0:
            raise ValueError("cutter_ids must contain at least one GUID.")
        target = validate_guid_or_key_error(self.doc, object_id)
        cutters = [validate_guid_or_key_error(self.doc, c) for c in cutter_ids]
        pieces = self._split_boxes(target.bbox, cutters[0].bbox)
        if target.object_type not in BREP_CLASSES or not pieces:
            raise GolemFailure(
                "OPERATION_FAILED",
                "Split failed -- the cutters may not intersect the target Brep.",
            )
        self._delete(target)
        return self._breps_result([self._solid(box) for box in pieces])


def _connected(boxes: list[BoundingBox]) -> bool:
    """True when every box overlaps the group formed by the others (one solid results)."""
    group = [boxes[0]]
    rest = list(boxes[1:])
    while rest:
        joined = [b for b in rest if any(b.intersection(g) for g in group)]
        if not joined:
            return False
        group.extend(joined)
        rest = [b for b in rest if b not in joined]
    return True
