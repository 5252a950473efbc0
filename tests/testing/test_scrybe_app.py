"""The stand-in app alone: its semantics and its contract replies (no proxy)."""

from __future__ import annotations

import json
from typing import Any

from golem_proxy.testing.scrybe_app import ScrybeApp
from golem_proxy.testing.scrybe_session import DISK, SESSION


def reply(app: ScrybeApp, line: bytes) -> dict[str, Any]:
    raw = app.respond(line)
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    obj: dict[str, Any] = json.loads(raw)
    return obj


def call(app: ScrybeApp, method: str, **params: Any) -> dict[str, Any]:
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    return reply(app, line.encode())


def test_the_session_exercises_every_method_and_app_error() -> None:
    app = ScrybeApp(dict(DISK))
    codes = set()
    methods = set()
    for method, params in SESSION:
        out = call(app, method, **params)
        methods.add(method)
        if "error" in out:
            codes.add(out["error"]["code"])
    assert {-32001, -32002, -32004, -32005, -32601, -32602} <= codes
    assert len(methods - {"no_such_method"}) == 15
    assert app.quit_requested


def test_edit_section_find_and_save_semantics() -> None:
    app = ScrybeApp(dict(DISK))
    assert call(app, "open", path="/notes/a.md")["result"] == {"tab_id": 1, "reloaded": False}
    section = call(app, "section", path="/notes/a.md", heading="USAGE")["result"]
    assert section == {"heading": "Usage", "level": 2, "content": "## Usage\n\nrun it\n"}
    edited = call(app, "edit", path="/notes/a.md", start_line=3, end_line=3, content="hello")
    assert edited["result"]["is_dirty"] is True
    hits = call(app, "find", pattern="hel+o")["result"]["hits"]
    assert hits == [{"path": "/notes/a.md", "line": 3, "column": 1, "text": "hello"}]
    saved = call(app, "save", path="/notes/a.md")["result"]
    assert saved["was_dirty"] is True and "hello" in app.disk["/notes/a.md"]
    assert call(app, "close", path="/nope")["result"] == {"applied": False}


def test_unparseable_and_invalid_requests() -> None:
    app = ScrybeApp()
    assert reply(app, b"{not json")["id"] == 0
    assert reply(app, b"{not json")["error"]["code"] == -32700
    assert reply(app, b"\xff")["error"]["code"] == -32700
    bad = reply(app, b'{"jsonrpc":"1.0","id":7,"method":"state"}')
    assert bad["id"] == 7 and bad["error"]["code"] == -32600
    assert call(app, "view_mode", mode="sideways")["error"]["code"] == -32602
    assert call(app, "set_vim", enabled="yes")["error"]["code"] == -32602
