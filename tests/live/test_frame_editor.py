"""Editing a frame by hand (`golem_proxy.live.frame_editor`): what is sent after an edit, and
a real ``$EDITOR`` (a small shell script that rewrites the file) run on a frame."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from golem_proxy.live.frame_editor import (
    EditorError,
    edit_in_editor,
    editor_command,
    encode_like,
    frame_text,
    sent_bytes,
)
from tests.support.cli_helpers import editor_script

GOLEM_STYLE = b'{"id": "a1", "method": "scene.create_layer", "params": {"name": "W\\u00e9"}}'
COMPACT = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"\xc3\xa9"}}'


def test_a_frame_left_as_shown_is_sent_as_it_came() -> None:
    shown = frame_text(GOLEM_STYLE)
    assert sent_bytes(GOLEM_STYLE, shown, shown + "\n") == GOLEM_STYLE


@pytest.mark.parametrize("original", [GOLEM_STYLE, COMPACT])
def test_a_changed_value_keeps_the_original_encoding(original: bytes) -> None:
    shown = frame_text(original)
    value = json.loads(original)
    value["params"]["extra"] = "ü"
    edited = json.dumps(value, indent=2, ensure_ascii=False)
    sent = sent_bytes(original, shown, edited)
    assert json.loads(sent) == value
    assert b"\n" not in sent
    if original is GOLEM_STYLE:  # Python's defaults, non-ASCII escaped: as the plugin writes
        assert sent == json.dumps(value).encode()
    else:  # compact and UTF-8, as serde_json writes
        assert sent == json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def test_a_changed_layout_is_sent_as_written() -> None:
    shown = frame_text(GOLEM_STYLE)
    edited = '{"id":"a1","method":"scene.create_layer","params":{"name":"X"}}\n'
    assert sent_bytes(GOLEM_STYLE, shown, edited) == edited.strip().encode()


def test_an_edit_that_is_not_json_is_refused() -> None:
    with pytest.raises(ValueError):
        sent_bytes(GOLEM_STYLE, frame_text(GOLEM_STYLE), "{not json")


def test_the_encoding_of_a_frame_no_style_reproduces_is_guessed() -> None:
    odd = b'{"id": 1,  "x": 2}'  # two spaces: no encoder writes that
    assert encode_like(odd, {"id": 2}) == b'{"id": 2}'
    assert encode_like(b"not json", {"id": 2}) == b'{"id":2}'


def test_editor_command_is_split_as_a_shell_would() -> None:
    assert editor_command({"EDITOR": "code --wait"}) == ["code", "--wait"]
    assert editor_command({"EDITOR": "'/opt/my editor/ed'"}) == ["/opt/my editor/ed"]
    assert editor_command({"EDITOR": "  "}) is None
    assert editor_command({}) is None


def test_a_real_editor_changes_a_value(tmp_path: Path) -> None:
    editor = editor_script(tmp_path, "sed -i 's/scene.create_layer/scene.list_layers/' \"$1\"")
    result = edit_in_editor(GOLEM_STYLE, [editor])
    assert result.changed
    assert result.payload == GOLEM_STYLE.replace(b"scene.create_layer", b"scene.list_layers")


def test_an_editor_that_fails_sends_nothing(tmp_path: Path) -> None:
    editor = editor_script(tmp_path, "echo '{}' > \"$1\"; exit 3")
    result = edit_in_editor(GOLEM_STYLE, [editor])
    assert result.payload is None and not result.changed


def test_an_editor_that_leaves_no_json_keeps_the_text(tmp_path: Path) -> None:
    editor = editor_script(tmp_path, "echo '{broken' > \"$1\"")
    with pytest.raises(EditorError, match="not JSON") as raised:
        edit_in_editor(GOLEM_STYLE, [editor])
    kept = str(raised.value).split("kept in ")[1].rstrip(")")
    assert Path(kept).read_text() == "{broken\n"
    os.unlink(kept)


def test_an_editor_that_cannot_start_is_named(tmp_path: Path) -> None:
    with pytest.raises(EditorError, match="cannot run \\$EDITOR"):
        edit_in_editor(GOLEM_STYLE, [str(tmp_path / "no-such-editor")])
