"""A stand-in Scrybe app: the 0.6 method table with small real semantics over in-memory tabs
and an in-memory "disk", answering NDJSON JSON-RPC 2.0 on a Unix socket.

It is written from the contract alone (no golem_core), so that tests through the proxy compare
golem-proxy's reading of the contract with an independent one. `ScrybeApp.respond` is the pure
part (one request line in, one reply line out); `AppServer` puts it, or a misbehaving fixed
reply, on a socket.
"""

from __future__ import annotations

import builtins
import json
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

ERR_PARSE = -32700
ERR_INVALID_REQUEST = -32600
ERR_METHOD_NOT_FOUND = -32601
ERR_INVALID_PARAMS = -32602
ERR_INTERNAL = -32603
ERR_TAB_NOT_OPEN = -32001
ERR_DIRTY_QUIT_REFUSED = -32002
ERR_SECTION_NOT_FOUND = -32004
ERR_DIRTY_RELOAD_REFUSED = -32005

VIEW_MODES = ("both", "edit", "preview")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")


class AppError(Exception):
    """An in-band error: becomes ``{"error": {"code", "message"}}``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Tab:
    path: str
    content: str
    tab_id: int
    dirty: bool = False

    @property
    def title(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass
class ScrybeApp:
    """The app's state and method table. ``disk`` maps paths to file contents."""

    disk: dict[str, str] = field(default_factory=dict)
    tabs: dict[str, Tab] = field(default_factory=dict)
    active: Optional[str] = None
    theme: str = "dark"
    vim: bool = False
    wrap: bool = True
    view: str = "both"
    quit_requested: bool = False
    log: deque[str] = field(default_factory=lambda: deque(maxlen=200))
    _next_tab: int = 1

    def respond(self, line: bytes) -> bytes:
        """The reply line (with its newline) for one request line (without it)."""
        return (json.dumps(self.reply_object(line), separators=(",", ":")) + "\n").encode()

    def reply_object(self, line: bytes) -> dict[str, Any]:
        try:
            request = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            # The wire type has no null id: an unreadable request is answered with id 0.
            return _error(0, ERR_PARSE, f"parse error: {exc}")
        ident = request.get("id") if isinstance(request, dict) else None
        valid_id = isinstance(ident, int) and not isinstance(ident, bool) and ident >= 0
        number: Optional[int] = ident if valid_id else None
        if (
            not isinstance(request, dict)
            or request.get("jsonrpc") != "2.0"
            or number is None
            or not isinstance(request.get("method"), str)
        ):
            return _error(number or 0, ERR_INVALID_REQUEST, "invalid request")
        ident = number
        method = request["method"]
        handler: Optional[Callable[[Params], dict[str, Any]]] = getattr(self, f"m_{method}", None)
        if handler is None:
            return _error(ident, ERR_METHOD_NOT_FOUND, f"method not found: {method}")
        params = request.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return _error(ident, ERR_INVALID_PARAMS, "params must be an object")
        self.log.append(f"rpc {method}")
        try:
            return {"jsonrpc": "2.0", "id": ident, "result": handler(Params(params))}
        except AppError as exc:
            return _error(ident, exc.code, exc.message)

    def m_open(self, p: Params) -> dict[str, Any]:
        path = p.str("path")
        tab = self.tabs.get(path)
        reloaded = tab is not None
        if tab is None:
            tab = self.tabs[path] = Tab(path, self.disk.get(path, ""), self._next_tab)
            self._next_tab += 1
        elif not tab.dirty:
            tab.content = self.disk.get(path, tab.content)
        self.active = path
        return {"tab_id": tab.tab_id, "reloaded": reloaded}

    def m_save(self, p: Params) -> dict[str, Any]:
        tab = self._tab(p.str("path"))
        was_dirty = tab.dirty
        self.disk[tab.path] = tab.content
        tab.dirty = False
        return {"path": tab.path, "bytes": len(tab.content.encode()), "was_dirty": was_dirty}

    def m_read(self, p: Params) -> dict[str, Any]:
        tab = self._tab(p.str("path"))
        return {"path": tab.path, "content": tab.content, "is_dirty": tab.dirty}

    def m_find(self, p: Params) -> dict[str, Any]:
        pattern = p.str("pattern")
        paths = p.str_list("paths") or list(self.tabs)
        literal = p.bool("literal", False)
        flags = 0 if p.bool("case_sensitive", True) else re.IGNORECASE
        try:
            regex = re.compile(re.escape(pattern) if literal else pattern, flags)
        except re.error as exc:
            raise AppError(ERR_INVALID_PARAMS, f"bad pattern: {exc}") from None
        hits = []
        for path in paths:
            tab = self.tabs.get(path)
            content = tab.content if tab is not None else self.disk.get(path, "")
            for number, text in enumerate(content.split("\n"), 1):
                match = regex.search(text)
                if match:
                    hits.append(
                        {"path": path, "line": number, "column": match.start() + 1, "text": text}
                    )
        return {"hits": hits}

    def m_section(self, p: Params) -> dict[str, Any]:
        tab = self._tab(p.str("path"))
        wanted = p.str("heading").lower()
        lines = tab.content.split("\n")
        for start, text in enumerate(lines):
            match = _HEADING.match(text)
            if match and wanted in match.group(2).lower():
                level = len(match.group(1))
                end = start + 1
                while end < len(lines):
                    other = _HEADING.match(lines[end])
                    if other and len(other.group(1)) <= level:
                        break
                    end += 1
                content = "\n".join(lines[start:end])
                return {"heading": match.group(2), "level": level, "content": content}
        raise AppError(ERR_SECTION_NOT_FOUND, f"no section matches {wanted!r}")

    def m_edit(self, p: Params) -> dict[str, Any]:
        tab = self._tab(p.str("path"))
        start, end = p.int("start_line"), p.int("end_line")
        content = p.str("content")
        lines = tab.content.split("\n")
        if not 1 <= start <= end + 1 or end > len(lines):
            raise AppError(ERR_INVALID_PARAMS, f"lines {start}..{end} out of range")
        lines[start - 1 : end] = content.split("\n")
        tab.content = "\n".join(lines)
        tab.dirty = True
        return {"applied": True, "size_after": len(tab.content.encode()), "is_dirty": True}

    def m_list_tabs(self, p: Params) -> dict[str, Any]:
        tabs = [
            {
                "path": tab.path,
                "title": tab.title,
                "is_dirty": tab.dirty,
                "view_mode": self.view,
                "active": tab.path == self.active,
            }
            for tab in self.tabs.values()
        ]
        return {"tabs": tabs}

    def m_reload(self, p: Params) -> dict[str, Any]:
        tab = self._tab(p.str("path"))
        was_dirty = tab.dirty
        if was_dirty and not p.bool("force", False):
            raise AppError(ERR_DIRTY_RELOAD_REFUSED, f"{tab.path} has unsaved changes")
        tab.content = self.disk.get(tab.path, "")
        tab.dirty = False
        return {"path": tab.path, "bytes": len(tab.content.encode()), "was_dirty": was_dirty}

    def m_close(self, p: Params) -> dict[str, Any]:
        # Not-open collapses to applied: false (contract, close row).
        closed = self.tabs.pop(p.str("path"), None)
        if closed is not None and self.active == closed.path:
            self.active = next(iter(self.tabs), None)
        return {"applied": closed is not None}

    def m_quit(self, p: Params) -> dict[str, Any]:
        if any(tab.dirty for tab in self.tabs.values()) and not p.bool("force", False):
            raise AppError(ERR_DIRTY_QUIT_REFUSED, "unsaved tabs")
        self.quit_requested = True
        return {"applied": True}

    def m_state(self, p: Params) -> dict[str, Any]:
        tab = self.tabs.get(self.active) if self.active else None
        return {
            "active_path": tab.path if tab else None,
            "active_title": tab.title if tab else None,
            "is_dirty": tab.dirty if tab else False,
            "view_mode": self.view,
            "theme": self.theme,
            "vim": self.vim,
            "wrap": self.wrap,
            "open_paths": list(self.tabs),
        }

    def m_set_theme(self, p: Params) -> dict[str, Any]:
        self.theme = p.str("theme")
        return {"theme": self.theme}

    def m_view_mode(self, p: Params) -> dict[str, Any]:
        mode = p.str("mode")
        if mode == "cycle":
            mode = VIEW_MODES[(VIEW_MODES.index(self.view) + 1) % len(VIEW_MODES)]
        elif mode not in VIEW_MODES:
            raise AppError(ERR_INVALID_PARAMS, f"unknown view mode {mode!r}")
        self.view = mode
        return {"mode": mode}

    def m_set_vim(self, p: Params) -> dict[str, Any]:
        self.vim = p.bool("enabled")
        return {"enabled": self.vim}

    def m_logs(self, p: Params) -> dict[str, Any]:
        tail = p.int("tail", len(self.log))
        lines = list(self.log)
        return {"lines": lines[-tail:] if tail else []}

    def _tab(self, path: str) -> Tab:
        tab = self.tabs.get(path)
        if tab is None:
            raise AppError(ERR_TAB_NOT_OPEN, f"{path} is not open")
        return tab


_REQUIRED: Any = object()


class Params:
    """Typed access to a params object; a missing or mistyped member is ERR_INVALID_PARAMS."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw

    def _get(self, name: str, default: Any, check: Callable[[Any], bool], what: str) -> Any:
        value = self.raw.get(name)
        if value is None:
            if default is _REQUIRED:
                raise AppError(ERR_INVALID_PARAMS, f"missing field `{name}`")
            return default
        if not check(value):
            raise AppError(ERR_INVALID_PARAMS, f"`{name}` must be {what}")
        return value

    def str(self, name: str, default: Any = _REQUIRED) -> Any:
        return self._get(name, default, lambda v: isinstance(v, str), "a string")

    def int(self, name: builtins.str, default: Any = _REQUIRED) -> Any:
        return self._get(
            name, default, lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"
        )

    def bool(self, name: builtins.str, default: Any = _REQUIRED) -> Any:
        return self._get(name, default, lambda v: isinstance(v, bool), "a boolean")

    def str_list(self, name: builtins.str) -> Any:
        return self._get(
            name,
            [],
            lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v),
            "a list of strings",
        )


def _error(ident: int, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}
