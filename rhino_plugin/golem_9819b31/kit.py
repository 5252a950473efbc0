"""What every handler of the golem-3dmcp@9819b31 behaviour shares: the real handlers' ways of
reading parameters and of failing, GUID lookup, and adding objects to the headless document.

The real handlers cast with Python's own ``float()``/``int()``/``bool()``/``str()`` on
``params.get(key, default)``; they are written the same way here, so a bad value fails with
the same exception and message. Their failures come in three kinds, which the envelope then
shapes (see `envelope`): ValueError/TypeError/KeyError (the dispatcher calls them
INVALID_PARAMS), `GolemFailure` (the ``GolemError(code, message)`` of the wrapped modules) and
anything else (INTERNAL_ERROR; the real handlers raise RuntimeError when Rhino refuses).
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Callable, Optional, TypeVar

from ..document import DocObject, Document
from ..geometry import BoundingBox, Point

__all__ = [
    "FormatException",
    "GolemFailure",
    "Params",
    "Point",
    "add_object",
    "bbox_json",
    "check_faces",
    "dict_points",
    "find_object",
    "find_or_key_error",
    "find_or_none",
    "flat_point",
    "guid_or_value_error",
    "layer_path",
    "list_param",
    "opt_bool",
    "opt_float",
    "opt_int",
    "param_or_value_error",
    "parse_guid",
    "plane_origin",
    "pt3d",
    "read_origin",
    "read_points",
    "require_positive",
    "validate_guid_or_key_error",
]

Params = dict[str, Any]
Number = TypeVar("Number", int, float)


class GolemFailure(Exception):
    """The real ``utils.error_handler.GolemError``: a code, a message and optional details.
    Inside a wrapped handler it becomes the error dict of a success envelope."""

    def __init__(self, code: str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details is not None:
            error["details"] = self.details
        return error


class FormatException(Exception):
    """What .NET's ``System.Guid(text)`` raises for text that is not a GUID."""


_GUID_FORMAT = "Guid should contain 32 digits with 4 dashes (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)."
_HEX = frozenset("0123456789abcdef")


def parse_guid(text: Any) -> str:
    """``System.Guid(str(text))`` as a normalised lowercase string. Raises FormatException."""
    value = str(text).strip().strip("{}").lower()
    parts = value.split("-")
    if [len(p) for p in parts] != [8, 4, 4, 4, 12] or not set(value.replace("-", "")) <= _HEX:
        raise FormatException(_GUID_FORMAT)
    return value


def guid_or_value_error(text: Any) -> str:
    """`parse_guid` as the manipulation and scene handlers call it. Raises ValueError
    "Invalid GUID format: '…'"."""
    try:
        return parse_guid(text)
    except Exception:
        raise ValueError(f"Invalid GUID format: '{text}'") from None


def find_object(doc: Document, text: Any) -> DocObject:
    """``_find_object`` of the manipulation and scene handlers: raises ValueError for text
    that is not a GUID (`guid_or_value_error`), KeyError "Object not found in Rhino
    document: '…'" when no object has it."""
    obj = doc.objects.get(guid_or_value_error(text))
    if obj is None:
        raise KeyError(f"Object not found in Rhino document: '{text}'")
    return obj


def find_or_none(doc: Document, text: Any) -> Optional[DocObject]:
    """``sc.doc.Objects.FindId(System.Guid(text))``: the object or None. Raises
    FormatException for text that is not a GUID."""
    return doc.objects.get(parse_guid(text))


def validate_guid_or_key_error(doc: Document, text: Any) -> DocObject:
    """The registry's ``validate_guid`` then the lookup: raises KeyError "Object not found in
    Rhino document: '…'" (ValueError for None or a wrong length), as the real registry does."""
    if text is None:
        raise ValueError("GUID cannot be None")
    normalised = str(text).strip().strip("{}").lower()
    if len(normalised) != 36:
        raise ValueError(
            f"Invalid GUID format (expected 36 characters after stripping braces): '{text}'"
        )
    obj = doc.objects.get(normalised)
    if obj is None:
        raise KeyError(f"Object not found in Rhino document: '{text}'")
    return obj


