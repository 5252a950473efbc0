"""A trace recorded with ``--redact`` in the replay engine, without sockets: a recorded
``«redacted»`` is a wildcard, and no miss message holds a live value it stood for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from golem_proxy.live.redact import REDACTED, REDACTED_ESCAPED
from golem_proxy.replay.engine import summary
from golem_proxy.replay.redacted_values import wildcard_match
from golem_proxy.replay.setup import ReplayOptions, build_engine
from tests.support.traces import TraceBuilder

from .test_engine import answer


@pytest.mark.parametrize(
    ("recorded", "live", "found"),
    [
        ({"name": REDACTED, "n": 1}, {"name": "Walls-SECRET", "n": 1.0}, ["Walls-SECRET"]),
        ({"name": REDACTED}, {"name": {"nested": ["x-SECRET"]}}, ["x-SECRET"]),  # any type
        ({"code": f"print('{REDACTED}')"}, {"code": "print('SECRET')"}, ["SECRET"]),
        ({"text": f"a {REDACTED_ESCAPED} b"}, {"text": "a SECRET b"}, ["SECRET"]),
        ({"code": f"print('{REDACTED}')"}, {"code": "exec('SECRET')"}, None),
        ({"name": REDACTED, "n": 1}, {"name": "x", "n": 2}, None),
        ({"name": REDACTED}, {"name": "x", "more": 1}, None),
        ([REDACTED, 1], ["SECRET", 1, 2], None),
    ],
)
def test_wildcard_match(recorded: Any, live: Any, found: Any) -> None:
    assert wildcard_match(recorded, live) == found


def redacted_trace(path: Path) -> Path:
    """Two GOLEM requests whose values an MCP rule's echo replaced."""
    with TraceBuilder.create(str(path)) as trace:
        trace.call(
            "scene.create_layer", {"name": REDACTED, "visible": True}, {"full_path": REDACTED}
        )
        trace.call("scripting.execute_python", {"code": f"print('{REDACTED}')"}, {"ok": True})
    lines = path.read_bytes().split(b"\n", 1)
    header = json.loads(lines[0])
    header["redact"] = ["tools/call:params.arguments.name"]
    path.write_bytes(json.dumps(header).encode() + b"\n" + lines[1])
    return path


def test_a_redacted_value_matches_and_no_miss_says_the_live_one(tmp_path: Path) -> None:
    engine = build_engine([str(redacted_trace(tmp_path / "t.jsonl"))], ReplayOptions())
    served = answer(engine, "scene.create_layer", {"name": "Walls-SECRET", "visible": True})
    assert served["result"] == {"full_path": REDACTED}
    code = answer(engine, "scripting.execute_python", {"code": "print('Other-PRIVATE')"})
    assert code["result"] == {"ok": True}
    assert engine.report.redacted_matches == 2
    # Misses: the name again (known now), a value that does not fit the recorded text, and
    # another param differing: the message names the place, never the live value.
    again = answer(engine, "scene.create_layer", {"name": "Walls-SECRET", "visible": False})
    unfit = answer(engine, "scripting.execute_python", {"code": "exec('New-HIDDEN')"})
    messages = [again["error"]["message"], unfit["error"]["message"]]
    assert "differs at params.visible (true vs false)" in messages[0]
    assert f"differs at params.code (\"print('{REDACTED}')\" vs '{REDACTED}')" in messages[1]
    report = json.dumps(summary(engine), ensure_ascii=False)
    for secret in ("SECRET", "PRIVATE", "HIDDEN"):
        assert secret not in report and all(secret not in text for text in messages)
