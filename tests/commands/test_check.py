"""``golem-proxy check``: violations grouped by rule, re-checked, deduplicated, and drift."""

from __future__ import annotations

import json
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from golem_core.blocking import MessageReader, send_message
from golem_core.catalogue import MethodCatalogue
from golem_core.dispatcher import Dispatcher
from golem_core.messages import Request, Role
from golem_core.profiles import GOLEM
from golem_proxy.analysis.audit import audit, group_by_rule
from golem_proxy.analysis.flows import Flow, FlowTracker
from golem_proxy.analysis.trace import open_flows
from golem_proxy.catalogues import load_catalogue
from golem_proxy.events import Direction, Event, ViolationSeen
from golem_proxy.testing.answering_server import answering
from tests.support.cli_helpers import ROOT, run_cli, run_main
from tests.support.trace_builder import TapSimulator, golem_session, write_recording

CATALOGUE = ROOT / "docs" / "golem-method-catalogue.json"
SHIPPED = "golem-3dmcp@9819b31"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_bytes(write_recording(golem_session().events))
    return path


def test_the_docs_catalogue_loads_and_is_the_shipped_one() -> None:
    catalogue = MethodCatalogue.load(str(CATALOGUE))
    assert "geometry.create_box" in catalogue.methods and "ping" in catalogue.methods
    assert load_catalogue(SHIPPED).methods == catalogue.methods


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
    tap.close(1)  # the session whole: nothing but the warning stands between it and a pass
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
    yield from _answering(dispatcher, connections=1)


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
    assert drift["knows_methods"] and not drift["knows_params"]
    assert "params were not checked" in drift["note"]


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


def _sample(param: dict[str, Any]) -> Any:
    """A value of the shape a tool's source shows for a param (its first non-null kind)."""
    shape = param.get("shape") or {"kinds": ["string"]}
    kinds = shape["kinds"]
    if "object" in kinds:
        return {key: 1.0 for key in shape.get("keys", ["value"])}
    for kind, value in (("array", ["g-1", "g-2"]), ("number", 2.5), ("string", "s")):
        if kind in kinds:
            return value
    return True if "boolean" in kinds else None


def _real_tools_trace(path: Path) -> dict[str, Any]:
    """Every request the MCP server's tools send (per the shipped catalogue), one call each,
    answered as the plugin would: NOT_FOUND for what it does not register, else a result."""
    golem = json.loads((ROOT / "golem_proxy" / "catalogues" / f"{SHIPPED}.json").read_text())
    tap = TapSimulator()
    tap.open(1)
    number = 0
    for method, entry in sorted(golem["client_methods"].items()):
        for tool in entry["tools"]:
            number += 1
            params = {name: _sample(p) for name, p in tool["params"].items()}
            tap.request(1, {"id": f"t{number}", "method": method, "params": params})
            tap.tick(0.001)
            if method in golem["client_methods_missing_in_plugin"]:
                error = {"code": "NOT_FOUND", "message": f"Unknown method: {method}"}
                tap.respond(1, {"id": f"t{number}", "result": None, "error": error})
            else:
                tap.respond(1, {"id": f"t{number}", "result": {}, "error": None})
    tap.close(1)
    path.write_bytes(write_recording(tap.events))
    return golem


# Params the issue counted as false "not read" rows: read through helpers.
READ_THROUGH_HELPERS = {
    ("geometry.create_box", p) for p in ("corner", "width", "depth", "height", "name", "layer")
} | {
    ("operations.boolean_union", "guids"),
    ("viewport.add_named_view", "save_as"),
    ("operations.offset_curve", "distance"),
}


