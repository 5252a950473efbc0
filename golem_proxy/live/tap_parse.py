"""Typing a frame's payload fast, and encoding a redacted one back: the tap's parsing helpers,
with what a parse would hold judged before it is made (`TooCostly`)."""

from __future__ import annotations

import json
from typing import Optional

from golem_core.messages import Message, Role, elide_long_strings
from golem_core.profiles import Profile

from ..fast_json import NOT_DECODED, decode_exactly
from ..json_cost import most_held, parse_holds
from .opaque_scan import opaque_scan

__all__ = [
    "ELIDE_FRAMES_OVER",
    "ELIDE_STRINGS_OVER",
    "TooCostly",
    "encode_redacted",
    "parse_fast",
    "parse_for_view",
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


def _within(text: bytes, limit: Optional[int]) -> None:
    if limit is None or most_held(len(text)) <= limit:
        return
    cost = parse_holds(text, limit)
    if cost > limit:
        raise TooCostly(cost)
