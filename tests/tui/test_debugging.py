"""The TUI's debugging keys, driven with the pilot against a live proxy session and the
headless plugin: `i` sets the intercept filter, the held request shows in its panel with its
age, `e` edits it (JSON checked first), `r` sends a flow again and `D` shows the difference;
and `r` on a recording with ``--target``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input, TextArea

from golem_proxy.analysis.filters import parse_filter
from golem_proxy.net.addresses import Address
from golem_proxy.terminal import format_latency
from golem_proxy.testing.client import GolemClient, RhinoTimeoutError
from golem_proxy.tui.bridge import TrioThreadSource
from golem_proxy.tui.screens.edit_frame import EditFrame
from golem_proxy.tui.screens.intercept_prompt import InterceptPrompt
from golem_proxy.tui.screens.resend_diff import ResendDiff
from golem_proxy.tui.widgets.held import HeldPanel

from .helpers import (
    intercepting_source,
    live_app,
    recording_app,
    run,
    select,
    select_method,
    wait_for,
)

FILTER = r"~q & ~m ^scene\.create_layer$"


async def until_stopped(source: TrioThreadSource) -> None:
    for _ in range(1000):
        if source.done.is_set():
            return
        await asyncio.sleep(0.01)


async def submit_refused(pilot: Pilot[None], key: str, error_line: str, reason: str) -> None:
    """Submit the open screen's entry with ``key`` and wait until its ``error_line`` widget
    gives ``reason`` (the entry is refused, the screen stays)."""
    await pilot.press(key)
    await wait_for(pilot, lambda: reason in str(pilot.app.screen.query_one(error_line).render()))


def test_hold_edit_send_and_resend_in_the_tui(plugin: Address) -> None:
    source, control, engine = intercepting_source(plugin)
    results: list[Any] = []

    def client(listen: int) -> None:
        with GolemClient("127.0.0.1", listen) as golem:
            red = {"r": 255, "g": 0, "b": 0}
            results.append(golem.send_command("scene.create_layer", {"name": "W", "color": red}))
            results.append(golem.send_command("scene.list_layers"))

    async def body() -> None:
        async with live_app(source, control) as (app, pilot, listen):
            await pilot.press("i")
            await wait_for(pilot, lambda: isinstance(app.screen, InterceptPrompt))
            prompt = app.screen.query_one(Input)
            prompt.value = "~m ("
            await submit_refused(pilot, "enter", "#intercept-error", "bad filter")
            prompt.value = FILTER
            await pilot.press("enter")
            await wait_for(
                pilot, lambda: engine.filter is not None and str(engine.filter) == FILTER
            )

            worker = threading.Thread(target=client, args=(listen,))
            worker.start()
            panel = app.held_panel
            await wait_for(pilot, lambda: panel.display and len(panel.held) == 1)
            held = panel.held[0]
            assert held.method == "scene.create_layer"
            await wait_for(pilot, lambda: "intercepted" in str(panel.get_row_at(0)[0]))
            panel.focus()
            await pilot.press("e")
            await wait_for(pilot, lambda: isinstance(app.screen, EditFrame))
            editor = app.screen.query_one(TextArea)
            editor.text = "{not json"
            await submit_refused(pilot, "ctrl+s", "#frame-error", "not JSON")
            assert isinstance(app.screen, EditFrame) and len(engine.held()) == 1
            request = json.loads(held.payload)
            request["params"]["color"] = {"r": 0, "g": 0, "b": 255}
            editor.text = json.dumps(request, indent=2)
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: len(results) == 2, limit=4000)
            worker.join(10)
            layers = {layer["name"]: layer for layer in results[1]["layers"]}
            assert layers["W"]["color"] == {"r": 0, "g": 0, "b": 255, "a": 255}
            await wait_for(pilot, lambda: not panel.display)

            # r: the create_layer flow again, on a side connection of the session.
            await wait_for(pilot, lambda: len(app.model.flows) >= 3)
            app.table.focus()
            await select_method(pilot, "scene.create_layer")
            await pilot.press("r")
            await wait_for(pilot, lambda: app.last_resend is not None, limit=4000)
            assert app.last_resend is not None
            assert app.last_resend.resent.request_id != request["id"]
            await wait_for(
                pilot,
                lambda: any(
                    f.conn != app.model.flows[0].conn and f.latency is not None
                    for f in app.model.flows
                ),
            )  # the new flow comes at the end, answered (its answer may come later)
            # The notice and the new row give one latency (in one process, the session's
            # side connection measures it as the proxy does; test_resend_latency.py).
            (again,) = [f for f in app.model.flows if f.conn != app.model.flows[0].conn]
            assert again.latency is not None
            latency = format_latency(app.last_resend.resent.latency)
            assert format_latency(again.latency) == latency
            assert any(f"in {latency} " in note.message for note in app._notifications)
            await pilot.press("D")
            await wait_for(pilot, lambda: isinstance(app.screen, ResendDiff))
            assert isinstance(app.screen, ResendDiff)
            assert "differences (recorded vs now)" in app.screen.text
        await until_stopped(source)

    run(body(), timeout=60)
    assert source.error is None


def test_a_request_sent_again_names_its_row_and_the_row_it_came_from(plugin: Address) -> None:
    # The table keeps rows in the order they came: the copy comes last, far from its
    # original; the notice names the new row and each row's detail names the other.
    source, control, _ = intercepting_source(plugin)
    done = threading.Event()

    def client(listen: int) -> None:
        with GolemClient("127.0.0.1", listen) as golem:
            golem.send_command("scene.list_layers")
            for _ in range(3):
                golem.send_command("scene.get_document_info")
        done.set()

    async def body() -> None:
        async with live_app(source, control) as (app, pilot, listen):
            worker = threading.Thread(target=client, args=(listen,))
            worker.start()
            # The client's ping, then its calls.
            await wait_for(pilot, lambda: done.is_set() and len(app.model.flows) == 5)
            worker.join(10)
            await select_method(pilot, "scene.list_layers")
            origin = app.selected_flow()
            assert origin is not None and origin.number == 2
            await pilot.press("r")
            notice = "flow 2 sent again as #6: "
            await wait_for(pilot, lambda: any(notice in n for n in notes(app)), limit=4000)
            assert app.model.flow_numbered(6).method == "scene.list_layers"
            await wait_for(pilot, lambda: "sent again as #6" in app.detail.text())
            await select(pilot, 5)
            assert app.detail.flow is app.model.flow_numbered(6)
            assert "sent again from #2 (r)" in app.detail.text()
            # Sent again once more: both copies named, each from its original.
            await select(pilot, 1)
            await pilot.press("r")
            await wait_for(pilot, lambda: "sent again as #6, #7" in app.detail.text(), limit=4000)
        await until_stopped(source)

    run(body(), timeout=60)
    assert source.error is None


def notes(app: Any) -> list[str]:
    return [str(note.message) for note in app._notifications]


def test_resend_from_a_recording_with_a_target(demo_path: str, plugin: Address) -> None:
    async def body() -> None:
        async with recording_app(demo_path, (120, 40), resend_target=plugin) as (app, pilot):
            await pilot.press("D")  # nothing sent yet: a notice, no screen
            assert not isinstance(app.screen, ResendDiff)
            await select_method(pilot, "ping")
            await pilot.press("r")
            await wait_for(pilot, lambda: app.last_resend is not None, limit=4000)
            assert app.last_resend is not None
            await pilot.press("D")
            await wait_for(pilot, lambda: isinstance(app.screen, ResendDiff))
            assert isinstance(app.screen, ResendDiff)
            # The demo trace is synthetic: its ping answer differs from the plugin's.
            text = app.screen.text
            assert text.startswith(f"flow {app.last_resend.flow} sent again: ping id ")
            assert "→ ok" in text and "recorded vs now" in text
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, ResendDiff))

    run(body(), timeout=60)


def test_intercept_needs_a_live_session(demo_path: str) -> None:
    async def body() -> None:
        async with recording_app(demo_path, (120, 40)) as (app, pilot):
            await pilot.press("i")
            await pilot.pause()
            assert not isinstance(app.screen, InterceptPrompt)
            await pilot.press("r")
            await pilot.pause()
            assert app.last_resend is None

    run(body())


def test_accept_answer_and_drop_keys_on_held_requests(plugin: Address) -> None:
    source, control, _ = intercepting_source(plugin)
    outcomes: list[str] = []
    all_decided = threading.Event()

    def client(listen: int) -> None:
        with GolemClient("127.0.0.1", listen) as golem:
            control.set_filter(r"~q & ~m ^scene\.")  # after the client's ping
            golem.send_command("scene.get_document_info")
            outcomes.append("accepted")
            # The plugin's not-found answer: a success envelope around its error dict.
            answer = golem.send_command("scene.list_layers")
            outcomes.append(f"answered {answer['code']} in the result")
            try:
                golem.send_command("scene.get_document_info", timeout=0.5)
            except RhinoTimeoutError:
                outcomes.append("dropped")
            # The connection stays open until the panel has shown and dropped the request:
            # closing it lets the held frame go, which a loaded machine could reach before
            # the panel's next poll (twice a second) ever showed it.
            all_decided.wait(30)

    async def body() -> None:
        async with live_app(source, control) as (app, pilot, listen):
            worker = threading.Thread(target=client, args=(listen,))
            worker.start()
            panel = app.held_panel
            decided: set[int] = set()
            for key, done in (("a", 1), ("n", 2), ("d", 3)):
                # The panel polls: wait for the next request, not the one just decided.
                try:
                    await wait_for(
                        pilot,
                        lambda: bool(panel.held) and panel.held[0].id not in decided,
                        limit=4000,
                    )
                except AssertionError:
                    held = [(h.id, h.method) for h in panel.held]
                    raise AssertionError(
                        f"before {key!r}: the client has {outcomes}, held {held}, "
                        f"decided {sorted(decided)}, worker alive {worker.is_alive()}"
                    ) from None
                decided.add(panel.held[0].id)
                await wait_for(pilot, lambda: panel.has_focus)  # it takes the focus itself
                await pilot.press(key)
                if key == "n":
                    await wait_for(pilot, lambda: isinstance(app.screen, EditFrame))
                    prefilled = json.loads(app.screen.query_one(TextArea).text)
                    assert prefilled["error"] is None
                    assert prefilled["result"]["code"] == "OBJECT_NOT_FOUND"
                    assert prefilled["result"]["message"].startswith("Object not found in Rhino")
                    await pilot.press("ctrl+s")
                try:
                    # At least: the dropped call's client gives up after 0.5 s by itself, which
                    # a loaded machine may reach before this sees the answered one.
                    await wait_for(pilot, lambda n=done: len(outcomes) >= n, limit=4000)
                except AssertionError:
                    # Rare under a loaded suite: say where it stood, to find out why.
                    held = [(h.id, h.method) for h in panel.held]
                    raise AssertionError(
                        f"after {key!r}: the client has {outcomes}, held {held}, "
                        f"screen {type(app.screen).__name__}, worker alive "
                        f"{worker.is_alive()}"
                    ) from None
            all_decided.set()
            worker.join(10)
        await until_stopped(source)

    try:
        run(body(), timeout=60)
    finally:
        all_decided.set()
    assert outcomes == ["accepted", "answered OBJECT_NOT_FOUND in the result", "dropped"]


def test_a_stale_emptied_message_leaves_the_focus_on_a_newly_held_frame(plugin: Address) -> None:
    """The panel asks for the focus to go back when it empties, and takes it when a new frame
    heads it; a poll showing the next frame may come before that request is handled. The
    request is stale then, and the held frame keeps the focus (else its keys go to the table
    and `a` marks a flow instead of sending the frame on)."""
    source, control, _ = intercepting_source(plugin, hold=parse_filter("~q & ~m ^scene\\."))
    done = threading.Event()

    def client(listen: int) -> None:
        with GolemClient("127.0.0.1", listen) as golem:
            with contextlib.suppress(RhinoTimeoutError):  # it is held, never answered
                golem.send_command("scene.list_layers", timeout=0.5)
            done.wait(30)

    async def body() -> None:
        async with live_app(source, control) as (app, pilot, listen):
            worker = threading.Thread(target=client, args=(listen,))
            worker.start()
            panel = app.held_panel
            await wait_for(pilot, lambda: bool(panel.held) and panel.has_focus, limit=4000)
            panel.post_message(HeldPanel.Emptied(panel))  # as posted by an earlier poll
            await pilot.pause()  # until the screen's messages, this one among them, are handled
            await pilot.pause()
            assert app.focused is panel
            done.set()
            worker.join(10)
        await until_stopped(source)

    try:
        run(body(), timeout=60)
    finally:
        done.set()
