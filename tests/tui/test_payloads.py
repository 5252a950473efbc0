"""The live TUI's payload budget (golem_proxy/tui/payloads.py): the model keeps at most its
budget of large payloads, releasing the oldest; small frames, compact frames and the published
events are never touched; and every reader of a payload says when it is gone."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Tree

from golem_core.messages import Role
from golem_core.profiles import GOLEM
from golem_proxy.analysis.filters import parse_filter
from golem_proxy.events import Event, ExchangeCompleted, FrameSeen
from golem_proxy.live.tap_parse import ELIDE_FRAMES_OVER, ELIDE_STRINGS_OVER
from golem_proxy.net.addresses import Address
from golem_proxy.recording.format import read_recording
from golem_proxy.released_payload import ReleasedPayload
from golem_proxy.testing.client import GolemClient
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.compact import Compactor, is_compact
from golem_proxy.tui.export import call_command, request_json, save_events
from golem_proxy.tui.model import SessionModel
from golem_proxy.tui.payloads import (
    RELEASE_OVER,
    PayloadBudget,
    PayloadReleased,
    release_note,
    released,
)
from golem_proxy.tui.skeleton import BULK_NUMBERS
from tests.support.cli_helpers import editor_script
from tests.support.sessions import SessionBuilder, _capture_base64, golem_header

from .helpers import ManualSource, intercepting_source, live_app, run, select, wait_for

MIB = 1024 * 1024
BLOB = 2 * MIB
"""A capture's base64, large enough for the tap to elide it (over ELIDE_FRAMES_OVER)."""


def as_the_tap_publishes(events: list[Event]) -> list[Event]:
    """``events`` with every frame over `ELIDE_FRAMES_OVER` typed as the live tap types it:
    its long strings elided from the message, the payload whole (exchanges name the new
    frames)."""
    replaced: dict[int, FrameSeen] = {}
    out: list[Event] = []
    for event in events:
        if isinstance(event, FrameSeen) and len(event.payload) > ELIDE_FRAMES_OVER:
            role = Role.REQUEST if event.is_request else Role.RESPONSE
            message, elided = GOLEM.parse_elided(event.payload, role, ELIDE_STRINGS_OVER)
            assert elided
            typed = dataclasses.replace(event, message=message, elided=elided)
            replaced[id(event)] = event = typed
        elif isinstance(event, ExchangeCompleted):
            event = dataclasses.replace(
                event,
                request=replaced.get(id(event.request), event.request),
                response=replaced.get(id(event.response), event.response),
            )
        out.append(event)
    return out


def captures(
    count: int, size: int = BLOB, *, small_between: bool = False, tag: str = "cap"
) -> list[Event]:
    """``count`` viewport.capture exchanges answered with ``size`` bytes of base64 (and a
    small ``tag`` member), each followed by a small ping exchange with ``small_between``."""
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    for i in range(count):
        request = s.request(1, "viewport.capture", {"width": 64}, i + 0.1)
        s.respond(request, i + 0.2, result={"tag": f"{tag}{i}", "image": "A" * size})
        if small_between:
            ping = s.request(1, "ping", {}, i + 0.3)
            s.respond(ping, i + 0.4, result={"pong": True})
    return as_the_tap_publishes(s.events)


def large_kept(model: SessionModel) -> int:
    """Payload bytes of large frames the model's flows hold, counted from the flows."""
    total = 0
    for flow in model.flows:
        for frame in (flow.request, flow.response):
            if frame is not None and len(frame.payload) >= RELEASE_OVER:
                total += len(frame.payload)
    return total


def released_flows(model: SessionModel) -> list[int]:
    # `released` gives the marker, an empty bytes: compared with None, never taken as a bool.
    return [
        f.number
        for f in model.flows
        if released(f.response) is not None or released(f.request) is not None
    ]


