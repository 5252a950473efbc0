"""Small helpers shared by several handler modules."""

from __future__ import annotations

from typing import Any, Optional

from golem_core.errors import InvalidParams

from ..document import DocObject

__all__ = ["created", "parse_color"]

Color = tuple[int, int, int]


def parse_color(params: dict[str, Any], name: str) -> Optional[Color]:
    """``params[name]`` as an RGB triple: ``[r, g, b]``, ``{"r", "g", "b"}`` (what the GOLEM
    MCP server sends; alpha ignored) or ``"#rrggbb"``, or None when absent. Raises
    InvalidParams naming the parameter when malformed."""
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, dict) and all(key in value for key in ("r", "g", "b")):
        value = [value["r"], value["g"], value["b"]]
    if isinstance(value, str) and len(value) == 7 and value.startswith("#"):
        try:
            return (int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16))
        except ValueError:
            pass
    elif (
        isinstance(value, list)
        and len(value) in (3, 4)
        and all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 255 for c in value)
    ):
        return (value[0], value[1], value[2])
    raise InvalidParams(
        f"Parameter '{name}' must be [r, g, b], {{r, g, b}} (0-255) or '#rrggbb'.", name
    )


def created(obj: DocObject) -> dict[str, Any]:
    """The result of a creation call: ``guid``, ``type`` and ``bounding_box``."""
    return {"guid": obj.guid, "type": obj.object_type, "bounding_box": obj.bbox.to_json()}
