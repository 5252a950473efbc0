"""The detail pane kept on the selected row while rows arrive: whatever the pace holds back (a
large payload, at most once a second while a stream is followed), the pane never shows one
row's detail under another's selection. Its summary and small payloads are drawn the moment
the row is selected; a large payload says it is loading until it is drawn."""

from __future__ import annotations

import re
from typing import Any, Optional

import pytest
from textual.pilot import Pilot

from golem_core.profiles import GOLEM
from golem_proxy.events import Event
from golem_proxy.tui import pace
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.widgets.detail import DRAWN_AT_ONCE_UP_TO
from tests.support.sessions import SessionBuilder, _capture_base64

from .helpers import TIMEOUT, ManualSource, run, wait_for

ROWS = 6
BLOB = DRAWN_AT_ONCE_UP_TO + 1024
"""Characters of an answer too large to draw at once."""


def exchanges(count: int, blob: int = 0, image: str = "") -> list[list[Event]]:
    """``count`` answered calls on one connection, the events of each exchange apart (the
    first opens the connection); each answer holds ``blob`` characters (and ``image``, a
    capture's base64 PNG, when given)."""
    builder = SessionBuilder()
    builder.open(1, 0.0)
    each = []
    for n in range(count):
        request = builder.request(1, "scene.list_objects", {"n": n}, n * 0.1)
        result: dict[str, Any] = {"n": n, "blob": "x" * blob}
        if image:
            result["image"] = image
        builder.respond(request, n * 0.1 + 0.05, result=result)
        each.append(list(builder.events))
        builder.events = []
    return each


def held_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every batch after the first streams, and what the pace holds back for a followed
    stream or a racing cursor is held for longer than any test runs: a pane that waits for
    the pace shows the previous row all along."""
    monkeypatch.setattr(pace, "STREAM_SPELL", TIMEOUT * 10)
    monkeypatch.setattr(pace, "DETAIL_STREAM_INTERVAL", TIMEOUT * 10)
    monkeypatch.setattr(pace, "DETAIL_DELAY", TIMEOUT * 10)


def shown_row(app: GolemProxyApp) -> Optional[int]:
    """The row number the detail pane's summary names (None: no flow shown)."""
    found = re.match(r"#(\d+) ", app.detail.text())
    return int(found.group(1)) if found else None


def selected_row(app: GolemProxyApp) -> Optional[int]:
    flow = app.selected_flow()
    return flow.number if flow is not None else None


async def until_selected(
    pilot: Pilot[Any], app: GolemProxyApp, number: int, states: list[tuple[Any, ...]]
) -> None:
    """Let the app run until row ``number`` is selected, noting at every step the selected
    row and the one the detail names."""
    for _ in range(2000):
        states.append((selected_row(app), shown_row(app)))
        if selected_row(app) == number:
            return
        await pilot.pause(0.005)
    raise AssertionError(f"row {number} never selected: {states[-5:]}")


def test_following_a_stream_the_detail_names_each_new_row_the_moment_it_is_selected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held_back(monkeypatch)
    each = exchanges(ROWS)
    source = ManualSource(each[0])

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "test", stream_interval=0.01)
        states: list[tuple[Any, ...]] = []
        async with app.run_test(size=(160, 40)) as pilot:
            await until_selected(pilot, app, 1, states)
            for n in range(1, ROWS):
                app.buffer.push_many(each[n])
                await until_selected(pilot, app, n + 1, states)
                # Small payloads are drawn whole at once: the request is this row's.
                text = app.detail.text()
                assert f'"n": {n}' in text, text
                assert "loading…" not in text
                assert app.detail.complete
        wrong = [(on, shown) for on, shown in states if on is not None and on != shown]
        assert not wrong, f"(selected, detail) while rows arrived: {states}"

    run(body())


