"""The Scrybe 0.6 method table (contract § Methods), as data for the `jsonrpc-ndjson` checks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["COMMON_ERRORS", "METHODS", "MethodShape"]

# Param type tags: "str", "int", "bool", "list[str]", "enum:a|b|c".


@dataclass(frozen=True)
class MethodShape:
    required: Mapping[str, str]
    optional: Mapping[str, str]
    result_keys: tuple[str, ...]
    app_errors: tuple[str, ...] = ()
    reply_correlated: bool = True
    """All methods but close/quit wait for the frontend and may answer ERR_REPLY_TIMEOUT."""


def _m(
    required: Mapping[str, str],
    result: tuple[str, ...],
    optional: Mapping[str, str] = {},
    errors: tuple[str, ...] = (),
    correlated: bool = True,
) -> MethodShape:
    return MethodShape(
        MappingProxyType(dict(required)),
        MappingProxyType(dict(optional)),
        result,
        errors,
        correlated,
    )


METHODS: Mapping[str, MethodShape] = MappingProxyType(
    {
        "open": _m({"path": "str"}, ("tab_id", "reloaded")),
        "save": _m({"path": "str"}, ("path", "bytes", "was_dirty"), errors=("ERR_TAB_NOT_OPEN",)),
        "read": _m({"path": "str"}, ("path", "content", "is_dirty"), errors=("ERR_TAB_NOT_OPEN",)),
        "find": _m(
            {"pattern": "str"},
            ("hits",),
            {"paths": "list[str]", "literal": "bool", "case_sensitive": "bool"},
        ),
        "section": _m(
            {"path": "str", "heading": "str"},
            ("heading", "level", "content"),
            errors=("ERR_TAB_NOT_OPEN", "ERR_SECTION_NOT_FOUND"),
        ),
        "edit": _m(
            {"path": "str", "start_line": "int", "end_line": "int", "content": "str"},
            ("applied", "size_after", "is_dirty"),
            errors=("ERR_TAB_NOT_OPEN",),
        ),
        "list_tabs": _m({}, ("tabs",)),
        "reload": _m(
            {"path": "str"},
            ("path", "bytes", "was_dirty"),
            {"force": "bool"},
            ("ERR_TAB_NOT_OPEN", "ERR_DIRTY_RELOAD_REFUSED"),
        ),
        "close": _m({"path": "str"}, ("applied",), correlated=False),
        "quit": _m({}, ("applied",), {"force": "bool"}, ("ERR_DIRTY_QUIT_REFUSED",), False),
        "state": _m(
            {},
            (
                "active_path",
                "active_title",
                "is_dirty",
                "view_mode",
                "theme",
                "vim",
                "wrap",
                "open_paths",
            ),
        ),
        "set_theme": _m({"theme": "str"}, ("theme",)),
        "view_mode": _m({"mode": "enum:both|edit|preview|cycle"}, ("mode",)),
        "set_vim": _m({"enabled": "bool"}, ("enabled",)),
        "logs": _m({}, ("lines",), {"tail": "int"}),
    }
)

COMMON_ERRORS: tuple[str, ...] = ("ERR_INVALID_PARAMS", "ERR_METHOD_NOT_FOUND", "ERR_INTERNAL")