def test_real_tools_trace_has_no_false_unread_params(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    golem = _real_tools_trace(path)
    result = run_cli("check", str(path), "--catalogue", SHIPPED, "--json")
    assert result.returncode == 1, result.stderr  # unregistered methods are errors
    drift = json.loads(result.stdout)["drift"]
    assert drift["catalogue"] == SHIPPED and drift["commit"] == golem["built_from"]["commit"]
    unknown = {row["method"] for row in drift["unknown_methods"]}
    assert unknown == set(golem["client_methods_missing_in_plugin"]) and len(unknown) == 40
    unread = {(row["method"], row["param"]) for row in drift["unread_params"]}
    assert not unread & READ_THROUGH_HELPERS
    for method, param in unread:  # no row names a param the handler's source reads
        assert param not in golem["plugin_methods"][method]["params"]
    assert len(unread) == 40
    renamed = {(r["method"], r["param"], r["read_as"]) for r in drift["renamed_params"]}
    assert renamed == {
        ("geometry.create_torus", "center", "base_center"),
        ("manipulation.apply_transform", "guids", "ids"),
        ("operations.boolean_difference", "cutter_guids", "guids_b"),
        ("operations.boolean_intersection", "guids", "guids_a"),
        ("operations.offset_curve", "plane_normal", "plane"),
        ("scene.list_objects", "name", "name_pattern"),
        ("viewport.restore_named_view", "named_view", "name"),
        ("viewport.restore_named_view", "target_view_name", "view_name"),
        ("viewport.set_camera", "location", "camera_location"),
    }
    assert ("scene.list_objects", "unlocked_only") in unread  # not `selected_only`
    missing = {(r["method"], "|".join(r["params"])) for r in drift["missing_required"]}
    assert ("geometry.create_torus", "base_center|base_plane") in missing
    assert ("operations.offset_curve", "curve_id") in missing
    assert len(missing) == 14
    # The server's colours ({r,g,b,a} for layers, {r,g,b} for the background) are shapes the
    # handlers accept: no mismatch on this commit.
    assert drift["shape_mismatches"] == []
    torus = next(r for r in drift["missing_required"] if r["method"] == "geometry.create_torus")
    assert (torus["side"], torus["at"]) == ("plugin", "rhino_plugin/handlers/creation.py:1635")
    name = next(r for r in drift["renamed_params"] if r["method"] == "scene.list_objects")
    assert (name["side"], name["at"]) == ("client", "mcp_server/tools/scene.py:134")


def test_a_colour_shape_the_handler_does_not_take(tmp_path: Path) -> None:
    tap = TapSimulator()
    tap.open(1)
    box = {"corner": [0, 0, 0], "width": 1, "depth": 1, "height": 1}
    box["color"] = {"r": 255, "g": 0, "b": 0, "a": 255}  # geometry.* take [r, g, b(, a)]
    tap.request(1, {"id": "s1", "method": "geometry.create_box", "params": box})
    tap.respond(1, {"id": "s1", "result": {"guid": "g"}, "error": None})
    layer = {"name": "Walls", "color": [200, 80, 40]}  # the handler reads color["r"] and so on
    tap.request(1, {"id": "s2", "method": "scene.create_layer", "params": layer})
    tap.respond(1, {"id": "s2", "result": {"layer_index": 1}, "error": None})
    tap.close(1)
    path = tmp_path / "colour.jsonl"
    path.write_bytes(write_recording(tap.events))
    result = run_cli("check", str(path), "--catalogue", SHIPPED, "--json")
    assert result.returncode == 0, result.stdout  # a shape mismatch is a warning
    row, layer_row = json.loads(result.stdout)["drift"]["shape_mismatches"]
    assert layer_row == {
        "method": "scene.create_layer",
        "param": "color",
        "accepts": "null or {a,b,g,r}",
        "sent": "an array of 3",
        "flows": [2],
        "at": "rhino_plugin/handlers/scene.py:773",
        "side": "plugin",
    }
    assert row == {
        "method": "geometry.create_box",
        "param": "color",
        "accepts": "array or null",
        "sent": "{r,g,b,a}",
        "flows": [1],
        "at": "rhino_plugin/handlers/creation.py:1467",
        "side": "plugin",
    }
    text = run_cli("check", str(path), "--catalogue", SHIPPED).stdout
    assert "shape differs" in text and "rhino_plugin/handlers/creation.py:1467" in text


@pytest.fixture
def builtins_only_plugin() -> Iterator[str]:
    """A plugin whose list_methods names only its builtins, as the real plugin's does."""
    dispatcher = Dispatcher()
    yield from _answering(dispatcher, connections=2)  # the text report and the JSON one


def test_live_plugin_listing_only_builtins_cannot_tell(
    tmp_path: Path, builtins_only_plugin: str
) -> None:
    tap = TapSimulator()
    tap.open(1)
    tap.request(1, {"id": "k1", "method": "geometry.create_box", "params": {"width": 1}})
    tap.respond(1, {"id": "k1", "result": {"guid": "g"}, "error": None})
    tap.close(1)
    path = tmp_path / "clean.jsonl"
    path.write_bytes(write_recording(tap.events))
    result = run_cli("check", str(path), "--catalogue-live", builtins_only_plugin)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no drift" not in result.stdout
    assert "drift unknown" in result.stdout and "cannot be known" in result.stdout
    result = run_cli("check", str(path), "--catalogue-live", builtins_only_plugin, "--json")
    drift = json.loads(result.stdout)["drift"]
    assert drift["knows_methods"] is False and drift["unknown_methods"] == []
    assert "none is ruled out" in drift["note"]


def test_drift_rows_print_trace_text_inert(tmp_path: Path) -> None:
    tap = TapSimulator()
    tap.open(1)
    method = "[red]evil\x1b]0;title\x07"
    tap.request(1, {"id": "e1", "method": method, "params": {"[b]x": 1}})
    tap.respond(1, {"id": "e1", "result": None, "error": {"code": -32601, "message": "no"}})
    path = tmp_path / "evil.jsonl"
    path.write_bytes(write_recording(tap.events))
    result = run_cli("check", str(path), "--catalogue", SHIPPED)
    assert "[red]evil\\x1b]0;title\\x07" in result.stdout and "\x1b" not in result.stdout


def test_drift_the_proxy_recorded_is_shown_without_a_catalogue(tmp_path: Path) -> None:
    """A trace recorded with `proxy --catalogue` carries its drift as violations: check shows
    them by kind with the recorded message (the source line is in it)."""
    catalogue = load_catalogue(SHIPPED)
    tap = TapSimulator()
    tap.open(1)
    torus = {"center": {"x": 0, "y": 0, "z": 0}, "major_radius": 2.0, "minor_radius": 0.5}
    tap.request(1, {"id": "v1", "method": "geometry.create_torus", "params": torus})
    message = Request("v1", "geometry.create_torus", torus, {})
    for found in catalogue.check_request(message):  # what the live tap records
        tap.events.append(
            ViolationSeen(
                conn=1,
                route="main",
                direction=Direction.C2S,
                frame_index=0,
                t=tap.t,
                violation=found,
            )
        )
    tap.respond(1, {"id": "v1", "result": {"guid": "g"}, "error": None})
    path = tmp_path / "recorded.jsonl"
    path.write_bytes(write_recording(tap.events))
    result = run_cli("check", str(path), "--json")
    assert result.returncode == 1  # missing-required is an error
    drift = json.loads(result.stdout)["drift"]
    assert drift["catalogue"] is None
    (missing,) = drift["missing_required"]
    assert missing["method"] == "geometry.create_torus" and missing["params"] == []
    assert "rhino_plugin/handlers/creation.py:1635" in missing["message"]
    (renamed,) = drift["renamed_params"]
    assert (renamed["param"], renamed["read_as"]) == ("center", None)
    assert "reads `base_center`" in renamed["message"]


@pytest.mark.parametrize("piece", [1, 2, 5, 1000])
def test_a_trace_checked_piece_by_piece_gives_what_one_audit_gives(trace: Path, piece: int) -> None:
    from golem_proxy.analysis.drift import DriftCollector
    from golem_proxy.commands.check import _audit

    events, flows = load(trace)
    whole = audit(events, flows, golem_session().profile)
    with open_flows(str(trace)) as reader:
        pieces = _audit(reader, None, DriftCollector(None), piece)
    assert [f.to_json() for f in pieces] == [f.to_json() for f in whole]


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        (b'{"id": "golem-proxy-check", "result": [1], "error": null}', "(ok)"),
        (b'{"id": "\xff\xfe", "result": 1}', "(malformed:invalid-utf8)"),
    ],
)
def test_a_hostile_list_methods_answer_is_one_error_line(
    trace: Path, answer: bytes, shown: str
) -> None:
    # A result of another shape was an AttributeError (exit 70); every answer is hostile.
    with answering(lambda request_id: answer) as address:
        done = run_cli("check", str(trace), "--catalogue-live", address)
    assert done.returncode == 2
    assert done.stderr == (f"golem-proxy: list_methods at {address}: unexpected answer {shown}\n")


