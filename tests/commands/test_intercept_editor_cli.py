"""``edit N`` in the intercept console with ``$EDITOR`` set: the held frame opens in the
editor (here a shell script that rewrites the file), the edit is sent in the frame's own
compact encoding, and the proxy relays meanwhile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golem_proxy.events import FrameSeen
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import editor_script
from tests.support.plugin_fixture import plugin_fixture

from .test_intercept_cli import (
    HOLD_CREATE_LAYER,
    InterceptingProxy,
    create_layer_in_background,
    holding_create_layer,
    plugin_layers,
)

plugin = plugin_fixture(seed=17)


def test_edit_n_opens_the_editor_on_the_held_frame(
    plugin: PluginProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The script turns the red layer blue, as a user would in their editor.
    rewrite = 's/"r": 255/"r": 0/; s/"b": 0/"b": 255/'
    editor = editor_script(tmp_path, f"sed -i '{rewrite}' \"$1\"")
    monkeypatch.setenv("EDITOR", editor)
    record = tmp_path / "session.jsonl"
    proxy = holding_create_layer(plugin, record)
    try:
        params = {"name": "Blue", "color": {"r": 255, "g": 0, "b": 0}}
        thread, done, held = create_layer_in_background(proxy, params, "--id", "b1")
        proxy.type(f"edit {held}")
        thread.join(30)
        assert done and done[0].returncode == 0, done
        proxy.wait_for(rf"#{held}: edit")
    finally:
        proxy.stop()
    blue = [x for x in plugin_layers(plugin) if x["full_path"] == "Blue"]
    assert blue[0]["color"] == {"r": 0, "g": 0, "b": 255, "a": 255}
    frames = [
        e
        for e in read_recording(str(record)).events
        if isinstance(e, FrameSeen) and e.method == "scene.create_layer"
    ]
    # One line, with the reference client's separators: the edit kept the frame's encoding.
    sent = json.loads(frames[0].payload)
    assert sent["params"]["color"] == {"r": 0, "g": 0, "b": 255}
    assert frames[0].payload == json.dumps(sent).encode()


def test_an_editor_that_fails_leaves_the_frame_held(
    plugin: PluginProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDITOR", editor_script(tmp_path, "exit 1"))
    upstream = f"{plugin.main.host}:{plugin.main.port}"
    proxy = InterceptingProxy(
        "--route", f"127.0.0.1:0={upstream}", "--intercept", HOLD_CREATE_LAYER,
    )  # fmt: skip
    try:
        thread, done, held = create_layer_in_background(proxy, {"name": "Kept"})
        proxy.type(f"edit {held}")
        proxy.wait_for(rf"#{held} not edited: the editor exited with an error \(still held\)")
        proxy.type(f"accept {held}")
        thread.join(30)
        assert done and done[0].returncode == 0, done
    finally:
        proxy.stop()
