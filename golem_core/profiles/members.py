"""The small pieces every profile reads and words a JSON message's members with: a request id
as a pairing key (`id_key`) and whether it is a valid one (`id_is_valid`), a member's path
(`path_of`), a value's JSON kind in words (`json_type_name`, `mistyped`), and an error object
(`error_object`).

Apart from base.py, which says what a profile is, because these are plain functions of JSON
values that the profiles, the method catalogue and the proxy call alike.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from ..messages import is_json_int, kind_of

__all__ = [
    "error_object",
    "id_is_valid",
    "id_key",
    "json_type_name",
    "mistyped",
    "path_of",
]

_SIMPLE_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def id_key(ident: Any) -> Optional[tuple[str, Any]]:
    """A request id as a hashable key (`Profile.correlation_key`), or None for no usable id:
    ``1`` and ``"1"`` are different keys, as on the wire; ``true`` is no id."""
    if isinstance(ident, bool) or not isinstance(ident, (str, int)):
        return None
    return (type(ident).__name__, ident)


def path_of(*parts: Any) -> str:
    """JSON path for display: ``path_of("params", "guids", 0)`` → ``$.params.guids[0]``."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _SIMPLE_KEY.match(part):
            out += f".{part}"
        else:
            out += f"[{part!r}]"
    return out


def id_is_valid(value: Any) -> bool:
    return isinstance(value, str) or is_json_int(value)


_ARTICLED_KINDS = {
    "null": "null",
    "boolean": "a boolean",
    "number": "a number",
    "string": "a string",
    "array": "an array",
    "object": "an object",
}


def json_type_name(value: Any) -> str:
    """How a decoded JSON value's kind (`kind_of`) reads in a message: ``null``, ``a number``,
    ``an object``, …"""
    return _ARTICLED_KINDS[kind_of(value)]


def error_object(code: Any, message: str, details: Any, details_key: str) -> dict[str, Any]:
    """An error object ``{code, message}``, with ``details`` under ``details_key`` (GOLEM's
    ``details``, JSON-RPC's ``data``) when there are any."""
    err: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        err[details_key] = details
    return err


def mistyped(name: str, value: Any, expected: str) -> str:
    """How every profile words a member of the wrong JSON kind: ``{name} is {kind}, not
    {expected}`` (``name`` as it should read, backquotes and all)."""
    return f"{name} is {json_type_name(value)}, not {expected}"
