"""Typing a frame's payload fast, and encoding a redacted one back: the tap's parsing helpers."""

from __future__ import annotations

import json
import re

import orjson

from golem_core.messages import Message, Role
from golem_core.profiles import Profile

__all__ = ["ELIDE_FRAMES_OVER", "ELIDE_STRINGS_OVER", "encode_redacted", "parse_fast"]

ELIDE_FRAMES_OVER = 1024 * 1024
"""Frames larger than this are typed with their long opaque strings elided (live view only)."""
ELIDE_STRINGS_OVER = 64 * 1024


def encode_redacted(profile: Profile, obj: object) -> bytes:
    """The redacted message as a payload. A lone surrogate (legal in JSON as an escape, not
    encodable as UTF-8) stays a ``\\uXXXX`` escape rather than stopping the inspection."""
    try:
        return profile.encode_payload(obj)
    except UnicodeEncodeError:
        return json.dumps(obj, ensure_ascii=True).encode("ascii")


def parse_fast(profile: Profile, payload: bytes, role: Role) -> Message:
    """``profile.parse(payload, role)``, decoding the JSON with orjson (3 to 6 times faster
        than ``json`` on a GOLEM frame). orjson accepts a subset of what ``json.loads`` does (no
        NaN, no integers past 64 bits, no lone surrogates, depth 1024): whatever it refuses takes
        the reference path, as does a payload with a number of 19 digits or more (past 64 bits
    orjson may read an integer as a float), so the result is always ``profile.parse``'s."""
    if _LONG_DIGITS.search(payload) is not None:
        return profile.parse(payload, role)  # orjson reads some huge integers as floats
    try:
        obj = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return profile.parse(payload, role)
    return profile.parse_decoded(obj, role)


_LONG_DIGITS = re.compile(rb"[0-9]{19}")
