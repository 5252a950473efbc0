"""How ``call`` and ``resend`` print the answer a server gave: a success's result as indented
JSON, an error with its code's registry name, a malformed answer with its kind.

An answer is hostile input of any size. Indented JSON is written as it is encoded, in batches,
so printing costs a small multiple of the answer however large it is; it is highlighted only
when it is short and standard output is a terminal (highlighting holds the whole text and its
styles in memory, and nobody reads colours in a pipe). Every line is made inert (`safe_lines`):
a value cannot move the cursor or retitle the window.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.highlighter import JSONHighlighter
from rich.text import Text

from golem_core.messages import ABSENT, ErrorResponse, Malformed, Message, Response
from golem_core.profiles import Profile

from ..terminal import safe_lines, safe_text
from ._common import CommandError

__all__ = ["HIGHLIGHT_MAX_CHARS", "malformed_line", "print_answer", "write_json"]

HIGHLIGHT_MAX_CHARS = 64 * 1024
"""Indented JSON up to this many characters is highlighted on a terminal; longer is streamed."""

_BATCH_CHARS = 64 * 1024


def print_answer(message: Message, profile: Profile, out: Console) -> None:
    """Print ``message`` (an answer, as the profile classified it) on ``out``."""
    if isinstance(message, Response):
        write_json(message.result, out)
        return
    if isinstance(message, ErrorResponse):
        error = message.error
        name = profile.registry.name_of(error.code)
        code = safe_text(str(error.code), 80)
        label = code if name == str(error.code) else f"{safe_text(name, 80)} ({code})"
        line = Text("error ", style="bold red")
        line.append(label, style="bold red")
        line.append(f": {safe_text(str(error.message))}")
        out.print(line, soft_wrap=True)
        for member, value in (("details", error.details), ("data", error.data)):
            if value is not ABSENT:
                out.print(Text(f"{member}:", style="dim"))
                write_json(value, out)
        return
    assert isinstance(message, Malformed)
    out.print(malformed_line(message), soft_wrap=True)


def malformed_line(message: Malformed) -> Text:
    """``malformed answer (KIND): detail``, one inert line."""
    line = Text("malformed answer ", style="bold magenta")
    line.append(f"({message.kind.value}): {safe_text(message.detail)}")
    return line


def write_json(value: Any, out: Console) -> None:
    """``value`` as JSON indented by two, non-ASCII kept, ending in a newline. Highlighted
    when ``out`` is a terminal and the text is at most `HIGHLIGHT_MAX_CHARS`; otherwise
    written in batches as it is encoded, so memory stays bounded by the value itself.

    Raises CommandError when the value is nested too deeply for the encoder (what the parser
    accepted always fits; the guard keeps a traceback off the screen)."""
    # iterencode's pure-Python encoder yields token by token: nothing holds the whole text.
    pieces = json.JSONEncoder(indent=2, ensure_ascii=False).iterencode(value)
    try:
        head: list[str] = []
        length = 0
        if out.is_terminal:
            for piece in pieces:
                head.append(piece)
                length += len(piece)
                if length > HIGHLIGHT_MAX_CHARS:
                    break
            else:
                text = Text(safe_lines("".join(head)))
                JSONHighlighter().highlight(text)
                out.print(text, soft_wrap=True)
                return
        _stream(head, pieces, out)
    except RecursionError:
        why = "nested too deeply; --raw writes it"
        raise CommandError("cannot print the answer", why) from None


def _stream(head: list[str], pieces: Any, out: Console) -> None:
    write = out.file.write
    batch = head
    length = sum(len(piece) for piece in batch)
    for piece in pieces:
        batch.append(piece)
        length += len(piece)
        if length >= _BATCH_CHARS:
            write(safe_lines("".join(batch)))
            batch = []
            length = 0
    batch.append("\n")
    write(safe_lines("".join(batch)))
    out.file.flush()