def test_the_budget_holds_under_many_large_frames_and_the_newest_are_kept() -> None:
    budget = PayloadBudget(keep=9 * MIB, recording="session.jsonl")
    model = SessionModel(GOLEM, payload_budget=budget)
    events = captures(30)
    # One exchange per batch, as a live session delivers them: the budget holds after each.
    model.apply(events[:1])
    for at in range(1, len(events), 3):
        model.apply(events[at : at + 3])
        assert large_kept(model) == budget.kept <= 9 * MIB
    assert len(model.flows) == 30
    # Four 2 MiB answers fit in 9 MiB: the newest four are kept, every older one released.
    assert released_flows(model) == list(range(1, 27))
    assert budget.released == 26
    assert budget.released_bytes == sum(
        len(e.response.payload) for e in events if isinstance(e, ExchangeCompleted)
    ) - sum(len(f.response.payload) for f in model.flows[26:] if f.response is not None)
    # The row stays whole: method, outcome, size, timing, the elided message.
    first = model.flows[0]
    assert first.response is not None
    assert first.method == "viewport.capture"
    assert model.status(first) == "ok"
    original = next(e for e in events if isinstance(e, ExchangeCompleted)).response
    assert first.response_size == original.size == len(original.payload) + 4
    assert first.response.elided >= BLOB
    assert first.response.message.obj["result"]["tag"] == "cap0"
    assert first.latency == pytest.approx(0.1)


def test_small_frames_are_kept_whatever_the_budget() -> None:
    budget = PayloadBudget(keep=0)
    model = SessionModel(GOLEM, payload_budget=budget)
    model.apply(captures(5, small_between=True))
    pings = [f for f in model.flows if f.method == "ping"]
    assert len(pings) == 5
    for flow in pings:
        assert released(flow.request) is None and released(flow.response) is None
        assert flow.response is not None and b"pong" in flow.response.payload
    # Every capture's answer is released; its small request (under RELEASE_OVER) is kept.
    for flow in model.flows:
        if flow.method == "viewport.capture":
            assert released(flow.response) is not None
            assert released(flow.request) is None
    assert budget.kept == large_kept(model) == 0


def test_a_flood_in_one_batch_stays_within_the_budget() -> None:
    budget = PayloadBudget(keep=9 * MIB)
    model = SessionModel(GOLEM, payload_budget=budget)
    model.apply(captures(40))
    assert large_kept(model) == budget.kept <= 9 * MIB
    assert budget.released == 36
    assert released_flows(model) == list(range(1, 37))


def test_the_published_events_keep_their_payloads() -> None:
    """The recorder writes the same event objects (in one process it may not have yet):
    releasing replaces the frame the flow holds, never the published one."""
    events = captures(3)
    model = SessionModel(GOLEM, payload_budget=PayloadBudget(keep=0))
    model.apply(events)
    assert len(released_flows(model)) == 3
    for event in events:
        if isinstance(event, FrameSeen):
            assert not isinstance(event.payload, ReleasedPayload)
            assert len(event.payload) == event.size - 4


def test_a_pending_request_released_is_still_answered() -> None:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    request = s.request(1, "scene.import", {"mesh": "B" * BLOB}, 0.1)
    events = as_the_tap_publishes(s.events)
    model = SessionModel(GOLEM, payload_budget=PayloadBudget(keep=0))
    model.apply(events)
    flow = model.flows[0]
    assert flow.pending and released(flow.request) is not None
    s.events = []
    s.respond(request, 0.5, result={"ok": True})
    model.apply(as_the_tap_publishes(s.events))
    assert not flow.pending and model.status(flow) == "ok"
    assert released(flow.request) is not None
    assert flow.response is not None and released(flow.response) is None
    assert model.payload_budget is not None and model.payload_budget.kept == 0


def test_compact_frames_are_never_released() -> None:
    """A recording's frames are compact: their message is parsed again from the payload, so
    a budget never takes it (were it given one)."""
    events = captures(3, size=200 * 1024)
    compactor = Compactor(GOLEM, {})
    model = SessionModel(GOLEM, compactor, PayloadBudget(keep=0))
    model.apply(events)
    assert released_flows(model) == []
    response = model.flows[0].response
    assert response is not None
    assert response.message.obj["result"]["tag"] == "cap0"


