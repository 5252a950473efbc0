from __future__ import annotations

from pathlib import Path

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, GapReason, ObservationLost
from golem_proxy.recording.format import read_recording
from golem_proxy.tui.export import call_command, request_json, save_events
from golem_proxy.tui.model import SessionModel
from golem_proxy.tui.payloads import PayloadReleased
from tests.support.sessions import SessionBuilder, demo_session, golem_header
from tests.support.trace_builder import TapSimulator, write_recording

from .test_flow_bound import tool_call_causing


def test_a_pending_request_becomes_complete_in_the_same_row() -> None:
    s = SessionBuilder()
    s.open(1, 0.0)
    request = s.request(1, "scene.list_layers", {}, 0.1)
    model = SessionModel(GOLEM)
    first = model.apply(s.events)
    assert first.added == 1 and model.flows[0].pending
    s.events = []
    s.respond(request, 0.25, result={"layers": ["Default"]})
    second = model.apply(s.events)
    assert second.added == 0 and second.changed == {0}
    assert len(model.flows) == 1
    assert model.flows[0].status(GOLEM) == "ok"
    assert model.flows[0].latency == pytest.approx(0.15)


def test_filter_view_follows_changes_and_a_bad_filter_changes_nothing() -> None:
    model = SessionModel(GOLEM)
    model.apply(demo_session())
    model.set_filter("~e")
    errors = [model.flows[i].number for i in model.view]
    assert errors == [7, 8, 10, 11]
    with pytest.raises(ValueError):
        model.set_filter("~bogus")
    assert [model.flows[i].number for i in model.view] == errors
    assert model.filter_text == "~e"
    model.set_filter("~marked")
    assert list(model.view) == []
    model.toggle_mark(5)
    assert list(model.view) == [5]
    model.toggle_mark(5)
    assert list(model.view) == []


def test_what_the_filter_selects_includes_the_flows_a_fold_hides() -> None:
    before, answer = tool_call_causing(3)
    model = SessionModel(GOLEM)
    model.apply(before + answer)
    assert model.toggle_fold(0)
    assert list(model.view) == [0]
    assert list(model.selected()) == [0, 1, 2, 3]
    saved = model.view_to_save()
    assert saved.flows == 4
    model.set_filter("~route main")  # the filter still narrows; the fold still hides
    assert list(model.view) == [] and list(model.selected()) == [1, 2, 3]
    assert model.toggle_fold(0) is False
    assert list(model.view) == list(model.selected()) == [1, 2, 3]


def test_find_wraps_around_in_both_directions() -> None:
    model = SessionModel(GOLEM)
    model.apply(demo_session())
    assert model.find("create_", 0) == 3  # creation.create_box
    assert model.find("create_", 3) == 7  # creation.create_hexagon
    assert model.find("create_", 7) == 3  # wrapped
    assert model.find("create_", 3, forward=False) == 7
    assert model.find("bracket.3dm", 0) == 2  # found in a response body
    assert model.find("no such text anywhere", 0) is None


def test_a_saved_view_reads_back_as_the_same_flows(tmp_path: Path) -> None:
    model = SessionModel(GOLEM)
    model.apply(demo_session())
    model.set_filter("~m grasshopper.")
    path = str(tmp_path / "view.jsonl")
    save_events(path, golem_header(), model.events_for_view(), model.filter_text)
    recording = read_recording(path)
    assert recording.header.extra["filtered_by"] == "~m grasshopper."
    assert [r.name for r in recording.header.routes] == ["main", "gh"]
    again = SessionModel(recording.profile)
    again.apply(recording.events)
    shown = [model.flows[i] for i in model.view]
    assert [(f.method, f.status(GOLEM)) for f in again.flows] == [
        (f.method, f.status(GOLEM)) for f in shown
    ]
    # The violation of the gh flow travelled with it, and its connection came along.
    assert [v.rule for v in again.flows[0].violations] == ["golem.response.explicit-null-error"]
    assert set(again.tracker.connections) == {1, 2}
    assert again.flows[0].request is not None and shown[0].request is not None
    assert again.flows[0].request.payload == shown[0].request.payload


def test_request_json_is_the_request_object_or_its_raw_text() -> None:
    model = SessionModel(GOLEM)
    model.apply(demo_session())
    assert '"method": "ping"' in request_json(model.flows[0])
    assert request_json(model.flows[9]) == '{"id": "7", "method": "scene.li'
    assert request_json(model.flows[10]) == ""  # a framing error has no request


def test_requests_the_proxy_let_go_leave_the_pending_view_as_the_gap_comes() -> None:
    """The TUI is fed the tap's events: its ``evicted`` gap settles the oldest requests, and
    each row it settles is shown again (here: it leaves ``~pending``), not only the gap's."""
    s = SessionBuilder()
    s.open(1, 0.0)
    for n in range(3):
        s.request(1, "scene.list_layers", {}, 0.1 + n / 10)
    model = SessionModel(GOLEM)
    model.set_filter("~pending")
    model.apply(s.events)
    assert [model.flows[i].number for i in model.view] == [1, 2, 3]
    gap = ObservationLost(
        conn=1, route="main", direction=Direction.C2S, t=0.5, reason=GapReason.EVICTED, size=2
    )
    result = model.apply([gap])
    assert {0, 1} <= result.changed
    assert [model.flows[i].number for i in model.view] == [3]
    assert [model.status(model.flows[i]) for i in (0, 1)] == ["evicted", "evicted"]


def test_a_request_too_large_to_parse_is_copied_as_its_text(tmp_path: Path) -> None:
    """Read from its skeleton, its message is no request to copy: its payload is, as it was
    recorded, never parsed (15 million numbers: over a reader's budget), and no command line
    is made of it."""
    params = b'{"id": "a1", "method": "mesh.set_mask", "params": {"mask": [' + b"1," * 15_000_000
    payload = params + b"1]}}"
    tap = TapSimulator(GOLEM, cap=64 * 1024 * 1024)
    tap.open(1)
    tap.send(1, Direction.C2S, GOLEM.frame_payload(payload))
    tap.close(1)
    path = tmp_path / "large.jsonl"
    path.write_bytes(write_recording(tap.events))
    model = SessionModel(GOLEM)
    model.apply(read_recording(str(path)).events)
    (flow,) = model.flows
    assert flow.request is not None and flow.request.elided
    assert request_json(flow) == payload.decode()
    with pytest.raises(PayloadReleased, match="too large to parse"):
        call_command(flow, GOLEM, None)
