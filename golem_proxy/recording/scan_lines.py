"""What the fast scanner (`scan`) takes from a recording's bytes beside its pattern: the
names it decodes once each, and the number of the line an error is in."""

from __future__ import annotations

from typing import Any

from .schema import RecordingError

__all__ = ["Names", "line_at"]


class Names(dict):  # type: ignore[type-arg]
    """Route, method and type names decoded once each (``None`` stays ``None``)."""

    def __init__(self) -> None:
        super().__init__({None: None})

    def __missing__(self, raw: bytes) -> str:
        try:
            name = self[raw] = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise RecordingError("a name is not UTF-8") from None
        return name


def line_at(buffer: Any, offset: int) -> int:
    """The number of the line of ``buffer`` (the whole file) that ``offset`` is in."""
    # Only on the way to an error: counted in slices (a memory map has no count()).
    step = 1 << 24
    before = sum(
        bytes(buffer[start : min(start + step, offset)]).count(b"\n")
        for start in range(0, offset, step)
    )
    return before + 1