def test_a_live_session_compacts_small_frames_and_releases_large_ones() -> None:
    """A live source that names its routes' profiles has its settled flows compacted, but
    for the frames its budget may release: those stay whole, and go once over the budget."""
    source = ManualSource(captures(3, size=200 * 1024, small_between=True))
    source.route_profiles = {}  # type: ignore[attr-defined]
    app = GolemProxyApp(source, GOLEM, "test", payload_budget=PayloadBudget(keep=300 * 1024))

    async def body() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            model = app.model
            await wait_for(pilot, lambda: len(model.flows) == 6)
            assert released_flows(model) == [1, 3]
            assert large_kept(model) <= 300 * 1024
            for flow in model.flows:
                assert flow.request is not None and is_compact(flow.request)
                assert flow.response is not None
                assert is_compact(flow.response) == (flow.method == "ping")
            assert model.flows[4].response.message.obj["result"]["tag"] == "cap2"  # type: ignore[union-attr]

    run(body())


def test_the_release_note_says_where_the_bytes_are() -> None:
    for recording, where in (
        ("session.jsonl", "the recording holds it (session.jsonl)"),
        (None, "it was not recorded"),
    ):
        model = SessionModel(GOLEM, payload_budget=PayloadBudget(16 * MIB, recording))
        model.apply(captures(9))
        frame = model.flows[0].response
        note = release_note(frame)
        assert note is not None
        assert note.startswith("payload released from memory (2.0 MiB, over the TUI's 16.0 MiB")
        assert where in note
        assert release_note(model.flows[-1].response) is None


def test_body_filters_and_find_search_what_the_row_kept() -> None:
    model = SessionModel(GOLEM, payload_budget=PayloadBudget(keep=0))
    model.apply(captures(3, tag="needle"))
    assert len(released_flows(model)) == 3
    # The members the message kept are searched; the elided blob is not (it is gone).
    model.set_filter("~s needle1")
    assert [model.flows[i].number for i in model.view] == [2]
    model.set_filter("~s AAAAAAAA")
    assert list(model.view) == []
    model.set_filter("needle2")
    assert [model.flows[i].number for i in model.view] == [3]
    model.set_filter("")
    assert model.find("needle0", 2) == 0
    assert model.find("AAAAAAAA", 0) is None


def test_a_released_answer_under_1_mib_keeps_no_blob_in_its_message() -> None:
    # The tap types a frame under 1 MiB whole; released, its message drops the blob too (a
    # live session without a recording, of 300 KB captures, kept every one as a string).
    events = captures(3, 300_000, tag="needle")
    answers = [e for e in events if isinstance(e, FrameSeen) and not e.is_request]
    assert answers[0].elided == 0
    model = SessionModel(GOLEM, payload_budget=PayloadBudget(keep=0))
    model.apply(events)
    assert len(released_flows(model)) == 3
    for flow, tag in zip(model.flows, ("needle0", "needle1", "needle2"), strict=True):
        assert flow.response is not None and flow.response.elided == 300_000
        result = flow.response.message.obj["result"]  # type: ignore[attr-defined]
        assert result == {"tag": tag, "image": "<300000 bytes elided>"}
        assert model.status(flow) == "ok"
    model.set_filter("~s AAAAAAAA")
    assert list(model.view) == []
    model.set_filter("~s needle1")
    assert [model.flows[i].number for i in model.view] == [2]


def test_copy_and_copy_as_call_refuse_a_released_elided_request() -> None:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    request = s.request(1, "scene.import", {"mesh": "B" * BLOB}, 0.1)
    s.respond(request, 0.2, result={})
    small = s.request(1, "scene.import", {"mesh": "C" * (RELEASE_OVER * 2)}, 0.3)
    s.respond(small, 0.4, result={})
    events = as_the_tap_publishes(s.events)
    kept_model = SessionModel(GOLEM)
    kept_model.apply(events)
    # Kept: the copy is the whole request, taken from the payload, not the elided message.
    whole = request_json(kept_model.flows[0])
    assert "B" * 1000 in whole and "elided" not in whole
    command = call_command(kept_model.flows[0], GOLEM, None)
    assert command is not None and "B" * 1000 in command

    model = SessionModel(GOLEM, payload_budget=PayloadBudget(keep=0))
    model.apply(events)
    flow = model.flows[0]
    with pytest.raises(PayloadReleased, match="payload released from memory"):
        request_json(flow)
    with pytest.raises(PayloadReleased):
        call_command(flow, GOLEM, None)
    # Under 1 MiB the tap typed it whole; released, its message drops the blob too (else
    # the budget would bound nothing): refused the same way, not copied without its mesh.
    second = model.flows[1]
    assert released(second.request) is not None
    assert second.request is not None and second.request.elided == RELEASE_OVER * 2
    with pytest.raises(PayloadReleased, match="payload released from memory"):
        request_json(second)
    with pytest.raises(PayloadReleased):
        call_command(second, GOLEM, None)


