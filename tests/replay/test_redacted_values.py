"""A trace recorded with ``--redact`` in the replay engine, without sockets: a recorded
``«redacted»`` is a wildcard, and no miss message holds a live value it stood for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from golem_proxy.live.redact import REDACTED, REDACTED_ESCAPED
from golem_proxy.replay.call_scope import CallRef, CallScopes
from golem_proxy.replay.engine import ReplayEngine, summary
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
    return with_rules(path)


def with_rules(path: Path) -> Path:
    """``path`` as ``--redact`` with an MCP rule writes it: its header names the rule."""
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


def test_a_difference_hides_the_live_value_where_the_recording_held_a_secret(
    tmp_path: Path,
) -> None:
    # The build sends a param more: the request fits no recorded one, and the nearest that
    # holds the name in clear would quote the live name beside it, though the other recorded
    # request says a secret stood there.
    path = tmp_path / "t.jsonl"
    with TraceBuilder.create(str(path)) as trace:
        trace.call("scene.create_layer", {"name": REDACTED, "visible": True}, {"ok": 1})
        trace.call("scene.create_layer", {"name": "Default", "visible": True}, {"ok": 2})
    engine = build_engine([str(with_rules(path))], ReplayOptions())
    missed = answer(engine, "scene.create_layer", {"name": "Walls-SECRET", "visible": 1, "n": 2})
    message = missed["error"]["message"]
    # Each check a bool: a failing one prints no text that holds the secret.
    hidden = f"differs at params.name ('Default' vs '{REDACTED}')" in message
    assert hidden, "the nearest recorded request's difference quotes the live value"
    leaked = "SECRET" in message + json.dumps(summary(engine), ensure_ascii=False)
    assert not leaked, "the secret is in a miss"


def scoped_engine(tmp_path: Path) -> tuple[ReplayEngine, CallScopes]:
    """Two recorded requests of a wildcard name, the first under call #1, the second under
    call #2 (as `CallScopes.of` reads a recording's tool calls)."""
    path = tmp_path / "t.jsonl"
    with TraceBuilder.create(str(path)) as trace:
        trace.call("scene.set_current_layer", {"name": REDACTED}, {"ok": 1})
        trace.call("scene.set_current_layer", {"name": REDACTED}, {"ok": 2})
    engine = build_engine([str(with_rules(path))], ReplayOptions())
    numbers = [exchange.number for exchange in engine.index.trace.exchanges]
    calls = {10: CallRef(1, "first", {}, 10), 20: CallRef(2, "second", {}, 20)}
    return engine, CallScopes(calls, {10: frozenset(numbers[:1]), 20: frozenset(numbers[1:])})


def test_a_redacted_match_is_taken_from_the_call_in_flight_only(tmp_path: Path) -> None:
    engine, scopes = scoped_engine(tmp_path)
    # Call #2 first: its own recorded answer, though call #1's comes first in the file.
    engine.scope = scopes.for_index(20)
    assert answer(engine, "scene.set_current_layer", {"name": "Walls-SECRET"})["result"] == {
        "ok": 2
    }
    # Call #1 sends it twice: the second is #1's miss, never call #2's answer again.
    engine.scope = scopes.for_index(10)
    assert answer(engine, "scene.set_current_layer", {"name": "Walls-SECRET"})["result"] == {
        "ok": 1
    }
    extra = answer(engine, "scene.set_current_layer", {"name": "Walls-SECRET"})
    assert "error" in extra and extra.get("result") is None
    [miss] = engine.misses()
    assert miss.scope is not None and miss.scope.call is not None
    assert miss.scope.call.label == "#1 first"
    leaked = "SECRET" in miss.describe()
    assert not leaked, "the secret is in a miss"
