"""``golem-proxy check``: violations grouped by rule, re-checked, deduplicated, and drift."""

from __future__ import annotations

import json
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem_core.blocking import MessageReader, send_message
from golem_core.catalogue import MethodCatalogue
from golem_core.dispatcher import Dispatcher
from golem_core.messages import Request, Role
from golem_core.profiles import GOLEM
from golem_proxy.analysis.audit import audit, group_by_rule
from golem_proxy.analysis.flows import Flow, FlowTracker
from golem_proxy.analysis.trace import open_flows
from golem_proxy.events import Event, ViolationSeen

from .cli_helpers import ROOT, run_cli, run_main
from .trace_builder import TapSimulator, golem_session, write_recording

CATALOGUE = ROOT / "docs" / "golem-method-catalogue.json"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_bytes(write_recording(golem_session().events))
    return path


def test_catalogue_copy_matches_the_shared_one() -> None:
    shared = Path("/work/shared/golem/method-catalogue.json")
    if shared.exists():
        assert json.loads(CATALOGUE.read_text()) == json.loads(shared.read_text())
    catalogue = MethodCatalogue.load(str(CATALOGUE))
    assert "creation.create_box" in catalogue.methods and "ping" in catalogue.methods


def test_report_groups_by_rule(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "check", str(trace), "--json")
    assert code == 1  # there are errors
    report = json.loads(out)
    counts = {group["rule"]: group["count"] for group in report["rules"]}
    assert counts == {
        "golem.message.malformed": 2,
        "golem.frame.oversized": 1,
        "golem.frame.truncated": 1,
        "golem.response.explicit-null-error": 1,
        "pairing.orphan-response": 1,
    }
    malformed = next(g for g in report["rules"] if g["rule"] == "golem.message.malformed")
    assert malformed["severity"] == "error"
    assert malformed["summary"].startswith("The payload is not a valid")
    assert [(f["flow"], f["direction"]) for f in malformed["findings"]] == [(5, "c2s"), (7, "s2c")]
    assert malformed["findings"][1]["method"] == "scene.list_objects"
    oversized = next(g for g in report["rules"] if g["rule"] == "golem.frame.oversized")
    assert oversized["findings"][0]["flow"] == 11 and oversized["findings"][0]["conn"] == 2
    assert report["errors"] == 6 and report["warnings"] == 0
    assert report["drift"]["unknown_methods"] == []


def load(path: Path) -> tuple[list[Event], list[Flow]]:
    with open_flows(str(path)) as reader:
        events = list(reader.events())
    tracker = FlowTracker(GOLEM)
    for event in events:
        tracker.apply(event)
    return events, tracker.flows


def test_old_traces_get_the_rules_again(tmp_path: Path) -> None:
    """A trace without violation lines (recorded before the rules existed) is re-checked."""
    tap = golem_session()
    path = tmp_path / "old.jsonl"
    path.write_bytes(write_recording([e for e in tap.events if not isinstance(e, ViolationSeen)]))
    events, flows = load(path)
    findings = audit(events, flows, golem_session().profile)
    rules = {group.rule: group.count for group in group_by_rule(findings)}
    assert rules == {
        "golem.message.malformed": 2,
        "golem.frame.oversized": 1,
        "golem.frame.truncated": 1,
        "golem.response.explicit-null-error": 1,
    }  # the orphan verdict is the tap's alone: without it the response is not a row
    assert all(f.source == "recheck" for f in findings)


def test_recorded_and_rechecked_are_not_double_counted(trace: Path) -> None:
    events, flows = load(trace)
    findings = audit(events, flows, golem_session().profile)
    keys = [(f.flow, f.rule, f.violation.path) for f in findings]
    assert len(keys) == len(set(keys)) == 6
    assert all(f.source == "recorded" for f in findings)


def test_warnings_alone_pass_unless_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tap = TapSimulator()
    tap.open(1)
    tap.request(1, {"id": "w1", "method": "ping"})  # no params: a warning
    tap.respond(1, {"id": "w1", "result": {"alive": True}, "error": None})
    path = tmp_path / "warn.jsonl"
    path.write_bytes(write_recording(tap.events))
    code, out, _ = run_main(capsys, "check", str(path))
    assert code == 0 and "golem.request.params-object" in out and "1 warning" in out
    code, _, _ = run_main(capsys, "check", str(path), "--strict")
    assert code == 1


