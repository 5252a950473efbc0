"""Editing in the TUI: `e` on a held frame and `E` (edit, then send again) open ``$EDITOR``
when it is set (here a shell script that rewrites the file), the in-app editor otherwise;
`Y` copies the `golem-proxy call` command line that sends a recorded request again."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import TextArea

from golem_proxy.analysis.filters import parse_filter
from golem_proxy.net.addresses import Address
from golem_proxy.testing.client import GolemClient
from golem_proxy.tui.screens.edit_frame import EditFrame
from tests.support.cli_helpers import editor_script

from .helpers import intercepting_source, live_app, recording_app, run, select_method, wait_for

ROOT = Path(__file__).resolve().parents[2]


async def send_ping_again(pilot: Pilot[None]) -> None:
    """`E` on the recorded ping: edit it, then send it again."""
    await select_method(pilot, "ping")
    await pilot.press("E")


def test_edit_and_send_again_in_editor(
    demo_path: str, plugin: Address, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    editor = editor_script(tmp_path, 'sed -i \'s/"ping"/"scene.list_layers"/\' "$1"')
    monkeypatch.setenv("EDITOR", editor)

    async def body() -> None:
        async with recording_app(demo_path, (120, 40), resend_target=plugin) as (app, pilot):
            await send_ping_again(pilot)
            await wait_for(pilot, lambda: app.last_resend is not None, limit=4000)
            assert app.last_resend is not None
            resent = app.last_resend.resent
            assert resent.method == "scene.list_layers"
            assert "layers" in json.loads(resent.response)["result"]

    run(body(), timeout=60)


def test_edit_and_send_again_in_the_app(demo_path: str, plugin: Address) -> None:
    async def body() -> None:
        async with recording_app(demo_path, (120, 40), resend_target=plugin) as (app, pilot):
            await send_ping_again(pilot)
            await wait_for(pilot, lambda: isinstance(app.screen, EditFrame))
            editor = app.screen.query_one(TextArea)
            editor.text = editor.text.replace('"ping"', '"scene.list_layers"')
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: app.last_resend is not None, limit=4000)
            assert app.last_resend is not None
            assert app.last_resend.resent.method == "scene.list_layers"

    run(body(), timeout=60)


def test_an_editor_left_unchanged_sends_nothing(
    demo_path: str, plugin: Address, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDITOR", editor_script(tmp_path, "true"))

    async def body() -> None:
        async with recording_app(demo_path, (120, 40), resend_target=plugin) as (app, pilot):
            await send_ping_again(pilot)
            await wait_for(
                pilot,
                lambda: any("nothing sent" in n.message for n in app._notifications),
            )
            assert app.last_resend is None

    run(body(), timeout=60)


def test_e_on_a_held_frame_opens_the_editor(
    plugin: Address, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    editor = editor_script(tmp_path, 'sed -i \'s/"Red"/"Edited"/\' "$1"')
    monkeypatch.setenv("EDITOR", editor)
    hold = parse_filter(r"~q & ~m ^scene\.create_layer$")
    source, control, _ = intercepting_source(plugin, hold)
    results: list[Any] = []

    def client(listen: int) -> None:
        with GolemClient("127.0.0.1", listen) as golem:
            results.append(golem.send_command("scene.create_layer", {"name": "Red"}))

    async def body() -> None:
        async with live_app(source, control) as (app, pilot, listen):
            worker = threading.Thread(target=client, args=(listen,))
            worker.start()
            panel = app.held_panel
            await wait_for(pilot, lambda: bool(panel.held), limit=4000)
            original = panel.held[0].payload
            await wait_for(pilot, lambda: panel.has_focus)
            await pilot.press("e")
            await wait_for(pilot, lambda: len(results) == 1, limit=4000)
            worker.join(10)
            assert results[0]["full_path"] == "Edited"
            await wait_for(
                pilot, lambda: any(f.method == "scene.create_layer" for f in app.model.flows)
            )
            flow = next(f for f in app.model.flows if f.method == "scene.create_layer")
            assert flow.request is not None
            # Only the value changed: the frame went out in its own encoding.
            assert flow.request.payload == original.replace(b'"Red"', b'"Edited"')

    try:
        run(body(), timeout=60)
    finally:
        source.stop()


def test_copy_as_call_writes_a_command_that_works(
    demo_path: str, plugin: Address, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOLEM_PROXY_COMMAND", raising=False)
    copied: list[str] = []

    async def body() -> None:
        async with recording_app(demo_path, (120, 40), resend_target=plugin) as (app, pilot):
            await select_method(pilot, "scene.list_objects")
            await pilot.press("Y")
            await wait_for(pilot, lambda: bool(app._notifications))
            notice = list(app._notifications)[-1].message
            assert "copied to the clipboard and written to " in notice
            copied.append(Path(notice.split("written to ")[1]).read_text())
            assert app.clipboard == copied[0].rstrip("\n")

    run(body(), timeout=60)
    command = shlex.split(copied[0])
    assert command[:3] == ["golem-proxy", "call", "scene.list_objects"]
    assert command[-2:] == ["--target", str(plugin)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "golem_proxy", *command[1:]],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "objects" in json.loads(done.stdout)


def test_copy_as_call_names_the_connection_upstream_and_quotes_params(demo_path: str) -> None:
    async def body() -> None:
        async with recording_app(demo_path, (120, 40)) as (app, pilot):
            await select_method(pilot, "viewport.capture")
            await pilot.press("Y")
            await wait_for(pilot, lambda: bool(app.clipboard))
            words = shlex.split(app.clipboard)
            assert words[-2:] == ["--target", "127.0.0.1:9876"]
            assert json.loads(words[3])["view_name"] == "Perspective"

    run(body(), timeout=60)
