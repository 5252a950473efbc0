"""Typing a frame's payload fast, and encoding a redacted one back: the tap's parsing helpers,
with what a parse would hold judged before it is made (`TooCostly`)."""

from __future__ import annotations

import json
from typing import Optional

from golem_core.messages import Message, Role, elide_long_strings
from golem_core.profiles import Profile

from ..fast_json import NOT_DECODED, decode_exactly
from ..recording.line_guard import MANY_QUOTES, outside_strings
from .opaque_scan import opaque_scan

__all__ = [
    "ELIDE_FRAMES_OVER",
    "ELIDE_STRINGS_OVER",
    "TooCostly",
    "encode_redacted",
    "parse_fast",
    "parse_for_view",
    "parse_holds",
]

ELIDE_FRAMES_OVER = 1024 * 1024
"""Frames larger than this are typed with their long opaque strings elided (live view only)."""
ELIDE_STRINGS_OVER = 64 * 1024
OPAQUE_SCAN = opaque_scan()
"""How a long string is found opaque: by the C library where it loads (opaque_scan.py)."""


def encode_redacted(profile: Profile, obj: object) -> bytes:
    """The redacted message as a payload. A lone surrogate (legal in JSON as an escape, not
    encodable as UTF-8) stays a ``\\uXXXX`` escape rather than stopping the inspection."""
    try:
        return profile.encode_payload(obj)
    except UnicodeEncodeError:
        return json.dumps(obj, ensure_ascii=True).encode("ascii")


def parse_fast(profile: Profile, payload: bytes, role: Role) -> Message:
    """``profile.parse(payload, role)``, the JSON decoded by orjson where that gives exactly
    what ``json`` gives (fast_json.py); the result is always ``profile.parse``'s."""
    obj = decode_exactly(payload)
    if obj is NOT_DECODED:
        return profile.parse(payload, role)
    return profile.parse_decoded(obj, role)


class TooCostly(Exception):
    """A payload whose parse would hold more than the observation limit allows
    (`ObserveLimits.parse`): ``cost`` bytes, by `parse_holds`."""

    def __init__(self, cost: int) -> None:
        super().__init__(f"its parse would hold about {cost >> 20} MiB")
        self.cost = cost


def parse_for_view(
    profile: Profile, payload: bytes, role: Role, limit: Optional[int] = None
) -> tuple[Message, int]:
    """The message a frame carries, and how many bytes of long strings were left out of it
    (0 but for a frame over `ELIDE_FRAMES_OVER`). A blob (an image, a mesh) is not
    materialised for the live view: the typing and the checks do not depend on its content,
    and the recording keeps its bytes. Raises `TooCostly`, before parsing, when what is
    parsed would hold more than ``limit`` bytes."""
    if len(payload) > ELIDE_FRAMES_OVER:
        text, elided = elide_long_strings(payload, ELIDE_STRINGS_OVER, OPAQUE_SCAN)
        _within(text, limit)
        return profile.parse(text if elided else payload, role), elided
    _within(payload, limit)
    return parse_fast(profile, payload, role), 0


# What a parsed payload holds, in bytes, per structural character of its text: measured with
# tracemalloc on 2 MB payloads of one shape each (arrays of ``[]``, ``{}``, ``[[1]]``,
# ``{"a":1}``, ``"ab"``, objects of three strings; real/estimated 0.36-0.97), and with the
# process's peak on 28 MiB ones. An array is its object, its slots and its slot in its
# parent, an object a dict of a few keys, a string its object (per quote: half of one), an
# element (a comma) its slot and a small number. A number's own object is left out: an
# array of ``1e1`` holds 1.7 times the estimate, ~10 bytes a byte, 320 MiB in a 32 MiB frame.
_ARRAY, _OBJECT, _QUOTE, _ELEMENT = 88, 200, 28, 16
_PARSE = 4096
"""What any parse holds beside (the decoder's own objects)."""
MOST_PER_BYTE = 3 + _OBJECT
"""The most `parse_holds` charges a byte: a text that short costs no count."""


def parse_holds(text: bytes, over: Optional[int] = None) -> int:
    """What parsing ``text`` (JSON) would hold, in bytes: the text, its decoded copy and its
    strings' characters, and its arrays, objects, strings and elements. Counted over the
    whole text first; when that is more than ``over``, its brackets and commas again outside
    its strings (a string of ``[[[…`` is no structure; its quotes still count), unless it
    has more than `MANY_QUOTES`: taking that many strings out costs a second a million."""
    quotes = text.count(b'"')
    cost = _weighed(text, text) + _QUOTE * quotes
    if over is not None and cost > over and quotes <= MANY_QUOTES:
        cost = _weighed(text, outside_strings(text, _NOT_STRUCTURE)) + _QUOTE * quotes
    return cost


_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b"[{,")


def _weighed(text: bytes, structure: bytes) -> int:
    return (
        _PARSE
        + 3 * len(text)
        + _ARRAY * structure.count(b"[")
        + _OBJECT * structure.count(b"{")
        + _ELEMENT * structure.count(b",")
    )


def _within(text: bytes, limit: Optional[int]) -> None:
    if limit is None or _PARSE + len(text) * MOST_PER_BYTE <= limit:
        return
    cost = parse_holds(text, limit)
    if cost > limit:
        raise TooCostly(cost)
