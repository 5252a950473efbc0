"""The facts a method catalogue holds: per plugin method the params its handler reads (with
source lines, defaults, casts, accepted value shapes) and requires, per client method the tools
that send it, and the drift rows a request can produce. Plain frozen data; `catalogue` loads
and compares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from .messages import KINDS, kind_of

__all__ = [
    "KINDS",
    "Drift",
    "HandlerInfo",
    "ParamRead",
    "Requirement",
    "SentParam",
    "ToolInfo",
    "ValueShape",
    "handler_from_json",
    "kind_of",
    "listed",
    "mapping",
    "strings",
    "tool_from_json",
]


@dataclass(frozen=True)
class ValueShape:
    """The kinds a value may have and, for an object, the keys seen (None: not known)."""

    kinds: frozenset[str]
    keys: Optional[tuple[str, ...]] = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kinds": sorted(self.kinds)}
        if self.keys is not None:
            data["keys"] = list(self.keys)
        return data

    @classmethod
    def from_json(cls, data: Any) -> Optional[ValueShape]:
        if not isinstance(data, Mapping) or not isinstance(data.get("kinds"), list):
            return None
        keys = data.get("keys")
        return cls(
            frozenset(str(k) for k in data["kinds"]),
            tuple(str(k) for k in keys) if isinstance(keys, list) else None,
        )


@dataclass(frozen=True)
class ParamRead:
    """A param a handler reads. ``at`` is ``file:line`` of the first read ("" when unknown)."""

    name: str
    at: str = ""
    default: Any = None
    has_default: bool = False
    casts: tuple[str, ...] = ()
    accepts: Optional[ValueShape] = None
    via: tuple[str, ...] = ()
    """The helper functions the read goes through, outermost first."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"at": self.at}
        if self.has_default:
            data["default"] = self.default
        if self.casts:
            data["casts"] = list(self.casts)
        if self.accepts is not None:
            data["accepts"] = self.accepts.to_json()
        if self.via:
            data["via"] = list(self.via)
        return data

    @classmethod
    def from_json(cls, name: str, data: Mapping[str, Any]) -> ParamRead:
        return cls(
            name,
            str(data.get("at", "")),
            data.get("default"),
            "default" in data,
            strings(data.get("casts")),
            ValueShape.from_json(data.get("accepts")),
            strings(data.get("via")),
        )


@dataclass(frozen=True)
class Requirement:
    """The handler fails unless at least one of ``any_of`` is sent; a null value counts as
    sent only when ``null_ok`` (the handler tests the key's presence, not its value)."""

    any_of: tuple[str, ...]
    at: str = ""
    null_ok: bool = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"any_of": list(self.any_of), "at": self.at}
        if self.null_ok:
            data["null_ok"] = True
        return data


@dataclass(frozen=True)
class HandlerInfo:
    """What the plugin's handler of one method does with its params."""

    method: str
    at: str = ""
    reads: Optional[Mapping[str, ParamRead]] = None
    """None: the params read are not known (a names-only catalogue)."""
    reads_all_at: str = ""
    """Where the handler hands the whole params dict to code that cannot be followed: then
    any param may be read, and none is reported as unread."""
    required: tuple[Requirement, ...] = ()
    result_keys: Optional[tuple[str, ...]] = None


@dataclass(frozen=True)
class SentParam:
    """A param a client tool puts in its request, with its shape where the source shows it."""

    name: str
    at: str = ""
    shape: Optional[ValueShape] = None


@dataclass(frozen=True)
class ToolInfo:
    """A client tool and the request it builds."""

    tool: str
    method: str
    at: str
    params: Mapping[str, SentParam] = field(default_factory=dict)


@dataclass(frozen=True)
class Drift:
    """One disagreement between a request and the catalogue.

    ``kind``: ``unknown-method``, ``unread-param``, ``missing-required``, ``renamed-param`` or
    ``shape-mismatch``. ``param`` is the name sent (for missing-required: the names of which
    one is required, joined with ``|``); ``other`` the name the handler reads instead (renamed)
    or the shapes it accepts (shape-mismatch). ``at`` is the source line the row comes from and
    ``side`` whose source that is (``plugin`` or ``client``)."""

    kind: str
    method: str
    param: str = ""
    other: str = ""
    at: str = ""
    side: str = ""
    detail: str = ""


def handler_from_json(name: str, entry: Any) -> HandlerInfo:
    if not isinstance(entry, Mapping):
        return HandlerInfo(name)
    at = _at(entry.get("module"), entry.get("line"))
    details = entry.get("reads")
    params = entry.get("params")
    reads: Optional[dict[str, ParamRead]] = None
    if isinstance(details, Mapping):
        reads = {
            str(p): ParamRead.from_json(str(p), d if isinstance(d, Mapping) else {})
            for p, d in details.items()
        }
    elif isinstance(params, list):
        reads = {str(p): ParamRead(str(p)) for p in params}
    required = tuple(
        Requirement(
            tuple(str(p) for p in r["any_of"]), str(r.get("at", "")), bool(r.get("null_ok"))
        )
        for r in listed(entry.get("required"))
        if isinstance(r, Mapping) and isinstance(r.get("any_of"), list)
    )
    result = entry.get("result_keys")
    return HandlerInfo(
        name,
        at,
        reads,
        str(entry.get("reads_all_at") or ""),
        required,
        tuple(str(k) for k in result) if isinstance(result, list) else None,
    )


def tool_from_json(method: str, entry: Any) -> ToolInfo:
    if not isinstance(entry, Mapping):
        return ToolInfo("", method, "")
    params = {
        str(p): SentParam(str(p), str(d.get("at", "")), ValueShape.from_json(d.get("shape")))
        for p, d in mapping(entry.get("params")).items()
        if isinstance(d, Mapping)
    }
    return ToolInfo(str(entry.get("tool", "")), method, str(entry.get("at", "")), params)


def _at(module: Any, line: Any) -> str:
    if not module:
        return ""
    return f"{module}:{line}" if isinstance(line, int) else str(module)


# A catalogue file may come from anyone: a member of the wrong type reads as empty.


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def listed(value: Any) -> list[Any]:
    """``value`` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def strings(value: Any) -> tuple[str, ...]:
    """The items of a JSON array as strings (empty for anything else)."""
    return tuple(str(item) for item in listed(value))
