"""How a live log line meets its output: folded between its fields to a terminal's width
(never inside a number and its unit), and whether the output is somewhere other than our
stderr (then a wrapped server's stderr is written into the log too)."""

from __future__ import annotations

import os
import re

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

__all__ = ["apart_from_stderr", "fold_fields"]

# What a folded line's continuation is indented by.
_INDENT = "    "
# The words a folded line is made of, with the spaces after them: a number keeps the word
# after it (its unit: "17 µs", "60 B", "2.5 MiB").
_PIECE = re.compile(r"\S+(?:(?<=\d) \S+)*\s*")


def apart_from_stderr(console: Console) -> bool:
    """Whether ``console`` writes to a file other than our stderr (False when that cannot be
    told: a stream without a descriptor)."""
    fd = getattr(console.file, "fd", None)  # a `TerminalOutput`
    if fd is None:
        try:
            fd = console.file.fileno()
        except (AttributeError, OSError, ValueError):
            return False
    try:
        return not os.path.samestat(os.fstat(fd), os.fstat(2))
    except (OSError, TypeError):
        return False


def fold_fields(line: Text, width: int, console: Console) -> Text:
    """``line`` folded to ``width`` cells between its words, continuation lines indented. A
    number keeps its unit (``17 µs``, ``60 B``); a word wider than a line wraps as rich
    wraps it."""
    pieces = [line[m.start() : m.end()] for m in _PIECE.finditer(line.plain)]
    room = max(width - len(_INDENT), 10)
    lines: list[Text] = []
    current = Text()
    for piece in pieces:
        if current.cell_len and current.cell_len + cell_len(piece.plain.rstrip()) > width:
            current.rstrip()
            lines.append(current)
            current = Text(_INDENT)
        if current.cell_len + piece.cell_len > width and current.plain == _INDENT:
            *whole, current = [Text(_INDENT) + part for part in piece.wrap(console, room)]
            lines.extend(whole)
            continue
        current.append_text(piece)
    current.rstrip()
    lines.append(current)
    return Text("\n").join(lines)