def test_a_saved_view_leaves_out_the_released_flows_and_says_so(tmp_path: Path) -> None:
    model = SessionModel(GOLEM, payload_budget=PayloadBudget(keep=5 * MIB))
    model.apply(captures(5, small_between=True))
    saved = model.view_to_save()
    assert saved.left_out == 3
    assert saved.flows == 7  # the five pings and the two captures kept
    path = str(tmp_path / "view.jsonl")
    save_events(path, golem_header(), saved.events, "", "3 flows left out")
    recording = read_recording(path)
    assert recording.header.extra["left_out"] == "3 flows left out"
    methods = [e.method for e in recording.exchanges()]
    assert methods.count("viewport.capture") == 2 and methods.count("ping") == 5
    for exchange in recording.exchanges():
        if exchange.method == "viewport.capture":
            assert len(exchange.response.payload) > BLOB


def large_request_session() -> list[Event]:
    """A scene.import carrying a 2 MiB mesh (elided by the tap), then a small capture whose
    image the message holds whole, then two 2 MiB captures, on one connection."""
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    request = s.request(1, "scene.import", {"mesh": "B" * BLOB}, 0.1)
    s.respond(request, 0.2, result={"imported": 1})
    capture = s.request(1, "viewport.capture", {"width": 96}, 0.3)
    s.respond(capture, 0.4, result={"image": _capture_base64(), "pad": "x" * RELEASE_OVER})
    for number in range(2):
        capture = s.request(1, "viewport.capture", {"width": 64}, number + 0.5)
        s.respond(capture, number + 0.6, result={"tag": f"cap{number}", "image": "A" * BLOB})
    return as_the_tap_publishes(s.events)


def notices(app: GolemProxyApp) -> list[str]:
    return [n.message for n in app._notifications]


def test_the_detail_pane_copy_resend_and_save_say_a_payload_was_released(
    tmp_path: Path,
) -> None:
    budget = PayloadBudget(keep=3 * MIB, recording="session.jsonl")
    source = ManualSource(large_request_session())
    app = GolemProxyApp(
        source,
        GOLEM,
        "test",
        payload_budget=budget,
        resend_target=Address("127.0.0.1", 9),
    )

    async def body() -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 4)
            await wait_for(pilot, lambda: "3 payloads released from memory" in app.status_bar.text)
            await select(pilot, 0)
            text = app.detail.text()
            assert (
                "payload released from memory (2.0 MiB, over the TUI's 3.0 MiB budget); "
                "the recording holds it (session.jsonl)"
            ) in " ".join(text.split())
            # The message the row kept is still shown, its blob as the tap elided it.
            assert "bytes elided>" in text and '"imported": 1' in text
            await pilot.press("y")
            assert notices(app)[-1].startswith(
                "Request #1 not copied: its payload released from memory (2.0 MiB"
            )
            await pilot.press("Y")
            assert notices(app)[-1].startswith("Request #1 not copied: its payload released")
            await pilot.press("r")
            assert notices(app)[-1].startswith(
                "request #1 cannot be sent again: its payload released from memory"
            )
            await pilot.press("E")
            assert type(app.screen).__name__ != "EditFrame"
            assert "cannot be sent again" in notices(app)[-1]
            # A released capture whose message holds its image still shows it.
            await select(pilot, 1)
            flow = app.model.flows[1]
            assert released(flow.response) is not None
            await wait_for(pilot, lambda: "Image  96x60 PNG" in app.detail.text())
            # The newest capture is kept: no note.
            await select(pilot, 3)
            assert "released" not in app.detail.text()
            saved = tmp_path / "view.jsonl"
            await pilot.press("w")
            await pilot.press("ctrl+a", "ctrl+k", *str(saved), "enter")
            await wait_for(pilot, lambda: any("Wrote" in n for n in notices(app)))
            assert notices(app)[-1] == (
                f"Wrote 1 flow (4 events) to {saved}; 3 flows left out: payloads released "
                "from memory (the recording session.jsonl holds them)"
            )
            recording = read_recording(str(saved))
            assert "3 flows left out" in recording.header.extra["left_out"]

    run(body())


