"""A frame's payload the fast scanner took whole, unparsed, checked as the reader checks its
line (`line_events.event_object`): valid JSON, nested no deeper than the reader takes. orjson
takes only valid JSON, a subset of what the reader takes (it refuses NaN, integers past 64 bits,
lone surrogates): whatever it refuses, the reader's own reading of the line decides, so a line
is refused in the reader's words, and never for less than the reader refuses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from ..json_levels import nests_deeper
from .frame_reading import event_object
from .line_guard import check_line, has_brackets
from .schema import MAX_DEPTH, RecordingError

__all__ = ["as_the_reader", "check_payload"]

_NEAR_DEPTH = MAX_DEPTH - 1
"""The depth a payload may nest to (its line's brace is one more level): a payload with fewer
brackets than this is within it."""


def check_payload(buffer: Any, view: memoryview, start: int, end: int) -> None:
    """Refuse the payload at ``buffer[start:end]`` (``view``: a memoryview of ``buffer``, so
    that it is parsed where it lies) as the reader would refuse its line. Raises
    RecordingError whose ``line`` is the offset of the newline before the line."""
    try:
        value = orjson.loads(view[start:end])
    except orjson.JSONDecodeError:
        as_the_reader(buffer, start, event_object)
        return
    if (
        end - start > _NEAR_DEPTH
        and has_brackets(buffer, _NEAR_DEPTH, start, end)
        and nests_deeper(value, _NEAR_DEPTH)
    ):
        as_the_reader(buffer, start, check_line)


def as_the_reader(buffer: Any, at: int, read: Callable[[bytes], object]) -> None:
    """Read the whole line of ``buffer`` that ``at`` is in with ``read`` (the reader's own
    code). Raises the RecordingError it raises, its ``line`` the offset of the newline before
    the line."""
    newline = buffer.rfind(b"\n", 0, at)
    try:
        read(buffer[newline + 1 : buffer.find(b"\n", at)])
    except RecordingError as exc:
        raise RecordingError(exc.what, line=newline) from None
