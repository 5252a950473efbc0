"""A message's bulk in its decoded JSON: long arrays of numbers (a mesh's vertices and faces, a
point cloud), which cost several times their text once parsed (a float is a 24-byte object
behind an 8-byte pointer where its text was 8 to 10 bytes). Each is replaced by a placeholder
that keeps its kind, an array of one string (``["<N numbers elided>"]``); where that is not
enough, long arrays of anything (``["<N items elided>"]``). `reads_alike` says whether such a
skeleton types as its message does. Read by the views that keep a large frame's message
without its payload (`golem_proxy.tui.skeleton`) and by the recorder, which writes such a
skeleton beside a payload too large for a reader to parse
(`golem_proxy.recording.frame_skeleton`)."""

from __future__ import annotations

import json
import re
from typing import Any, Optional

import orjson

from golem_core.messages import OPAQUE_CHARACTERS, Malformed, Message
from golem_core.profiles import Profile

from .json_levels import array_levels

__all__ = [
    "ANY",
    "BLOB",
    "BULK_NUMBERS",
    "DEEPEST",
    "OPAQUE_TEXT",
    "elided_kinds",
    "holds_elided_numbers",
    "may_lie_in_blob",
    "reads_alike",
    "without_long_arrays",
    "without_number_arrays",
]

BULK_NUMBERS = 8192
"""An array holding this many numbers or more (in arrays nested in it too, as a mesh's
``[[x, y, z], …]``) is bulk: about 64 KiB of text, the size from which a string is a blob."""
DEEPEST = 32
"""Arrays of numbers are looked for this many levels deep into a message, no deeper (a mesh's
lie four to six levels down): each array looked at is walked to its end, so a walk of every
level of a hostile nesting 1,000 deep cost its size a thousand times over."""


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


def without_long_arrays(message: Any, smallest: int = BULK_NUMBERS) -> tuple[Any, int]:
    """`without_number_arrays` of a ``message``, each array of ``smallest`` items or more of
    any other kind (objects, arrays, strings) replaced too, by ``["<N items elided>"]``: what
    is left of a message whose bulk is not numbers (``[{"a": 1}, …]``, ``[[], …]``) once it
    need not be searched, only typed and shown."""
    return _without(message, smallest, DEEPEST, whole=False, envelope=True, items=True)


_WHOLE_MEMBERS = frozenset({"params", "result"})
_WALKED_MEMBERS = frozenset({"params", "result", "error"})
"""A message's own members looked into: an id, a version or a method of the wrong type is
named, value and all, in what its outcome says; an error object by its code and message."""


def _without(
    value: Any,
    smallest: int,
    depth: int,
    *,
    whole: bool = True,
    envelope: bool = False,
    items: bool = False,
) -> tuple[Any, int]:
    """``whole``: ``value`` itself may be elided; ``envelope``: it is the message; ``items``:
    an array long enough is elided whatever it holds."""
    if depth <= 0:
        return value, 0
    if isinstance(value, dict):
        changed: dict[Any, Any] = {}
        elided = 0
        for key, item in value.items():
            if isinstance(item, (dict, list)) and (not envelope or key in _WALKED_MEMBERS):
                may = not envelope or key in _WHOLE_MEMBERS
                kept, count = _without(item, smallest, depth - 1, whole=may, items=items)
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
        if items and len(value) >= smallest:
            return [f"<{len(value)} items elided>"], _written_size(value)
        if numbers >= 0:  # numbers only, too few to be bulk
            return value, 0
    kept_items: list[Any] = value
    elided = 0
    for at, item in enumerate(value):
        if isinstance(item, (dict, list)):
            kept, count = _without(item, smallest, depth - 1, items=items)
            if count:
                if kept_items is value:
                    kept_items = list(value)
                kept_items[at] = kept
                elided += count
    return kept_items, elided


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


BLOB = "blob"
"""`elided_kinds`: a blob elided (``"<N bytes elided>"``), which only a text made of base64-like
characters may lie in (`may_lie_in_blob`)."""
ANY = "any"
"""`elided_kinds`: something elided that any text may lie in (numbers, a long array of
anything, a value a recording's skeleton did not keep or parse), or a nesting too deep to
look through."""

