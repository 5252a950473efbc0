"""Typing a frame's payload fast, and encoding a redacted one back: the tap's parsing helpers."""

from __future__ import annotations

import json

from golem_core.messages import Message, Role
from golem_core.profiles import Profile

from ..fast_json import NOT_DECODED, decode_exactly
from .opaque_scan import opaque_scan

__all__ = [
    "ELIDE_FRAMES_OVER",
    "ELIDE_STRINGS_OVER",
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


def parse_for_view(profile: Profile, payload: bytes, role: Role) -> tuple[Message, int]:
    """The message a frame carries, and how many bytes of long strings were left out of it
    (0 but for a frame over `ELIDE_FRAMES_OVER`). A blob (an image, a mesh) is not
    materialised for the live view: the typing and the checks do not depend on its content,
    and the recording keeps its bytes."""
    if len(payload) > ELIDE_FRAMES_OVER:
        return profile.parse_elided(payload, role, ELIDE_STRINGS_OVER, OPAQUE_SCAN)
    return parse_fast(profile, payload, role), 0