def test_a_large_answer_is_said_to_be_loading_never_the_previous_row_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held_back(monkeypatch)
    each = exchanges(3, blob=BLOB)
    source = ManualSource(each[0])

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "test", stream_interval=0.01)
        states: list[tuple[Any, ...]] = []
        async with app.run_test(size=(160, 40)) as pilot:
            await until_selected(pilot, app, 1, states)
            await wait_for(pilot, lambda: "Response ←" in app.detail.text())
            assert "loading…" not in app.detail.text()  # the first is drawn whole
            for n in (1, 2):
                app.buffer.push_many(each[n])
                await until_selected(pilot, app, n + 1, states)
                text = app.detail.text()
                assert f'"n": {n}' in text  # its small request, whole
                response = text[text.index("Response ←") :]
                assert response.splitlines()[0].endswith("loading…"), response
                assert '"blob"' not in response  # nothing of another row's answer
                assert not app.detail.complete
        wrong = [(on, shown) for on, shown in states if on is not None and on != shown]
        assert not wrong, f"(selected, detail) while rows arrived: {states}"

    run(body())


def test_a_small_capture_passing_by_is_not_decoded_and_says_its_image_is_loading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held_back(monkeypatch)
    each = exchanges(3, image=_capture_base64())
    source = ManualSource(each[0])

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "test", stream_interval=0.01)
        states: list[tuple[Any, ...]] = []
        async with app.run_test(size=(160, 40)) as pilot:
            await until_selected(pilot, app, 1, states)
            await wait_for(pilot, lambda: "Image  96x60 PNG" in app.detail.text())
            for n in (1, 2):
                app.buffer.push_many(each[n])
                await until_selected(pilot, app, n + 1, states)
                text = app.detail.text()
                assert f'"n": {n}' in text[text.index("Response ←") :]  # its answer, whole
                assert "Image: loading…" in text and "Image  96x60" not in text
                assert not app.detail.complete
                assert not [w for w in app.workers if w.group == "capture" and w.is_running]
        wrong = [(on, shown) for on, shown in states if on is not None and on != shown]
        assert not wrong, f"(selected, detail) while rows arrived: {states}"

    run(body())


def test_moving_by_hand_while_rows_arrive_the_detail_names_the_row_moved_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held_back(monkeypatch)
    each = exchanges(ROWS + 3)
    source = ManualSource([event for events in each[:ROWS] for event in events])

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "test", stream_interval=0.01)
        states: list[tuple[Any, ...]] = []
        async with app.run_test(size=(160, 40)) as pilot:
            await until_selected(pilot, app, ROWS, [])
            for n, key in enumerate(("up", "up", "down")):
                await pilot.press(key)
                states.append((selected_row(app), shown_row(app)))
                app.buffer.push_many(each[ROWS + n])  # rows keep arriving under the cursor
                arrived = ROWS + n + 1
                await wait_for(pilot, lambda arrived=arrived: len(app.model.flows) == arrived)
                states.append((selected_row(app), shown_row(app)))
        assert [on for on, _ in states] == [5, 5, 4, 4, 5, 5]
        assert [shown for _, shown in states] == [5, 5, 4, 4, 5, 5], "the rows the detail named"

    run(body())


def test_what_was_left_loading_is_drawn_once_the_cursor_rests() -> None:
    each = exchanges(3, blob=BLOB, image=_capture_base64())
    source = ManualSource([event for events in each for event in events])

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "test")
        async with app.run_test(size=(160, 40)) as pilot:
            await wait_for(pilot, lambda: shown_row(app) == 3 and app.detail.complete)
            await pilot.press("up", "up")  # the second, within the pace, drawn loading first
            assert shown_row(app) == 1
            await wait_for(pilot, lambda: app.detail.complete)
            text = app.detail.text()
            assert shown_row(app) == 1 and "loading…" not in text
            assert f'"blob": "{"x" * 20}' in text[text.index("Response ←") :]
            await wait_for(pilot, lambda: "Image  96x60 PNG" in app.detail.text())

    run(body())
