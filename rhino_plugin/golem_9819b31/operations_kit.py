"""What the two ``operations.*`` handler classes of golem-3dmcp@9819b31 share: the real
module's parameter checks (``_require(params, key, str)``, vectors), its Brep and Curve
coercion, and how a result is added and reported."""

from __future__ import annotations

import math
from typing import Any, Optional

from ..document import DocObject, Document
from ..geometry import BoundingBox
from .kit import (
    GolemFailure,
    Params,
    Point,
    add_object,
    validate_guid_or_key_error,
)
from .serialize import serialize_brep, serialize_curve

__all__ = ["BREP_CLASSES", "OperationsBase", "typed_param_or_value_error", "vector_or_value_error"]

BREP_CLASSES = ("Brep", "Extrusion", "Surface")


def typed_param_or_value_error(params: Params, key: str, expected: Optional[type] = None) -> Any:
    """The real ``_require``: ``params[key]``; raises ValueError when it is missing or not an
    ``expected``."""
    if key not in params:
        raise ValueError(f"Required parameter '{key}' is missing.")
    value = params[key]
    if expected is not None and not isinstance(value, expected):
        raise ValueError(
            f"Parameter '{key}' must be a {expected.__name__} (got {type(value).__name__})."
        )
    return value


def vector_or_value_error(raw: Any, message: str) -> Point:
    """``raw`` as an ``(x, y, z)``; raises ValueError(``message``) when it is not a list of 3."""
    if not isinstance(raw, (list, tuple)) or len(raw) < 3:
        raise ValueError(message)
    return (float(raw[0]), float(raw[1]), float(raw[2]))


class OperationsBase:
    """The document, and the coercions and result builders both handler classes use."""

    def __init__(self, document: Document) -> None:
        self.doc = document

    def _brep(self, guid: Any) -> DocObject:
        obj = validate_guid_or_key_error(self.doc, guid)
        if obj.object_type not in BREP_CLASSES:
            raise GolemFailure("INVALID_PARAMS", f"Object '{guid}' is not a Brep.")
        return obj

    def _curve(self, guid: Any) -> DocObject:
        obj = validate_guid_or_key_error(self.doc, guid)
        if obj.object_type != "Curve":
            raise GolemFailure("INVALID_PARAMS", f"Object '{guid}' is not a Curve.")
        return obj

    def _new(self, rhino_class: str, kind: str, bbox: BoundingBox, **data: Any) -> DocObject:
        # The real handlers add results without attributes (sc.doc.Objects.AddBrep(brep),
        # rs.Add*): they land on the current layer, not on an input's.
        return add_object(self.doc, rhino_class, kind, bbox, **data)

    def _breps_result(self, objects: list[DocObject], key: str = "objects") -> dict[str, Any]:
        return {
            "guids": [o.guid for o in objects],
            "count": len(objects),
            key: [serialize_brep(o) for o in objects],
        }

    def _solid(self, bbox: BoundingBox, faces: int = 6) -> DocObject:
        (x0, y0, z0), (x1, y1, z1) = bbox.minimum, bbox.maximum
        return self._new(
            "Brep", "polysurface", bbox, faces=faces, edges=2 * faces, vertices=faces + 2,
            solid=True, volume=(x1 - x0) * (y1 - y0) * (z1 - z0),
        )  # fmt: skip

    def _delete(self, *objects: DocObject) -> None:
        for obj in objects:
            if obj.guid in self.doc.objects:
                self.doc.delete(obj.guid)

    def _curve_result(self, obj: DocObject) -> dict[str, Any]:
        return {"guid": obj.guid, "curve": serialize_curve(obj)}

    def _derived_curve(self, bbox: BoundingBox, **data: Any) -> DocObject:
        points = [list(bbox.minimum), list(bbox.maximum)]
        data.setdefault("points", points)
        data.setdefault("length", math.dist(bbox.minimum, bbox.maximum))
        kind = data.pop("kind", "nurbs")
        return self._new("Curve", kind, bbox, **data)
