"""Pure formatting for the TUI: times, hex dumps and JSON made readable and safe to show.

Sizes and latencies are written by `golem_proxy.terminal` (the same everywhere); every text a
peer or a recording controls goes through `terminal.safe_text` before it is shown. Nothing
here touches Textual, so every rule about how a value reads is tested on its own.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Optional

from ..analysis.flows import Flow
from ..analysis.tool_calls import two_layer_label
from ..terminal import safe_text

__all__ = [
    "HEXDUMP_LIMIT",
    "LONG_STRING",
    "count_nodes",
    "escape_surrogates",
    "flow_label",
    "fmt_time",
    "hexdump",
    "pretty_json",
    "safe_json",
    "shorten_strings",
]

LONG_STRING = 200
"""Strings longer than this (base64 images from viewport.capture, scripts) are shortened."""


def fmt_time(t: float) -> str:
    """Seconds since the session start: ``12.345`` or ``1:02:03.456`` past an hour; ``?``
    for a time that is not a finite number (a damaged or hostile recording)."""
    if not isinstance(t, (int, float)) or not math.isfinite(t):
        return "?"
    if t < 3600:
        minutes, seconds = divmod(t, 60)
        return f"{int(minutes)}:{seconds:06.3f}" if minutes else f"{seconds:.3f}"
    hours, rest = divmod(t, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{int(hours)}:{int(minutes):02d}:{seconds:06.3f}"


HEXDUMP_LIMIT = 4096
"""Bytes a hex dump shows."""


def hexdump(data: bytes, limit: int = HEXDUMP_LIMIT, size: Optional[int] = None) -> str:
    """A classic hex dump (offset, 16 bytes in hex, ASCII), at most ``limit`` bytes; a last
    line says how many bytes were left out of ``size`` (the whole's, when ``data`` is only
    its start; else its own)."""
    lines = []
    for offset in range(0, min(len(data), limit), 16):
        chunk = data[offset : offset + 16]
        hex_part = " ".join(f"{byte:02x}" for byte in chunk)
        hex_part = hex_part[:23] + " " + hex_part[23:] if len(chunk) > 8 else hex_part
        text = "".join(chr(byte) if 32 <= byte < 127 else "." for byte in chunk)
        lines.append(f"{offset:08x}  {hex_part:<48}  |{text}|")
    size = len(data) if size is None else size
    if size > limit:
        lines.append(f"… {size - limit:,} more bytes")
    if not data:
        lines.append("(no bytes)")
    return "\n".join(lines)


def shorten_strings(obj: Any, limit: int = LONG_STRING) -> tuple[Any, int]:
    """A copy of ``obj`` whose strings longer than ``limit`` are cut to their start plus
    ``… (N chars)``. Returns the copy and how many strings were shortened."""
    count = 0

    def walk(value: Any) -> Any:
        nonlocal count
        if isinstance(value, str) and len(value) > limit:
            count += 1
            return f"{value[:60]}… ({len(value):,} chars)"
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    return walk(obj), count


def pretty_json(obj: Any) -> str:
    """Indented JSON, non-ASCII kept as is (as GOLEM sends it)."""
    return json.dumps(obj, indent=2, ensure_ascii=False)


def safe_json(obj: Any) -> str:
    """`pretty_json`, made inert for a terminal line by line: JSON escapes C0 controls
    itself, but keeps C1 controls, U+2028 and lone surrogates (legal in JSON, not in UTF-8)
    as they are; `safe_text` writes them as visible escapes. The layout's newlines stay."""
    return "\n".join(safe_text(line) for line in pretty_json(obj).split("\n"))


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """JSON text whose lone surrogates (which UTF-8 cannot encode) are written as ``\\udXXX``
    escapes: the same JSON value, now writable to a file or the clipboard."""
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def count_nodes(obj: Any, stop: int) -> int:
    """How many JSON values ``obj`` holds, counting no further than ``stop``."""
    count = 0
    stack = [obj]
    while stack and count < stop:
        value = stack.pop()
        count += 1
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return count


def flow_label(flow: Flow) -> str:
    """The method of a flow (made safe to show), or what stands in for it when there is
    none. In a recording of `golem-proxy mcp`, a tool call reads ``tool(arguments)`` and the
    GOLEM flows it caused ``↳ method`` under it."""
    two_layer = two_layer_label(flow)
    if two_layer is not None:
        return safe_text(two_layer)
    if flow.method:
        return safe_text(flow.method)
    if flow.frame_error is not None:
        return "(frame error)"
    if flow.gap is not None:  # its status says which (unobserved:REASON); no orphan
        return "(gap)"
    if flow.connection_failed is not None or flow.closed_by_proxy is not None:
        return "(connection)"
    if flow.request is not None:
        return "(malformed)"
    return "(orphan response)" if flow.orphan else "(unpaired response)"