def find_or_key_error(doc: Document, text: Any) -> DocObject:
    """``FindId`` that raises the KeyError the creation handlers raise for a missing object."""
    obj = find_or_none(doc, text)
    if obj is None:
        raise KeyError(f"Object not found in Rhino document: '{text}'")
    return obj


def param_or_value_error(params: Params, key: str) -> Any:
    """``params[key]``; a missing or null value raises ValueError as the real ``_req``."""
    value = params.get(key)
    if value is None:
        raise ValueError(f"Required parameter '{key}' is missing.")
    return value


def list_param(params: Params, key: str) -> list[Any]:
    """The operations module's ``_list_param``: present (null allowed) and a list/tuple."""
    if key not in params:
        raise ValueError(f"Required parameter '{key}' is missing.")
    value = params[key]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"Parameter '{key}' must be a list (got {type(value).__name__}).")
    return list(value)


def opt_float(params: Params, key: str, default: float) -> float:
    """``_optional_float``: default when absent or null, else float() or a ValueError."""
    return _optional(params, key, default, float, "a number")


def opt_int(params: Params, key: str, default: int) -> int:
    """``_optional_int``: default when absent or null, else int() or a ValueError."""
    return _optional(params, key, default, int, "an integer")


def _optional(
    params: Params, key: str, default: Number, cast: Callable[[Any], Number], kind: str
) -> Number:
    if params.get(key) is None:
        return default
    try:
        return cast(params[key])
    except (TypeError, ValueError):
        raise ValueError(f"Parameter '{key}' must be {kind}.") from None


def opt_bool(params: Params, key: str, default: bool) -> bool:
    """``_optional_bool``: default when absent or null, else bool()."""
    if params.get(key) is None:
        return default
    return bool(params[key])


def require_positive(**values: float) -> None:
    """Check each value is above zero, in the order given.

    Raises ValueError ``'NAME' must be > 0.`` for the first that is not."""
    for name, value in values.items():
        if value <= 0.0:
            raise ValueError(f"'{name}' must be > 0.")


def pt3d(raw: Any) -> Point:
    """The creation module's ``_pt3d``: ``[x, y, z]`` or ``{x, y, z}``. Raises ValueError."""
    if isinstance(raw, (list, tuple)):
        if len(raw) < 3:
            raise ValueError(f"Point list needs 3 elements, got {len(raw)}.")
        return (float(raw[0]), float(raw[1]), float(raw[2]))
    if isinstance(raw, dict):
        try:
            return (float(raw["x"]), float(raw["y"]), float(raw["z"]))
        except KeyError as exc:
            raise ValueError(f"Point dict missing key {exc}.") from None
    raise ValueError(f"Expected list or dict for point, got {type(raw).__name__!r}.")


def plane_origin(raw: Any) -> Point:
    """The origin of the creation module's ``_plane_param`` (a point list or a plane dict).
    The headless document keeps world-aligned boxes, so only the origin matters."""
    if raw is None:
        raise ValueError("Plane parameter is None.")
    if isinstance(raw, (list, tuple)):
        return pt3d(raw)
    if not isinstance(raw, dict):
        raise ValueError(f"Plane must be a dict, got {type(raw).__name__!r}.")
    return pt3d(raw.get("origin") or [0.0, 0.0, 0.0])


def layer_path(doc: Document, layer_name: Any) -> str:
    """``_resolve_layer_index``: the current layer for a falsy name, else the layer with that
    exact full path. Raises ValueError naming it."""
    if not layer_name:
        return doc.current_layer
    path = str(layer_name)
    if path not in doc.layers:
        raise ValueError(
            f"Layer not found: '{layer_name}'.  Create it first with scene.create_layer."
        )
    return path


