"""Editing a frame's JSON by hand: in the user's ``$EDITOR`` when it is set, and the rule
both the TUI's in-app editor and ``$EDITOR`` follow for the bytes sent afterwards.

The frame is shown pretty-printed (one member a line). What comes back is sent

- as the original bytes when the text was left as it was shown;
- in the original's encoding (its separators and escaping: GOLEM's ``", "``/``": "``, or a
  compact ``,``/``:``) when only values changed, so an edit does not re-lay out the frame;
- as written when the user changed the layout (a frame on one line, other spacing).

Used by the TUI (``e`` on a held frame, ``E`` on a recorded request) and by the intercept
console (``edit N``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Optional

import trio

from ..recording.files import private_temp_file
from .intercept import InterceptEngine

__all__ = [
    "EditorError",
    "EditorResult",
    "console_edit",
    "edit_in_editor",
    "editor_command",
    "encode_like",
    "frame_text",
    "sent_bytes",
]

MAX_EDITED = 64 * 1024 * 1024
"""Bytes read back from the editor's file at most (a frame larger than this is refused)."""

_STYLES = (
    ((", ", ": "), True),
    ((",", ":"), True),
    ((", ", ": "), False),
    ((",", ":"), False),
)
"""The encodings a frame is compared with: separators, and whether non-ASCII is escaped."""


class EditorError(Exception):
    """The editor could not run, or what it left is not a frame (the message says which and
    where the text was kept)."""


@dataclass(frozen=True)
class EditorResult:
    """What an editor session gave: ``payload`` to send (the original when the text was
    left as it was), or None when the user cancelled (the editor exited with an error)."""

    payload: Optional[bytes]
    changed: bool
    """``payload`` differs from the frame as it came."""


def editor_command(environ: Mapping[str, str] = os.environ) -> Optional[list[str]]:
    """The user's ``$EDITOR`` as a command (split as a shell would: ``code --wait`` is two
    words), or None when it is unset or blank."""
    value = environ.get("EDITOR", "").strip()
    if not value:
        return None
    try:
        words = shlex.split(value)
    except ValueError:  # an unbalanced quote: take it as one program name
        words = [value]
    return words or None


def frame_text(payload: bytes) -> str:
    """The frame as the user edits it: pretty JSON, or its text when it is not JSON."""
    try:
        return json.dumps(json.loads(payload), indent=2, ensure_ascii=False)
    except ValueError:
        return payload.decode("utf-8", "replace")


def encode_like(original: bytes, value: Any) -> bytes:
    """``value`` as JSON in the encoding of ``original`` (a frame's payload): the separators
    and escaping that reproduce it, else spacing guessed from it, non-ASCII escaped only
    when the original is all ASCII."""
    try:
        decoded = json.loads(original)
    except ValueError:
        decoded = None
    else:
        for separators, ascii_only in _STYLES:
            if json.dumps(decoded, separators=separators, ensure_ascii=ascii_only).encode(
                "utf-8"
            ) == original.strip(b" \t\r\n"):
                return _dumps(value, separators, ascii_only)
    spaced = b'": ' in original or b", " in original
    separators = (", ", ": ") if spaced else (",", ":")
    return _dumps(value, separators, original.isascii())


def _dumps(value: Any, separators: tuple[str, str], ascii_only: bool) -> bytes:
    return json.dumps(value, separators=separators, ensure_ascii=ascii_only).encode("utf-8")


def sent_bytes(original: bytes, shown: str, edited: str) -> bytes:
    """The payload to send after the user turned ``shown`` (the text they were given for the
    frame ``original``) into ``edited``. Raises ValueError when ``edited`` is not JSON."""
    if edited.rstrip() == shown.rstrip():
        return original
    value = json.loads(edited)
    if edited.strip() == json.dumps(value, indent=2, ensure_ascii=False):
        return encode_like(original, value)
    # The user laid it out their own way: theirs is what they mean to send (an editor's
    # final newline is not part of it).
    return edited.strip().encode("utf-8")


def edit_in_editor(payload: bytes, command: list[str], *, name: str = "frame") -> EditorResult:
    """Open ``command`` on the frame (pretty JSON in a private temporary file) and wait for
    it (in this thread: a caller with a loop to keep running calls it from a worker).
    Returns the bytes to send (see `sent_bytes`), or a None payload when the editor exited
    with an error. Raises EditorError when the editor cannot be started or the text left is
    not JSON (the file is then kept, and named)."""
    shown = frame_text(payload)
    stream, path = private_temp_file(f"{name}-", ".json")
    with stream:
        stream.write((shown + "\n").encode("utf-8"))
    keep = False
    try:
        try:
            status = subprocess.call([*command, path])
        except OSError as exc:
            raise EditorError(f"cannot run $EDITOR {shlex.join(command)} ({exc})") from None
        if status != 0:
            return EditorResult(None, False)
        with open(path, "rb") as edited_file:
            data = edited_file.read(MAX_EDITED + 1)
        if len(data) > MAX_EDITED:
            keep = True
            raise EditorError(f"the edited frame is over {MAX_EDITED:,} bytes (kept in {path})")
        edited = data.decode("utf-8", "replace")
        try:
            sent = sent_bytes(payload, shown, edited)
        except ValueError as exc:
            keep = True
            raise EditorError(f"the edited frame is not JSON: {exc} (kept in {path})") from None
        return EditorResult(sent, sent != payload)
    finally:
        if not keep:
            with contextlib.suppress(OSError):
                os.unlink(path)


_EDIT_ALONE = re.compile(r"\s*(?:edit|e)\s+#?([0-9]{1,12})\s*$")
"""ASCII digits, as many as a frame number may have (the console's own rule)."""


async def console_edit(
    line: str, engine: InterceptEngine, command: Optional[list[str]]
) -> tuple[str, Optional[str]]:
    """The intercept console's ``edit N`` typed without JSON, when ``$EDITOR`` (``command``)
    is set and frame N is held: runs the editor on it in a worker thread (the proxy keeps
    relaying) and returns ``("edit N JSON", None)``, the command to run in its place. Any
    other line comes back as it is; ``(line, note)`` when the edit came to nothing (the
    note says why, and nothing is to be run)."""
    found = _EDIT_ALONE.match(line)
    if found is None or command is None:
        return line, None
    number = int(found.group(1))
    held = [frame for frame in engine.held() if frame.id == number]
    if not held:
        return line, None  # the console says that no such frame is held
    payload = held[0].payload
    try:
        result = await trio.to_thread.run_sync(
            partial(edit_in_editor, payload, command, name=f"held-{number}")
        )
    except EditorError as exc:
        return line, f"#{number} not edited: {exc}"
    if result.payload is None:
        return line, f"#{number} not edited: the editor exited with an error (still held)"
    if not result.changed:
        return line, f"#{number} left as it was (still held)"
    return f"edit {number} {result.payload.decode('utf-8', 'replace')}", None
