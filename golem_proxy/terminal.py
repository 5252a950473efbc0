"""Text for a terminal: what the peers and the recordings say, made safe to print, and the one
way sizes and latencies are written.

Everything a peer or a recording controls (methods, ids, error messages, parameters, file
names inside a trace) passes through `safe_text` before it reaches a terminal: control
characters would otherwise let a frame rewrite the operator's screen or window title
(``\\x1b]0;…``), and a lone surrogate (legal in JSON, not in UTF-8) would make the write raise.
Rich output built from such text uses `rich.text.Text` (never markup strings), so ``[red]`` in
a method name stays literal.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

__all__ = ["counted", "format_latency", "format_size", "preview_json", "safe_lines", "safe_text"]

# C0 controls, DEL, C1 controls, lone surrogates, the line/paragraph separators that some
# terminals treat as newlines, and the bidirectional controls (marks, embeddings, overrides,
# isolates): a peer's U+202E would otherwise reverse what follows it on the line, so a table's
# columns, or the text of a value, read other than they are. Tab is escaped too: a value is
# shown on one line.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029{_BIDI}]")
# The same, newline excepted: for text whose lines are ours (indented JSON, where a newline
# inside a string is always written as the escape \n).
_UNSAFE_KEEPING_LINES = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029{_BIDI}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\x1b"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(text: str, limit: Optional[int] = None) -> str:
    """``text`` with every control character (bidirectional ones included) and lone surrogate
    written as a visible escape (``\\x1b``, ``\\n``, ``\\udfff``, ``\\u202e``), so it prints
    as one inert line and always encodes as UTF-8. With ``limit``, at most that many
    characters of the result, ending in ``…`` when cut."""
    # Escaping only ever lengthens text, so the first ``limit`` characters decide the result:
    # a megabyte-long error message costs as much as a short one.
    cut = limit is not None and len(text) > limit
    if cut:
        text = text[:limit]
    if _UNSAFE.search(text) is not None:
        text = _UNSAFE.sub(_escape, text)
    if limit is not None and (cut or len(text) > limit):
        text = text[: max(limit - 1, 0)] + "…"
    return text


def safe_lines(text: str) -> str:
    """``text`` made safe as `safe_text` does (no limit), its newlines kept as line breaks."""
    if _UNSAFE_KEEPING_LINES.search(text) is not None:
        text = _UNSAFE_KEEPING_LINES.sub(_escape, text)
    return text


def preview_json(value: Any, limit: int) -> str:
    """The start of ``value`` as JSON (``json.dumps`` style, non-ASCII kept), made safe by
    `safe_text` and cut to ``limit`` characters. The encoding stops once ``limit`` is reached,
    so a preview of a frame with millions of elements costs microseconds, not seconds."""
    pieces: list[str] = []
    length = 0
    try:
        # iterencode's pure-Python encoder yields piece by piece (json.dumps encodes it all).
        for piece in json.JSONEncoder(ensure_ascii=False).iterencode(value):
            pieces.append(piece)
            length += len(piece)
            if length > limit:
                break
    except (TypeError, ValueError, RecursionError):
        pieces.append("…")  # not JSON, or nested deeper than the encoder goes: show the start
    return safe_text("".join(pieces), limit)


def counted(count: int, noun: str, plural: Optional[str] = None, *, grouped: bool = False) -> str:
    """A count and its noun, singular for exactly one: ``1 flow``, ``2 flows``, ``0 flows``
    (``plural`` when adding an ``s`` is wrong: ``counted(2, "match", "matches")``). ``grouped``
    writes thousands with commas: ``12,345 flows``."""
    number = f"{count:,}" if grouped else str(count)
    return f"{number} {noun if count == 1 else plural or noun + 's'}"


def format_size(size: Optional[int], *, compact: bool = False) -> str:
    """``512 B``, ``1.5 KiB``, ``2.3 MiB``, ``1.1 GiB``; ``-`` for a missing size. ``compact``
    (for narrow table columns) writes at most five characters: ``512B``, ``1.5K``, ``15.2K``,
    ``152K``, ``2.3M``."""
    if size is None:
        return "-"
    if size < 1024:
        return f"{size}B" if compact else f"{size} B"
    scaled = float(size)
    for unit in ("KiB", "MiB", "GiB"):
        scaled /= 1024
        if scaled < 1024 or unit == "GiB":
            if not compact:
                return f"{scaled:.1f} {unit}"
            return f"{scaled:.0f}{unit[0]}" if scaled >= 99.95 else f"{scaled:.1f}{unit[0]}"
    raise AssertionError("unreachable")


def format_latency(seconds: Optional[float], *, compact: bool = False) -> str:
    """``850 µs``, ``12.3 ms``, ``1.24 s``; ``-`` for a missing latency. ``compact`` (for
    narrow table columns) drops the space and keeps three significant digits: ``850µs``,
    ``12.3ms``, ``474ms``, ``1.24s``, ``12.3s``."""
    if seconds is None:
        return "-"
    space = "" if compact else " "
    if seconds < 0.001:
        return f"{seconds * 1e6:.0f}{space}µs"
    if seconds < 1:
        milliseconds = seconds * 1e3
        if compact and milliseconds >= 99.95:
            return f"{milliseconds:.0f}ms"
        return f"{milliseconds:.1f}{space}ms"
    if compact and seconds >= 9.995:
        return f"{seconds:.0f}s" if seconds >= 99.95 else f"{seconds:.1f}s"
    return f"{seconds:.2f}{space}s"