_PLACEHOLDER = re.compile(r"<[0-9]+ (bytes elided|bytes not kept|bytes not parsed)>")
_ARRAY_PLACEHOLDER = re.compile(r"<[0-9]+ (numbers|items) elided>")


def elided_kinds(value: Any, depth: int = DEEPEST + 1) -> frozenset[str]:
    """What ``value`` (a skeleton's JSON: `without_bulk`'s, a live tap's, a recording's
    `frame_skeleton`) has had elided, as keys or values, at any depth: `ANY` once one is
    found (which says enough: the walk stops there), else `BLOB` or neither. Past `DEEPEST`
    levels, `ANY`: a hostile nesting is not walked to its end."""
    found: set[str] = set()
    stack = [(value, depth)]
    while stack and ANY not in found:
        item, left = stack.pop()
        if isinstance(item, str):
            match = _PLACEHOLDER.fullmatch(item)
            if match is not None:
                found.add(BLOB if match.group(1) == "bytes elided" else ANY)
        elif isinstance(item, (dict, list)):
            if left <= 0:
                found.add(ANY)
            elif isinstance(item, dict):
                stack.extend((key, 0) for key in item)
                stack.extend((member, left - 1) for member in item.values())
            elif (
                len(item) == 1
                and isinstance(item[0], str)
                and _ARRAY_PLACEHOLDER.fullmatch(item[0])
            ):
                found.add(ANY)
            else:
                stack.extend((member, left - 1) for member in item)
    return frozenset(found)


OPAQUE_TEXT = OPAQUE_CHARACTERS.decode("ascii")


def may_lie_in_blob(needle: str) -> bool:
    """Whether a match of ``needle`` (searched as text, any case) in a payload may take in part
    of a blob, which a skeleton has elided (`elide_long_strings`: a JSON string of 64 KiB of
    `OPAQUE_CHARACTERS` and more): a needle made of those characters only (``xxxxxxxxxx``,
    ``iVBORw0``, ``width``), or one whose run of them at an end meets a quote there
    (``"data":"iVBOR``, ``AAAA=="``), may lie in or across one; or a match of the
    placeholder's own text (``bytes elided``). A needle with a space, a colon or a brace in
    its middle cannot lie in a blob, where the search of the skeleton missed nothing."""
    if not needle:
        return False
    lead = len(needle) - len(needle.lstrip(OPAQUE_TEXT))
    trail = len(needle) - len(needle.rstrip(OPAQUE_TEXT))
    if lead == len(needle):
        return True
    if (lead and needle[lead] == '"') or (trail and needle[-trail - 1] == '"'):
        return True
    # The placeholder (`"<N bytes elided>"`) with its size as any digits: a match in it is
    # no match in the payload.
    return re.sub(r"[0-9]+", "0", needle.lower()) in '"<0 bytes elided>"'


def reads_alike(whole: Message, skeleton: Message, profile: Profile) -> bool:
    """Whether what views and readers decide from a message is the same on its skeleton: its
    kind, id, method or malformation; for a request, its params' plain members (an MCP
    call's tool); for an answer, its outcome."""
    if type(whole) is not type(skeleton):
        return False
    for name in ("id", "method", "kind", "detail"):
        if getattr(whole, name, None) != getattr(skeleton, name, None):
            return False
    if isinstance(whole, Malformed):
        return True
    if getattr(whole, "method", None) is not None:  # a request: its params' plain members
        kept = _short_plain(getattr(whole, "params", None))
        params = getattr(skeleton, "params", None)
        if kept is None:
            return True
        return isinstance(params, dict) and all(
            key in params and (params[key] is value or params[key] == value)
            for key, value in kept.items()
        )
    return profile.outcome(None, whole) == profile.outcome(None, skeleton)


def _short_plain(params: Any) -> Optional[dict[str, Any]]:
    """A request's params' members that name what it does (an MCP call's tool, a GOLEM
    command's options): its numbers, booleans, nulls and strings shorter than a blob, which
    a skeleton keeps as they are."""
    if not isinstance(params, dict):
        return None
    return {
        key: value
        for key, value in params.items()
        if value is None
        or isinstance(value, (int, float))
        or (isinstance(value, str) and len(value) < _BLOB)
    }


_BLOB = 64 * 1024
"""A string this long or longer may be elided from a skeleton (a blob)."""
