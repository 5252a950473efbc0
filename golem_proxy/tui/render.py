"""Pure formatting for the TUI: sizes, times, latencies, hex dumps and JSON made readable.

Nothing here touches Textual, so every rule about how a value reads is tested on its own.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from ..analysis.flows import Flow

__all__ = [
    "LONG_STRING",
    "count_nodes",
    "flow_label",
    "fmt_latency",
    "fmt_size",
    "fmt_time",
    "hexdump",
    "pretty_json",
    "shorten_strings",
]

LONG_STRING = 200
"""Strings longer than this (base64 images from viewport.capture, scripts) are shortened."""


def fmt_time(t: float) -> str:
    """Seconds since the session start: ``12.345`` or ``1:02:03.456`` past an hour."""
    if t < 3600:
        minutes, seconds = divmod(t, 60)
        return f"{int(minutes)}:{seconds:06.3f}" if minutes else f"{seconds:.3f}"
    hours, rest = divmod(t, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{int(hours)}:{int(minutes):02d}:{seconds:06.3f}"


def fmt_latency(latency: Optional[float]) -> str:
    """``850µs``, ``12.3ms``, ``1.24s``; empty for a missing latency."""
    if latency is None:
        return ""
    if latency < 0.001:
        return f"{latency * 1e6:.0f}µs"
    if latency < 1:
        return f"{latency * 1e3:.1f}ms"
    return f"{latency:.2f}s"


def fmt_size(size: Optional[int]) -> str:
    """``512B``, ``1.5K``, ``2.3M``; empty for a missing size."""
    if size is None:
        return ""
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}K"
    return f"{size / (1024 * 1024):.1f}M"


def hexdump(data: bytes, limit: int = 4096) -> str:
    """A classic hex dump (offset, 16 bytes in hex, ASCII), at most ``limit`` bytes; a last
    line says how many bytes were left out."""
    lines = []
    for offset in range(0, min(len(data), limit), 16):
        chunk = data[offset : offset + 16]
        hex_part = " ".join(f"{byte:02x}" for byte in chunk)
        hex_part = hex_part[:23] + " " + hex_part[23:] if len(chunk) > 8 else hex_part
        text = "".join(chr(byte) if 32 <= byte < 127 else "." for byte in chunk)
        lines.append(f"{offset:08x}  {hex_part:<48}  |{text}|")
    if len(data) > limit:
        lines.append(f"… {len(data) - limit:,} more bytes")
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
    """The method of a flow, or what stands in for it when there is none."""
    if flow.method:
        return flow.method
    if flow.frame_error is not None:
        return "(frame error)"
    return "(malformed)" if flow.request is not None else "(orphan response)"
