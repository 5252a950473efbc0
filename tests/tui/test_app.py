"""The app driven as a user would: open a recording, read the table and the detail pane,
filter, follow, search, mark, copy, save."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from textual.binding import Binding
from textual.widgets import Input

from golem_core.profiles import GOLEM
from golem_proxy.recording.format import read_recording
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.widgets.flows_table import row_cells
from tests.support.sessions import SessionBuilder

from .helpers import ManualSource, recording_app, run, select, wait_for


def rows(app: GolemProxyApp) -> list[tuple[str, ...]]:
    return [row_cells(app.model.flows[i], app.model) for i in app.model.view]


def test_opening_a_recording_fills_the_table_and_the_detail_pane(demo_path: str) -> None:
    async def body() -> None:
        async with recording_app(demo_path) as (app, pilot):
            table = rows(app)
            assert len(table) == 12
            assert table[0][1:] == ("1", "0.002", "main", "1", "ping", "ok", "1.0ms", "82B", "91B")
            assert [r[6] for r in table[6:]] == [
                "INVALID_PARAMS",
                "METHOD_NOT_FOUND",
                "ok",
                "INTERNAL_ERROR",
                "oversized",
                "pending (recording ended)",  # as `show` says of the file: nothing more comes
            ]
            assert table[8][0] == " ▲"  # the contract violation marker
            assert "end of recording" in app.status_bar.text
            # Follow is on: the newest flow is selected and shown.
            assert app.table.follow and app.table.selected == 11
            await wait_for(pilot, lambda: app.detail.flow is app.model.flows[11])
            assert "grasshopper.recompute" in app.detail.text()
            assert "Response ← (none: the recording ended first)" in app.detail.text()
            assert "no answer read before the recording ended (end of recording)" in (
                app.detail.text()
            )
            for _ in range(9):
                await pilot.press("up")
            assert app.table.selected == 2
            # Moves in quick succession are folded into one detail redraw when the cursor rests.
            await wait_for(pilot, lambda: "#3 " in app.detail.text())
            text = app.detail.text()
            assert "#3 scene.get_document_info  ok" in text
            assert "latency 31.0 ms" in text
            assert '"units": "Millimeters"' in text

    run(body())


def test_errors_and_violations_are_shown_with_their_rules(demo_path: str) -> None:
    async def body() -> None:
        async with recording_app(demo_path) as (app, pilot):
            await select(pilot, 8)
            text = app.detail.text()
            assert "Contract violations" in text
            assert "golem.response.explicit-null-error" in text
            assert "error" in text and "$" in text
            await select(pilot, 6)
            assert "INVALID_PARAMS" in app.detail.text()

    run(body())


def test_a_capture_shows_its_image_and_its_base64_is_shortened_until_expanded(
    demo_path: str,
) -> None:
    async def body() -> None:
        async with recording_app(demo_path) as (app, pilot):
            await select(pilot, 5)  # viewport.capture
            await wait_for(pilot, lambda: "Image  96x60 PNG" in app.detail.text())
            assert "▀" * 20 in app.detail.text()
            text = app.detail.text()
            assert "1 long string(s) shortened" in text
            assert '"image": "iVBORw0KGg' in text
            assert re.search(r"… \([\d,]+ chars\)", text)
            await pilot.press("e")
            text = app.detail.text()
            assert "chars)" not in text
            assert "shortened" not in text

    run(body())


def test_malformed_payloads_and_framing_errors_show_a_hex_dump(demo_path: str) -> None:
    async def body() -> None:
        async with recording_app(demo_path) as (app, pilot):
            await select(pilot, 9)
            text = app.detail.text()
            assert "malformed: invalid-json" in text
            assert (
                '00000000  7b 22 69 64 22 3a 20 22  37 22 2c 20 22 6d 65 74  |{"id": "7", "met|'
                in text
            )
            await select(pilot, 10)
            text = app.detail.text()
            assert "Framing error → oversized" in text
            assert "(declared length 2,147,483,647)" in text
            assert "00000000  7f ff ff ff 7b 22 69 64  22 3a" in text

    run(body())


def test_a_large_payload_is_a_tree() -> None:
    s = SessionBuilder()
    s.open(1, 0.0)
    request = s.request(1, "scene.list_objects", {}, 0.1)
    objects = [{"guid": f"g{i}", "layer": "Default"} for i in range(1000)]
    s.respond(request, 0.2, result={"objects": objects})

    async def body() -> None:
        app = GolemProxyApp(ManualSource(s.events), GOLEM, "test")
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.detail.flow is app.model.flows[0])
            assert app.query_one("#response-tree").display
            text = app.detail.text()
            assert "(tree: enter/space to expand)" in text
            assert "result {1}" in text
            tree = app.query_one("#response-tree")
            result = tree.root.children[1]  # type: ignore[attr-defined]
            result.expand()
            await wait_for(pilot, lambda: bool(result.children))
            result.children[0].expand()
            await wait_for(pilot, lambda: "… 500 more" in app.detail.text())
            text = app.detail.text()
            assert "objects [1000]" in text
            assert "… 500 more" in text

    run(body())


def test_filter_valid_and_invalid(demo_path: str) -> None:
    async def body() -> None:
        async with recording_app(demo_path) as (app, pilot):
            await pilot.press("slash", *"~m scene.", "enter")
            assert [r[5] for r in rows(app)] == ["scene.get_document_info", "scene.list_objects"]
            assert "2 of 12 flows  filter: ~m scene." in app.status_bar.text
            assert app.focused is app.table
            await pilot.press("slash", "ctrl+a", "ctrl+k", *"~nonsense", "enter")
            assert "unknown filter" in app.filter_bar.error
            assert [r[5] for r in rows(app)] == ["scene.get_document_info", "scene.list_objects"]
            await pilot.press("ctrl+a", "ctrl+k", "enter")
            assert len(rows(app)) == 12
            assert app.filter_bar.error == ""

    run(body())


def test_escape_gives_up_an_edit_of_the_filter(demo_path: str) -> None:
    async def body() -> None:
        async with recording_app(demo_path) as (app, pilot):
            await pilot.press("slash", *"~m scene.", "enter")
            box = app.filter_bar.query_one("#filter", Input)
            # Typed and given up: the bar shows the filter the table applies, not the draft.
            await pilot.press("slash", "ctrl+a", "ctrl+k", *"~e", "escape")
            assert app.focused is app.table
            assert box.value == "~m scene."
            assert [r[5] for r in rows(app)] == ["scene.get_document_info", "scene.list_objects"]
            # A refused filter given up: its error goes with it.
            await pilot.press("slash", "ctrl+a", "ctrl+k", *"~nonsense", "enter")
            assert "unknown filter" in app.filter_bar.error
            await pilot.press("escape")
            assert box.value == "~m scene." and app.filter_bar.error == ""
            await pilot.press("ctrl+f", *"list", "escape")
            assert app.filter_bar.query_one("#find", Input).value == ""

    run(body())


def test_follow_pauses_when_moving_up_and_resumes_with_f_or_end() -> None:
    def exchanges(first: int, count: int, builder: SessionBuilder) -> None:
        for n in range(first, first + count):
            request = builder.request(1, "ping", {}, n * 0.01)
            builder.respond(request, n * 0.01 + 0.001, result={})

    s = SessionBuilder()
    s.open(1, 0.0)
    exchanges(0, 50, s)

    async def body() -> None:
        app = GolemProxyApp(ManualSource(s.events), GOLEM, "test")
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: app.table.selected == 49)
            status = app.status_bar
            assert "▶ following" in status.text
            await pilot.press("up")
            assert not app.table.follow and app.table.selected == 48
            assert "paused" in status.text
            s.events = []
            exchanges(50, 10, s)
            app.buffer.push_many(s.events)
            await wait_for(pilot, lambda: len(app.model.flows) == 60)
            assert app.table.selected == 48  # paused: the cursor stays put
            await pilot.press("f")
            assert app.table.follow and app.table.selected == 59
            assert app.table.scroll_y == app.table.max_scroll_y
            await pilot.press("home")
            assert not app.table.follow and app.table.scroll_y == 0
            await pilot.press("end")
            assert app.table.follow and app.table.selected == 59

    run(body())


def test_a_pending_request_is_updated_in_place_when_answered() -> None:
    s = SessionBuilder()
    s.open(1, 0.0)
    request = s.request(1, "viewport.zoom_extents", {}, 1.0)

    async def body() -> None:
        app = GolemProxyApp(ManualSource(s.events), GOLEM, "test")
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: app.table.selected == 0)
            assert rows(app)[0][6] == "pending"
            assert "(waiting…)" in app.detail.text()
            s.events = []
            s.respond(request, 1.25, result={"zoomed": True})
            app.buffer.push_many(s.events)
            await wait_for(pilot, lambda: rows(app)[0][6] == "ok")
            assert len(rows(app)) == 1
            assert rows(app)[0][7] == "250ms"
            # The detail pane follows at its own pace while events stream (tui/pace.py).
            await wait_for(pilot, lambda: '"zoomed": true' in app.detail.text())

    run(body())


def test_events_keep_arriving_while_another_screen_is_open() -> None:
    s = SessionBuilder()
    s.open(1, 0.0)

    async def body() -> None:
        app = GolemProxyApp(ManualSource(s.events), GOLEM, "test")
        async with app.run_test(size=(120, 30)) as pilot:
            await pilot.press("s")
            assert type(app.screen).__name__ == "StatsScreen"
            request = s.request(1, "ping", {}, 0.1)
            s.respond(request, 0.2, result={})
            app.buffer.push_many(s.events[1:])
            await wait_for(pilot, lambda: len(app.model.flows) == 1)
            await pilot.press("escape")
            assert rows(app)[0][5:7] == ("ping", "ok")
            await wait_for(pilot, lambda: "#1 ping  ok" in app.detail.text())

    run(body())


def test_search_mark_copy_and_save(demo_path: str, tmp_path: Path) -> None:
    async def body() -> None:
        async with recording_app(demo_path) as (app, pilot):
            await pilot.press("ctrl+f", *"create_", "enter")
            assert app.table.selected == 3
            await pilot.press("n")
            assert app.table.selected == 7
            await pilot.press("N")
            assert app.table.selected == 3
            await pilot.press("m")
            assert app.model.flows[3].marked
            await pilot.press("y")
            notice = list(app._notifications)[-1]
            copied = Path(notice.message.rsplit(" written to ", 1)[1])
            assert notice.message.startswith("Request #4 copied to the clipboard")
            assert '"method"' not in notice.message  # where it went, not the JSON itself
            assert '"method": "creation.create_box"' in copied.read_text()
            assert oct(os.stat(copied).st_mode & 0o777) == "0o600"
            assert app.clipboard == copied.read_text().rstrip("\n")
            await pilot.press("slash", *"~marked", "enter")
            assert [r[5] for r in rows(app)] == ["creation.create_box"]
            saved = tmp_path / "marked.jsonl"
            await pilot.press("w")
            await pilot.press("ctrl+a", "ctrl+k", *str(saved), "enter")
            await wait_for(pilot, lambda: saved.exists() and saved.stat().st_size > 0)
            await wait_for(
                pilot, lambda: any("Wrote 1 flow (" in n.message for n in app._notifications)
            )
            recording = read_recording(str(saved))
            methods = [getattr(e, "method", None) for e in recording.exchanges()]
            assert methods == ["creation.create_box"]

    run(body())


def test_stats_connections_and_help_screens_open_and_close(demo_path: str) -> None:
    async def body() -> None:
        async with recording_app(demo_path) as (app, pilot):
            await pilot.press("s")
            assert type(app.screen).__name__ == "StatsScreen"
            assert app.screen.stats.overall.count == 12  # type: ignore[attr-defined]
            await pilot.press("escape")
            await pilot.press("c")
            assert type(app.screen).__name__ == "ConnectionsScreen"
            await pilot.press("escape")
            await pilot.press("question_mark")
            assert type(app.screen).__name__ == "HelpScreen"
            await pilot.press("escape")
            assert app.screen is app.screen_stack[0]

    run(body())


def test_tab_switches_panes_without_entering_the_filter_and_enter_opens_the_detail(
    demo_path: str,
) -> None:
    async def body() -> None:
        async with recording_app(demo_path, (80, 24)) as (app, pilot):
            assert app.focused is app.table
            for _ in range(6):  # never into a filter box, however often
                await pilot.press("tab")
                assert app.focused in (app.table, app.detail)
            await pilot.press("shift+tab")
            assert app.focused in (app.table, app.detail)
            await pilot.press("escape")
            assert app.focused is app.table
            await select(pilot, 6)
            await pilot.press("enter")
            assert app.focused is app.detail
            assert not app.table.display or app.table.size.height == 0
            assert app.detail.size.height > 15  # the table's room is the detail's
            await pilot.press("escape")
            assert app.focused is app.table and app.table.size.height > 0
            await pilot.press("q")
            await wait_for(pilot, lambda: not app.is_running)

    run(body())


def test_the_help_names_exactly_the_keys_that_are_bound_and_filters_that_parse(
    demo_path: str,
) -> None:
    from golem_proxy.analysis.filters import parse_filter
    from golem_proxy.tui.screens.help import FILTERS, KEYS

    for expression, _ in FILTERS:
        parse_filter(expression)  # raises for a filter that does not exist (like ~v)

    async def body() -> None:
        async with recording_app(demo_path, (80, 24)) as (app, _pilot):
            bound = set(app.active_bindings)
            helped = {key for entry in KEYS for key in entry.keys}
            assert helped <= bound, helped - bound
            # Every key bound on the main screen is explained (the screen's own system keys
            # aside: Textual's ctrl+q and the like).
            ours = {key for key, active in bound_here(app).items() if not active.binding.system}
            assert ours <= helped, ours - helped

    run(body())


def bound_here(app: GolemProxyApp) -> dict[str, Any]:
    """The active bindings that this app or its table define."""
    from golem_proxy.tui.widgets.flows_table import FlowsTable

    mine = set()
    for binding in [*GolemProxyApp.BINDINGS, *FlowsTable.BINDINGS]:
        assert isinstance(binding, Binding)
        mine.update(key.strip() for key in binding.key.split(","))
    return {key: active for key, active in app.active_bindings.items() if key in mine}


def test_the_filter_given_at_start_is_applied_and_shown(demo_path: str) -> None:
    async def body() -> None:
        async with recording_app(demo_path, (80, 24), filter_text="~e") as (app, _pilot):
            assert [r[6] for r in rows(app)] == [
                "INVALID_PARAMS",
                "METHOD_NOT_FOUND",
                "INTERNAL_ERROR",
                "oversized",
            ]
            assert app.query_one("#filter", Input).value == "~e"
            assert "4 of 12 flows  filter: ~e" in app.status_bar.text

    run(body())


def test_a_failure_inside_a_success_result_is_a_failed_row() -> None:
    """The plugin's wrapped handlers answer a failure with a success envelope whose result is
    the error dict: the table says so, styles the row as a failure, and ``~e`` selects it."""
    s = SessionBuilder()
    s.open(1, 0.0)
    s.respond(s.request(1, "ping", {}, 0.1), 0.2, result={"alive": True})
    failed = s.request(1, "operations.boolean_union", {"guids": []}, 0.3)
    error = {"code": "INVALID_PARAMS", "message": "boolean_union requires at least 2 GUIDs."}
    s.respond(failed, 0.4, result=error)
    s.respond(s.request(1, "scripting.execute_python", {}, 0.5), 0.6, result={"success": False})

    async def body() -> None:
        app = GolemProxyApp(ManualSource(s.events), GOLEM, "test")
        async with app.run_test(size=(160, 30)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 3)
            statuses = [r[6] for r in rows(app)]
            assert statuses == ["ok", "INVALID_PARAMS (in result)", "success: false"]
            table = app.table
            failed_style = table.get_component_rich_style("flows-table--failed")
            assert failed_style.color is not None
            for row, is_failure in ((0, False), (1, True), (2, True)):
                strip = table.render_line(row + 1)
                colours = {segment.style.color for segment in strip if segment.style}
                assert (failed_style.color in colours) is is_failure, (row, colours)
            await pilot.press("slash", *"~e", "enter")
            assert [r[6] for r in rows(app)] == statuses[1:]
            await pilot.press("slash", "ctrl+a", "ctrl+k", *"~c INVALID_PARAMS", "enter")
            assert [r[6] for r in rows(app)] == ["INVALID_PARAMS (in result)"]

    run(body())
