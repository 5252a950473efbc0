"""What a view keeps of a large frame's message once its payload is not in memory: the message
with its bulk left out.

Two kinds of bulk make a frame large. A blob: a long opaque string (a viewport capture's PNG,
a mesh as base64), which costs about its own size once parsed. And a long array of numbers (a
mesh's vertices and faces, a point cloud), which costs several times its size once parsed: a
float is a 24-byte object behind an 8-byte pointer where its text was 8 to 10 bytes, so 500 KB
of numbers held as a message costs about 2 MB. A view that lets a frame's payload go (released
over the live TUI's budget, or left in the recording, `golem_proxy.tui.payloads`) keeps the
message for the row, the detail pane and the filters; that message must then hold neither.

Blobs are found in the payload's bytes, as the live tap finds them in a frame over 1 MiB
(`elide_long_strings`); arrays of numbers in the parsed message, where no string can hide
one. Each is replaced by a placeholder that keeps its kind: a string stays a string
(``"<N bytes elided>"``), an array stays an array of one string (``["<N numbers elided>"]``).
What the message says of its envelope (its id, method, result or error, ``isError``,
``success``) is never bulk, so an outcome decided on the skeleton is the outcome decided on
the whole message.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from golem_core.messages import Malformed, Message, Role, elide_long_strings
from golem_core.profiles import Profile

from ..events import Direction, FrameSeen
from ..json_levels import array_levels
from ..live.tap_parse import ELIDE_STRINGS_OVER, OPAQUE_SCAN

__all__ = [
    "BULK_NUMBERS",
    "DEEPEST",
    "holds_elided_numbers",
    "without_bulk",
    "without_number_arrays",
]

BULK_NUMBERS = 8192
"""An array holding this many numbers or more (in arrays nested in it too, as a mesh's
``[[x, y, z], …]``) is bulk: about 64 KiB of text, the size from which a string is a blob."""
DEEPEST = 32
"""Arrays of numbers are looked for this many levels deep into a message, no deeper (a mesh's
lie four to six levels down): each array looked at is walked to its end, so a walk of every
level of a hostile nesting 1,000 deep cost its size a thousand times over."""


def without_bulk(frame: FrameSeen, profile: Profile) -> tuple[Message, int]:
    """``frame``'s message with its bulk elided, typed again by ``profile`` from what is left,
    and how many bytes were elided in all (a blob's as in the payload, an array's as written
    compactly); its own message when it has no bulk (or none: a payload that is not JSON
    keeps its message, which holds no string, and whose account of where the JSON broke
    counts the payload's bytes). A frame the live tap typed with its blobs elided keeps
    those; its arrays of numbers are elided too. A whole message whose skeleton would read
    differently (its id, method, malformation or, for an answer, its outcome: an id of 64 KiB
    of base64, a version that is an object of numbers) is kept whole."""
    whole = message = frame.message
    if isinstance(message, Malformed) and message.obj is None:
        return message, frame.elided
    role = Role.REQUEST if frame.direction is Direction.C2S else Role.RESPONSE
    elided = frame.elided
    if not elided:
        skeleton, elided = elide_long_strings(frame.payload, ELIDE_STRINGS_OVER, OPAQUE_SCAN)
        if elided:
            message = profile.parse(skeleton, role)
    obj, numbers = without_number_arrays(message.obj, message=True)
    if numbers:
        message = profile.parse_decoded(obj, role)
    if message is not whole and not frame.elided and not _reads_alike(whole, message, profile):
        return whole, 0
    return message, elided + numbers


def _reads_alike(whole: Message, skeleton: Message, profile: Profile) -> bool:
    """Whether what views and readers decide from a message is the same on its skeleton."""
    if type(whole) is not type(skeleton):
        return False
    for name in ("id", "method", "kind", "detail"):
        if getattr(whole, name, None) != getattr(skeleton, name, None):
            return False
    if isinstance(whole, Malformed) or getattr(whole, "method", None) is not None:
        return True
    return profile.outcome(None, whole) == profile.outcome(None, skeleton)


def without_number_arrays(
    value: Any, smallest: int = BULK_NUMBERS, *, message: bool = False
) -> tuple[Any, int]:
    """``value`` (decoded JSON) with each array of ``smallest`` numbers or more (nested arrays
    of numbers included) replaced by ``["<N numbers elided>"]``, and the bytes those arrays
    take written compactly; ``value`` itself when there is none. Only the containers on the
    way to an elided array are copied; the rest is shared. Nothing deeper than `DEEPEST`
    levels is looked at. With ``message``, ``value`` is a message: of its own members only
    ``params``, ``result`` and ``error`` are looked into (`_WALKED_MEMBERS`), the first two
    may be elided whole, and ``value`` itself is never."""
    return _without(value, smallest, DEEPEST, whole=not message, envelope=message)


_WHOLE_MEMBERS = frozenset({"params", "result"})
_WALKED_MEMBERS = frozenset({"params", "result", "error"})
"""A message's own members looked into: an id, a version or a method of the wrong type is
named, value and all, in what its outcome says; an error object by its code and message."""


def _without(
    value: Any, smallest: int, depth: int, *, whole: bool = True, envelope: bool = False
) -> tuple[Any, int]:
    """``whole``: ``value`` itself may be elided; ``envelope``: it is the message."""
    if depth <= 0:
        return value, 0
    if isinstance(value, dict):
        changed: dict[Any, Any] = {}
        elided = 0
        for key, item in value.items():
            if isinstance(item, (dict, list)) and (not envelope or key in _WALKED_MEMBERS):
                may = not envelope or key in _WHOLE_MEMBERS
                kept, count = _without(item, smallest, depth - 1, whole=may)
                if count:
                    changed[key] = kept
                    elided += count
        return ({**value, **changed}, elided) if elided else (value, 0)
    if not isinstance(value, list):
        return value, 0
    if whole:
        numbers = _numbers_in(value)
        if numbers >= smallest:
            return [f"<{numbers} numbers elided>"], _written_size(value)
        if numbers >= 0:  # numbers only, too few to be bulk
            return value, 0
    items: list[Any] = value
    elided = 0
    for at, item in enumerate(value):
        if isinstance(item, (dict, list)):
            kept, count = _without(item, smallest, depth - 1)
            if count:
                if items is value:
                    items = list(value)
                items[at] = kept
                elided += count
    return items, elided


def _numbers_in(array: list[Any]) -> int:
    """How many numbers ``array`` holds, counting those of the arrays nested in it; -1 when
    it holds anything else (a string, an object, null, a boolean)."""
    count = 0
    for level, kinds in array_levels(array):
        if not kinds <= _NUMBERS_OR_ARRAYS:
            return -1
        if list not in kinds:
            count += len(level)
        elif kinds != {list}:  # numbers beside arrays
            count += sum(type(item) is not list for item in level)
    return count


_NUMBERS_OR_ARRAYS = {int, float, list}


def _written_size(array: list[Any]) -> int:
    try:
        return len(orjson.dumps(array))
    except TypeError:  # an integer past 64 bits: orjson refuses it
        return len(json.dumps(array, separators=(",", ":")))


_NUMBERS_ELIDED = re.compile(r"<[0-9]+ numbers elided>")


def holds_elided_numbers(value: Any, depth: int = DEEPEST + 1) -> bool:
    """Whether ``value`` (a skeleton's JSON) holds an array of numbers `without_bulk` elided:
    what a view would want to see again, where a blob's base64 it would not."""
    if depth <= 0:
        return False
    if isinstance(value, dict):
        return any(holds_elided_numbers(item, depth - 1) for item in value.values())
    if isinstance(value, list):
        if len(value) == 1 and isinstance(value[0], str) and _NUMBERS_ELIDED.fullmatch(value[0]):
            return True
        return any(holds_elided_numbers(item, depth - 1) for item in value)
    return False
