"""`check` of a recording made with ``--redact``: the tap checks each frame before it redacts
it, so a placeholder where the contract wants an object (``error.details``) is no finding of
the peer's. Re-checking the redacted frame found one in every such answer."""

from __future__ import annotations

import json
from pathlib import Path

from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, Event, FrameSeen
from golem_proxy.live.redact import REDACTED, Redactor
from golem_proxy.live.tap import ConnectionTap
from tests.support.cli_helpers import run_cli
from tests.support.trace_builder import write_recording


def test_a_redacted_answer_is_not_checked_again(tmp_path: Path) -> None:
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append, redactor=Redactor(["error.details"]))
    request = {"id": "r1", "method": "scene.delete_object", "params": {"guid": "x"}}
    error = {"code": "OBJECT_NOT_FOUND", "message": "gone", "details": {"path": "/secret"}}
    tap.process(Direction.C2S, GOLEM.encode(request), 0.0)
    tap.process(Direction.S2C, GOLEM.encode({"id": "r1", "result": None, "error": error}), 0.1)
    answer = [e for e in events if isinstance(e, FrameSeen)][-1]
    assert answer.redacted == ("error.details",)
    assert answer.message.obj["error"]["details"] == REDACTED
    path = tmp_path / "redacted.jsonl"
    path.write_bytes(write_recording(events))
    done = run_cli("check", str(path), "--json")
    report = json.loads(done.stdout)
    assert report["errors"] == 0 and report["warnings"] == 0, report["rules"]