def add_object(
    doc: Document,
    rhino_class: str,
    kind: str,
    bbox: BoundingBox,
    *,
    layer: Optional[str] = None,
    name: Any = None,
    color: Any = None,
    **data: Any,
) -> DocObject:
    """Add an object of RhinoCommon class ``rhino_class`` (``Brep``, ``Curve``, ``Mesh``, …)
    and geometry ``kind``; ``data`` is what the serializers report about it."""
    obj = doc.add_object(rhino_class, bbox, {"kind": kind, **data}, layer)
    if name:
        obj.name = str(name)
    if isinstance(color, (list, tuple)) and len(color) >= 3:
        # The real _apply_color swallows a bad colour.
        with contextlib.suppress(TypeError, ValueError):
            obj.color = (int(color[0]), int(color[1]), int(color[2]))
    return obj


def bbox_json(bbox: BoundingBox) -> dict[str, list[float]]:
    """``{"min": [x, y, z], "max": [x, y, z]}``."""
    return {"min": list(bbox.minimum), "max": list(bbox.maximum)}


def box_around(center: Point, rx: float, ry: float, rz: float) -> BoundingBox:
    """The axis-aligned box of half-sizes ``rx, ry, rz`` around ``center``."""
    return BoundingBox(
        (center[0] - rx, center[1] - ry, center[2] - rz),
        (center[0] + rx, center[1] + ry, center[2] + rz),
    )


def distance(a: Point, b: Point) -> float:
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


def flat_point(params: Params, prefix: str, default: Point = (0.0, 0.0, 0.0)) -> Point:
    """``float(params.get(prefix + "x", default))`` and so on: a flat point."""
    return (
        float(params.get(f"{prefix}x", default[0])),
        float(params.get(f"{prefix}y", default[1])),
        float(params.get(f"{prefix}z", default[2])),
    )


def dict_points(raw: Any, label: str) -> list[Point]:
    """Points as the creation.* handlers read them: ``pt.get("x", 0.0)`` on each item."""
    points = []
    for i, pt in enumerate(raw):
        try:
            points.append(
                (float(pt.get("x", 0.0)), float(pt.get("y", 0.0)), float(pt.get("z", 0.0)))
            )
        except Exception as exc:
            raise ValueError(f"Invalid {label} at index {i}: {exc}") from None
    return points


def read_points(raw: Any, label: str = "point") -> list[Point]:
    """Each item through `pt3d`; a bad one is ValueError "Invalid LABEL at index i: …"."""
    points = []
    for i, item in enumerate(raw):
        try:
            points.append(pt3d(item))
        except Exception as exc:
            raise ValueError(f"Invalid {label} at index {i}: {exc}") from None
    return points


def read_origin(params: Params, *keys: str, message: str) -> Point:
    """A location from ``plane`` (or ``base_plane``) or the first present of ``keys``."""
    for plane_key in ("plane", "base_plane"):
        if plane_key in keys and params.get(plane_key) is not None:
            return plane_origin(params[plane_key])
    for key in keys:
        if key not in ("plane", "base_plane") and key in params:
            return pt3d(params[key])
    raise ValueError(message)


def check_faces(raw_faces: Any, vertex_count: int, *, verbose: bool) -> None:
    """A mesh's faces: 3 or 4 vertex indices in range (``verbose``: geometry.create_mesh's
    longer messages). Raises ValueError."""
    for i, face in enumerate(raw_faces):
        if not isinstance(face, (list, tuple)) or len(face) not in (3, 4):
            if verbose:
                raise ValueError(f"Face {i} must have 3 or 4 vertex indices, got {face!r}.")
            raise ValueError(f"Face {i} must have 3 or 4 indices.")
        for position, index in enumerate(face):
            if int(index) < 0 or int(index) >= vertex_count:
                if verbose:
                    raise ValueError(
                        f"Face {i}: index {index} at pos {position} is out of range "
                        f"(max {vertex_count - 1})."
                    )
                raise ValueError(f"Face {i}: index {index} out of range.")