def test_clean_trace_passes(tmp_path: Path) -> None:
    tap = TapSimulator()
    tap.open(1)
    tap.request(1, {"id": "k1", "method": "ping", "params": {}})
    tap.respond(1, {"id": "k1", "result": {"alive": True}, "error": None})
    tap.close(1)
    path = tmp_path / "clean.jsonl"
    path.write_bytes(write_recording(tap.events))
    result = run_cli("check", str(path), "--catalogue", str(CATALOGUE))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no contract violations" in result.stdout and "no drift" in result.stdout


def test_drift_against_a_catalogue_file(trace: Path) -> None:
    result = run_cli("check", str(trace), "--catalogue", str(CATALOGUE))
    assert result.returncode == 1
    out = result.stdout
    assert f"Drift against catalogue {CATALOGUE}" in out
    assert out.index("Drift against catalogue") < out.index("Contract violations by rule")
    for text in ("not registered", "creation.create_hexagon", "param not read", "colour"):
        assert text in out
    report = json.loads(
        run_cli("check", str(trace), "--catalogue", str(CATALOGUE), "--json").stdout
    )
    drift = report["drift"]
    assert {row["method"] for row in drift["unknown_methods"]} == {
        "creation.create_hexagon",
        "scene.get_object",
        "view.capture_viewport",
        "grasshopper.get_canvas_info",
    }
    assert drift["unread_params"] == [
        {"method": "creation.create_box", "param": "colour", "flows": [2]}
    ]


@pytest.fixture
def live_plugin() -> Iterator[str]:
    """A one-shot plugin on loopback that answers list_methods from a dispatcher."""
    dispatcher = Dispatcher()
    dispatcher.register("creation.create_box", lambda params: {"guid": "g"})
    dispatcher.register("scene.get_object", lambda params: {})
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            message = MessageReader(conn, GOLEM).read_message(Role.REQUEST)
            assert isinstance(message, Request)
            send_message(conn, dispatcher.dispatch(message), GOLEM)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"127.0.0.1:{port}"
    thread.join(timeout=5)
    server.close()


def test_drift_against_a_live_plugin(trace: Path, live_plugin: str) -> None:
    result = run_cli("check", str(trace), "--catalogue-live", live_plugin, "--json")
    assert result.returncode == 1, result.stderr
    drift = json.loads(result.stdout)["drift"]
    assert drift["catalogue"] == f"list_methods at {live_plugin}"
    assert {row["method"] for row in drift["unknown_methods"]} == {
        "creation.create_hexagon",
        "view.capture_viewport",
        "grasshopper.get_canvas_info",
        "grasshopper.recompute",
        "scene.list_layers",
        "scene.list_objects",
    }
    assert drift["unread_params"] == []  # list_methods names methods, not params


def test_catalogue_errors_exit_2(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_main(capsys, "check", str(trace), "--catalogue", str(tmp_path / "none.json"))
    assert code == 2 and "none.json" in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"methods": []}')
    code, _, err = run_main(capsys, "check", str(trace), "--catalogue", str(bad))
    assert code == 2 and "not a method catalogue" in err
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    code, _, err = run_main(capsys, "check", str(trace), "--catalogue-live", f"127.0.0.1:{port}")
    assert code == 2 and "list_methods at" in err
    code, _, err = run_main(capsys, "check", str(trace), "--catalogue-live", "nonsense")
    assert code == 2 and "HOST:PORT" in err


def test_check_copes_with_a_copied_trace(trace: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.jsonl"
    shutil.copy(trace, copy)
    assert run_cli("check", str(copy)).returncode == 1


@pytest.mark.parametrize("piece", [1, 2, 5, 1000])
def test_a_trace_checked_piece_by_piece_gives_what_one_audit_gives(trace: Path, piece: int) -> None:
    from golem_proxy.commands.check import _audit

    events, flows = load(trace)
    whole = audit(events, flows, golem_session().profile)
    with open_flows(str(trace)) as reader:
        pieces = _audit(reader, None, piece)
    assert [f.to_json() for f in pieces] == [f.to_json() for f in whole]