def test_without_a_recording_the_detail_pane_says_the_bytes_are_gone() -> None:
    app = GolemProxyApp(
        ManualSource(captures(2)), GOLEM, "test", payload_budget=PayloadBudget(keep=MIB)
    )

    async def body() -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 2)
            await select(pilot, 0)
            text = " ".join(app.detail.text().split())
            assert "payload released from memory (2.0 MiB, over the TUI's 1.0 MiB budget)" in text
            assert "it was not recorded" in text

    run(body())


def test_a_held_frame_is_never_released(
    plugin: Address, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A held frame waits in the intercept engine, not in the model's flows: a budget that
    releases every payload it is shown leaves it whole, and editing it sends it whole."""
    editor = editor_script(tmp_path, 'sed -i \'s/"Red"/"Edited"/\' "$1"')
    monkeypatch.setenv("EDITOR", editor)
    hold = parse_filter(r"~q & ~m ^scene\.create_layer$")
    source, control, _ = intercepting_source(plugin, hold)
    budget = PayloadBudget(keep=0, release_over=1)
    results: list[Any] = []

    def client(listen: int) -> None:
        with GolemClient("127.0.0.1", listen) as golem:
            golem.send_command("ping", {})
            results.append(golem.send_command("scene.create_layer", {"name": "Red"}))

    async def body() -> None:
        async with live_app(source, control, payload_budget=budget) as (app, pilot, listen):
            worker = threading.Thread(target=client, args=(listen,))
            worker.start()
            panel = app.held_panel
            await wait_for(pilot, lambda: bool(panel.held), limit=4000)
            ping = next(f for f in app.model.flows if f.method == "ping")
            assert released(ping.request) is not None and released(ping.response) is not None
            held = panel.held[0].payload
            assert not isinstance(held, ReleasedPayload) and b'"Red"' in held
            await wait_for(pilot, lambda: panel.has_focus)
            await pilot.press("e")
            await wait_for(pilot, lambda: len(results) == 1, limit=4000)
            worker.join(10)
            assert results[0]["full_path"] == "Edited"

    try:
        run(body(), timeout=60)
    finally:
        source.stop()


def test_the_difference_from_a_released_answer_is_not_shown_as_one_from_nothing(
    plugin: Address,
) -> None:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    request = s.request(1, "ping", {}, 0.1)
    s.respond(request, 0.2, result={"pong": "C" * RELEASE_OVER})
    app = GolemProxyApp(
        ManualSource(s.events),
        GOLEM,
        "test",
        payload_budget=PayloadBudget(keep=0),
        resend_target=plugin,
    )

    async def body() -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 1)
            await select(pilot, 0)
            assert released(app.model.flows[0].response) is not None
            await pilot.press("r")
            await wait_for(pilot, lambda: "sent again: ok" in notices(app)[-1], limit=4000)
            await pilot.press("D")
            assert type(app.screen).__name__ != "ResendDiff"
            assert notices(app)[-1].startswith(
                "flow 1's answer cannot be compared: payload released from memory"
            )
            assert notices(app)[-1].endswith("it was not recorded (run with --record to keep it)")

    run(body(), timeout=60)


def test_a_released_request_is_not_made_compact_when_it_settles() -> None:
    """A model with both a compactor and a budget: a pending request released before its
    answer comes keeps its message, rather than one parsed again from no bytes."""
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    request = s.request(1, "scene.import", {"mesh": "B" * RELEASE_OVER}, 0.1)
    model = SessionModel(GOLEM, Compactor(GOLEM, {}), PayloadBudget(keep=0))
    model.apply(s.events)
    flow = model.flows[0]
    assert released(flow.request) is not None
    s.events = []
    s.respond(request, 0.2, result={})
    model.apply(s.events)
    assert flow.request is not None and released(flow.request) is not None
    assert not is_compact(flow.request)
    assert flow.request.message.params == {"mesh": f"<{RELEASE_OVER} bytes elided>"}
    assert model.status(flow) == "ok"


def test_an_answer_whose_request_was_never_seen_is_released_too() -> None:
    """A live queue that dropped a request still delivers its answer, then the exchange that
    makes its row: the row holds the answer, and the event list keeps no second copy of it
    that the budget could not release."""
    events = captures(2)
    dropped = [e for e in events if not (isinstance(e, FrameSeen) and e.is_request)]
    model = SessionModel(GOLEM, payload_budget=PayloadBudget(keep=0))
    model.apply(dropped)
    assert released_flows(model) == [1, 2]
    whole = [
        e
        for e in model.events
        if isinstance(e, FrameSeen) and not isinstance(e.payload, ReleasedPayload)
    ]
    assert all(len(e.payload) < RELEASE_OVER for e in whole)
    # Each answer is in order, under its row: before its exchange.
    kinds = [type(e).__name__ for e in model.events]
    assert kinds == ["ConnectionOpened"] + ["FrameSeen", "ExchangeCompleted"] * 2


def test_a_released_payload_that_is_not_json_keeps_what_its_message_says() -> None:
    """Its message holds no string to take a blob out of, and says where the JSON broke, in
    the payload's bytes: typed again from a shorter text it would say another place."""
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    raw = (
        b'{"id": "q", "method": "scene.import", "params": {"mesh": "' + b"B" * 300_000 + b'"} oops'
    )
    s.request(1, "scene.import", {}, 0.1, raw=raw)
    events = as_the_tap_publishes(s.events)
    model = SessionModel(GOLEM, payload_budget=PayloadBudget(keep=0))
    model.apply(events)
    (flow,) = model.flows
    assert flow.request is not None and released(flow.request) is not None
    original = next(e for e in events if isinstance(e, FrameSeen))
    assert flow.request.message == original.message


def mesh_answers(count: int, numbers: int = 2 * BULK_NUMBERS) -> list[Event]:
    """``count`` calls answered with an array of ``numbers`` integers each: the ``i``th call's
    run from ``i * 100_000``, so a number names the answer that holds it."""
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    for i in range(count):
        request = s.request(1, "mesh.get_vertices", {"id": i}, i + 0.1)
        vertices = list(range(i * 100_000, i * 100_000 + numbers))
        s.respond(request, i + 0.2, result={"tag": f"mesh{i}", "vertices": vertices})
    return s.events


def test_a_kept_answer_of_numbers_holds_them_as_its_payload_only_and_shows_them_whole() -> None:
    # Parsed, 16,384 numbers cost four times their text: the message the row keeps has them
    # elided, the payload is kept (and counted), and what reads the numbers reads the payload.
    events = mesh_answers(2)
    originals = [e for e in events if isinstance(e, FrameSeen) and not e.is_request]
    app = GolemProxyApp(ManualSource(events), GOLEM, "test", payload_budget=PayloadBudget())

    async def body() -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 2)
            model = app.model
            for flow, original in zip(model.flows, originals, strict=True):
                answer = flow.response
                assert answer is not None and released(answer) is None
                assert answer.payload == original.payload and answer.elided > 0
                assert answer.message.obj["result"] == {  # type: ignore[attr-defined]
                    "tag": original.message.obj["result"]["tag"],  # type: ignore[attr-defined]
                    "vertices": [f"<{2 * BULK_NUMBERS} numbers elided>"],
                }
                assert model.status(flow) == "ok"
            assert model.payload_budget is not None
            assert model.payload_budget.kept == sum(len(o.payload) for o in originals)
            model.set_filter("~s 100007")
            assert [model.flows[i].number for i in model.view] == [2]
            model.set_filter("")
            await select(pilot, 1)
            shown = app.detail.query_one("#response-tree", Tree).root.data
            assert shown == json.loads(originals[1].payload)  # whole: a tree to expand

    run(body())


