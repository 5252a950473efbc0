"""The live TUI's bound on flows (golem_proxy/tui/flow_bound.py): past it the oldest settled
flows are let go, a chunk at a time; pending and marked flows stay; the view, the event log,
find, `w`, tool-call grouping and the cursor stay right; and every view says how many went
and where they are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.widgets import Static

from golem_core.profiles import GOLEM, MCP
from golem_proxy.events import (
    BytesDiscarded,
    ConnectionOpened,
    Direction,
    Event,
    ExchangeCompleted,
    FrameSeen,
)
from golem_proxy.live.attribution import ToolCallTracker
from golem_proxy.recording.format import read_recording
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.flow_bound import FlowBound
from golem_proxy.tui.model import SessionModel
from tests.support.frames import frame_seen
from tests.support.sessions import SessionBuilder

from .helpers import ManualSource, run, select, wait_for


def calls(
    s: SessionBuilder, first: int, count: int, method: str = "ping", conn: int = 1
) -> list[Event]:
    """``count`` answered calls of ``method`` on connection ``conn``, tagged from ``first``
    on; returns (and takes from ``s``) their events."""
    for i in range(first, first + count):
        request = s.request(conn, method, {"tag": f"t{i}"}, float(i))
        s.respond(request, i + 0.5, result={"tag": f"t{i}"})
    events, s.events = s.events, []
    return events


def test_the_bound_holds_and_a_pending_request_is_still_answered(tmp_path: Path) -> None:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    waiting = s.request(1, "scene.list_objects", {"tag": "waiting"}, 0.1)
    bound = FlowBound(keep=20, recording="session.jsonl")
    model = SessionModel(GOLEM, flow_bound=bound)
    model.apply(s.events)
    s.events = []
    for first in range(1, 100, 9):
        result = model.apply(calls(s, first, 9))
        assert len(model.flows) <= 20
        assert sorted(result.changed) == sorted(set(result.changed))
        assert all(0 <= index < len(model.flows) for index in result.changed)
    assert bound.let_go == 99 + 1 - len(model.flows)
    assert bound.note() == f"{bound.let_go} older flows let go from memory " + (
        "(the recording holds them: session.jsonl)"
    )
    # The oldest, pending, stays; the others are the newest, in order.
    numbers = [flow.number for flow in model.flows]
    assert numbers[0] == 1 and numbers[1:] == list(range(101 - len(numbers) + 1, 101))
    assert list(model.view) == list(range(len(model.flows)))
    assert all(model.index_of(flow) == i for i, flow in enumerate(model.flows))
    s.respond(waiting, 200.0, result={"tag": "answered"})
    result = model.apply(s.events)
    assert result.changed == {0} and not model.flows[0].pending
    # A view written out holds the flows kept, every one whole, and their connection.
    saved = model.view_to_save()
    assert saved.flows == len(model.flows) and saved.let_go == bound.let_go
    kinds = [type(event).__name__ for event in saved.events]
    assert kinds.count("ExchangeCompleted") == len(model.flows) and kinds[0] == "ConnectionOpened"


def test_marked_flows_stay_and_find_and_filters_see_only_the_flows_kept() -> None:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    model = SessionModel(GOLEM, flow_bound=FlowBound(keep=10))
    model.apply(calls(s, 0, 5))
    assert model.toggle_mark(2)  # flow 3
    model.apply(calls(s, 5, 30, "scene.get_object_info"))
    assert len(model.flows) <= 10
    assert model.flows[0].number == 3 and model.flows[0].marked
    assert model.find('"t2"', 0) == 0  # the marked one, searched through its payload
    assert model.find('"t4"', 0) is None  # let go
    position = model.find("t34", 0)
    assert position is not None and model.flows[model.view[position]].number == 35
    model.set_filter("~marked")
    assert [model.flows[i].number for i in model.view] == [3]
    model.set_filter("~m get_object_info")
    assert len(model.view) == len(model.flows) - 1


def _frame(
    profile: Any, conn: int, route: str, direction: Direction, index: int, obj: Any
) -> FrameSeen:
    asks = direction is Direction.C2S
    return frame_seen(
        profile,
        direction,
        index,
        json.dumps(obj).encode(),
        conn=conn,
        route=route,
        expects_answer=asks,
        answers=None if asks else index,
    )


def _exchange(profile: Any, request: FrameSeen, response: FrameSeen) -> ExchangeCompleted:
    return ExchangeCompleted(
        conn=request.conn,
        route=request.route,
        request=request,
        response=response,
        outcome=profile.outcome(request.message, response.message),
    )


def tool_call_causing(count: int) -> tuple[list[Event], list[Event]]:
    """A ``tools/call`` that causes ``count`` GOLEM calls: the events up to its answer, and
    its answer and exchange."""
    tracker = ToolCallTracker(MCP)
    params = {"name": "create_box", "arguments": {"width": 2}}
    call = _frame(
        MCP,
        1,
        "mcp",
        Direction.C2S,
        0,
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": params},
    )
    tracker.watch(call)
    events: list[Event] = [call]
    for i in range(count):
        obj = {"id": f"u{i}", "method": "geometry.create_box", "params": {}}
        request = tracker.annotate(_frame(GOLEM, 2, "main", Direction.C2S, i, obj))
        answer = {"id": f"u{i}", "result": {}, "error": None}
        response = tracker.annotate(_frame(GOLEM, 2, "main", Direction.S2C, i, answer))
        events += [request, response, _exchange(GOLEM, request, response)]
    result = {"content": [{"type": "text", "text": "done"}]}
    answer = _frame(MCP, 1, "mcp", Direction.S2C, 0, {"jsonrpc": "2.0", "id": 4, "result": result})
    tracker.watch(answer)
    return events, [answer, _exchange(MCP, call, answer)]


def test_a_tool_call_counts_the_golem_flows_it_caused_that_were_let_go() -> None:
    before, answer = tool_call_causing(30)
    model = SessionModel(GOLEM, flow_bound=FlowBound(keep=10))
    model.apply(before)
    call = model.flows[0]
    assert call.pending and call.method == "tools/call"
    kept = model.caused_by(call)
    assert len(kept) == len(model.flows) - 1
    assert model.caused_let_go(call) == 30 - len(kept)
    assert model.toggle_fold(0)  # folded: its GOLEM rows leave the view
    assert list(model.view) == [0]
    model.apply(answer)
    assert not call.pending
    golem = SessionBuilder(check=False)
    golem.open(3, 0.0)
    model.apply(calls(golem, 0, 20, conn=3))
    # The call went with its GOLEM flows: nothing is left folded away under no row.
    assert model.index_of(call) is None
    assert model.folded == set() and len(model.view) == len(model.flows)


def test_the_app_says_what_was_let_go_and_keeps_the_cursor_on_its_flow(
    tmp_path: Path,
) -> None:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    source = ManualSource(calls(s, 0, 15))
    bound = FlowBound(keep=20, recording="session.jsonl")
    app = GolemProxyApp(source, GOLEM, "test", flow_bound=bound)

    async def body() -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            model = app.model
            await wait_for(pilot, lambda: len(model.flows) == 15)
            await select(pilot, 2)  # flow 3: the cursor rests there, not following
            await pilot.press("m")
            await select(pilot, 10)
            on = model.flows[10]
            app.buffer.push_many(calls(s, 15, 10))  # 25 flows: down to 18, 7 let go
            await wait_for(pilot, lambda: bound.let_go > 0)
            await wait_for(pilot, lambda: "let go from memory" in app.status_bar.text)
            assert f"{bound.let_go} older flows let go from memory" in app.status_bar.text
            assert bound.note() in app.banner.text
            assert "(the recording holds them: session.jsonl)" in app.banner.text
            assert app.selected_flow() is on and app.detail.flow is on
            assert bound.let_go == 7
            assert [flow.number for flow in model.flows] == [3, *range(9, 26)]
            assert model.flows[0].marked
            # Find wraps around the flows kept, and finds none of those let go.
            await pilot.press("ctrl+f", *"t8", "enter")
            await wait_for(pilot, lambda: app.selected_flow() is model.flows[1])
            await pilot.press("ctrl+f", "backspace", "backspace", *"t5", "enter")
            await wait_for(
                pilot,
                lambda: any("No flow contains 't5'" in str(n.message) for n in app._notifications),
            )
            assert app.selected_flow() is model.flows[1]
            saved = tmp_path / "view.jsonl"
            await pilot.press("w")
            await pilot.press("ctrl+a", "ctrl+k", *str(saved), "enter")
            await wait_for(
                pilot, lambda: any("Wrote" in str(n.message) for n in app._notifications)
            )
            (notice,) = [str(n.message) for n in app._notifications if "Wrote" in str(n.message)]
            assert notice == (
                f"Wrote {len(model.flows)} flows ({3 * len(model.flows) + 1} events) to {saved}; "
                f"{bound.let_go} older flows let go from memory before it, not in it "
                "(the recording holds them: session.jsonl)"
            )
            recording = read_recording(str(saved))
            assert len(recording.exchanges()) == len(model.flows)
            assert "7 older flows let go from memory" in recording.header.extra["left_out"]
            await pilot.press("escape", "s")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "StatsScreen")
            title = str(app.screen.query_one("#stats-title", Static).content)
            assert title.startswith(
                "Statistics of all flows kept; 7 older flows let go from memory (the recording "
                "holds them: session.jsonl): 18 flows"
            )

    run(body())


def test_a_tool_calls_detail_says_how_many_of_its_golem_flows_were_let_go() -> None:
    before, _ = tool_call_causing(30)
    bound = FlowBound(keep=10)
    app = GolemProxyApp(ManualSource(before), GOLEM, "test", flow_bound=bound)

    async def body() -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: bound.let_go > 0 and len(app.model.flows) <= 10)
            await select(pilot, 0)
            gone = app.model.caused_let_go(app.model.flows[0])
            assert gone > 0
            text = " ".join(app.detail.text().split())
            assert (
                f"↳ {gone} GOLEM flows it caused let go from memory (not recorded: they are gone)"
                in text
            )
            assert (
                f"{bound.let_go} older flows let go from memory (not recorded: they are gone)"
                in (app.banner.text)
            )

    run(body())


def test_the_events_kept_are_those_of_the_flows_kept_in_their_order() -> None:
    """The event log lets go of the events of the flows let go, and of the events of no
    flow before them; a connection's open stays, and what follows is as it came."""
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    s.events.append(
        BytesDiscarded(conn=1, route="main", direction=Direction.C2S, raw=b"x", final=False, t=0.0)
    )
    early = calls(s, 0, 12)  # with the open and the discarded bytes before them
    late_discard = BytesDiscarded(
        conn=1, route="main", direction=Direction.C2S, raw=b"y", final=False, t=99.0
    )
    late = [*calls(s, 12, 3), late_discard]
    model = SessionModel(GOLEM, flow_bound=FlowBound(keep=10))
    model.apply(early)
    model.apply(late)
    kept = {flow.number for flow in model.flows}
    assert len(kept) < 15
    numbered = {id(event): number for number, event in _numbered(early + late)}
    expected = [
        event
        for event in early + late
        if isinstance(event, ConnectionOpened)
        or event is late_discard
        or numbered.get(id(event)) in kept
    ]
    assert model.events == expected


def _numbered(events: list[Event]) -> list[tuple[int, Event]]:
    """Each frame and exchange of a run of whole calls with the number of its flow."""
    found = []
    number = 0
    for event in events:
        if isinstance(event, FrameSeen) and event.answers is None:
            number += 1
        if isinstance(event, (FrameSeen, ExchangeCompleted)):
            found.append((number, event))
    return found