def test_the_builtins_of_each_channel_are_never_drift(tmp_path: Path) -> None:
    """gh.ping is answered by the real Grasshopper server itself: not drift on the gh
    channel, and a session of builtins only passes the gate."""
    from tests.support.traces import TraceBuilder

    path = tmp_path / "builtins.jsonl"
    with TraceBuilder.create(str(path)) as builder:
        builder.call("ping", result={"alive": True})
        builder.call("gh.ping", result={"alive": True, "server": "gh"}, route="gh")
        builder.call("scene.list_objects", result={"objects": []})
    result = run_cli("check", str(path), "--catalogue", SHIPPED)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "gh.ping" not in result.stdout


def test_the_grasshopper_sample_reports_only_real_drift_and_names_the_real_method() -> None:
    result = run_cli("check", "sample:grasshopper-session", "--catalogue", SHIPPED, "--json")
    drift = json.loads(result.stdout)["drift"]
    unknown = {row["method"]: row["plugin_registers"] for row in drift["unknown_methods"]}
    # The MCP server's names the plugin lacks (their calls failed in the session): real drift.
    assert unknown == {
        "grasshopper.bake_objects": "grasshopper.bake",
        "grasshopper.set_input": None,
    }
    assert result.returncode == 1
    text = run_cli("check", "sample:grasshopper-session", "--catalogue", SHIPPED).stdout
    assert "gh.ping" not in text
    assert "the plugin registers `grasshopper.bake`" in text


def _answering(dispatcher: Dispatcher, connections: int) -> Iterator[str]:
    """Serve ``connections`` connections on loopback, one request each, answered by
    ``dispatcher``; yields the address."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        for _ in range(connections):
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