def test_a_kept_answer_of_numbers_over_1_mib_is_shown_whole_and_a_redacted_one_kept_whole() -> None:
    # Over 1 MiB (the tap's threshold for blobs) the pane still reads the numbers whole; a
    # redacted frame keeps its message as the tap made it: a view writes it (`w`) from there.
    events = mesh_answers(1, numbers=250_000)
    answer = next(e for e in events if isinstance(e, FrameSeen) and not e.is_request)
    assert len(answer.payload) > ELIDE_FRAMES_OVER
    app = GolemProxyApp(ManualSource(events), GOLEM, "test", payload_budget=PayloadBudget())

    async def body() -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 1)
            (flow,) = app.model.flows
            assert flow.response is not None and flow.response.elided > 0
            await select(pilot, 0)
            shown = app.detail.query_one("#response-tree", Tree).root.data
            assert shown == json.loads(answer.payload)

    run(body())
    given: list[Event] = []
    for event in mesh_answers(1):
        if isinstance(event, FrameSeen):
            event = dataclasses.replace(event, redacted=("result.tag",))
        elif isinstance(event, ExchangeCompleted):
            request = dataclasses.replace(event.request, redacted=("result.tag",))
            response = dataclasses.replace(event.response, redacted=("result.tag",))
            event = dataclasses.replace(event, request=request, response=response)
        given.append(event)
    model = SessionModel(GOLEM, payload_budget=PayloadBudget())
    model.apply(given)
    (flow,) = model.flows
    assert flow.response is not None and flow.response.elided == 0
    vertices = flow.response.message.obj["result"]["vertices"]  # type: ignore[attr-defined]
    assert len(vertices) == 2 * BULK_NUMBERS


def test_a_released_answer_of_numbers_says_so_once() -> None:
    app = GolemProxyApp(
        ManualSource(mesh_answers(2)), GOLEM, "test", payload_budget=PayloadBudget(keep=0)
    )

    async def body() -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 2)
            await select(pilot, 1)
            text = " ".join(app.detail.text().split())
            assert text.count("payload released from memory") == 1
            assert f"<{2 * BULK_NUMBERS} numbers elided>" in text

    run(body())


def test_the_flows_a_body_search_may_have_decided_wrongly_are_counted() -> None:
    # Released over the budget, an answer of numbers keeps them elided only, and a capture
    # its base64: each is counted when what the filter looks for may lie in what was elided.
    # A filter set before they came read them whole, before the budget let them go: those
    # are not counted until the filter reads them again.
    model = SessionModel(GOLEM, payload_budget=PayloadBudget(keep=0))
    model.set_filter("~s 100007 | needle")
    model.apply(mesh_answers(2) + captures(2, 300_000))
    assert len(released_flows(model)) == 4
    assert [model.flows[i].number for i in model.view] == [2]  # found while it was whole
    assert not model.skimmed.numbers
    model.set_filter("~s 100007 | needle")
    # The meshes for their numbers; the captures for their base64, which may hold "needle".
    assert list(model.view) == [] and sorted(model.skimmed.numbers) == [1, 2, 3, 4]
    # Only the flows whose passing could turn on what was elided: not those another term
    # decides whatever they hold, nor captures for a text no base64 holds.
    for text, counted in [
        ("!(~m mesh & ~slow 1)", []),  # reads no body
        ("~q 100007", []),  # the numbers are in the answers
        ("~m scene & 100007", []),  # no mesh passes ~m scene
        ("~m mesh & 100007", [1, 2]),
        ("~m mesh | 100007", [3, 4]),  # every mesh passes; base64 may hold 100007
        ("!~s 100007", [1, 2, 3, 4]),  # each shown, and might not be
        ("~s mesh1", [1, 2, 3, 4]),  # a match in what was kept may be a placeholder's text
        ("~s mesh1 | ~m mesh", [3, 4]),
        ('"cap0 x"', [1, 2]),  # a space: in no base64
        ('~s "AAAA A"', [1, 2]),
        ("~s AAAAAAAAAAAAAAAA", [1, 2, 3, 4]),
        ('~s "bytes elided"', [1, 2, 3, 4]),  # the placeholder's text
        ("~s cap.", [1, 2, 3, 4]),  # a regex: it may match anything
        ("~m capture & AAAA", [3, 4]),
    ]:
        model.set_filter(text)
        assert sorted(model.skimmed.numbers) == counted, text
