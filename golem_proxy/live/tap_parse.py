"""Typing a frame's payload fast, and encoding a redacted one back: the tap's parsing helpers."""

from __future__ import annotations

import json

from golem_core.messages import Message, Role, elide_long_strings
from golem_core.profiles import Profile

from ..fast_json import NOT_DECODED, decode_exactly
from ..recording.byte_skeleton import message_of_bytes
from ..recording.frame_skeleton import within_parse_budget
from ..recording.line_guard import parse_cost
from ..recording.schema import DEFAULT_LINE_BUDGET as BUDGET
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


def parse_for_view(profile: Profile, payload: bytes, role: Role) -> tuple[Message, int, bool]:
    """The message a frame carries, how many bytes were left out of it (0 but for a frame
    over `ELIDE_FRAMES_OVER`), and whether it was typed without parsing its bulk. A blob (an
    image, a mesh) is not materialised for the live view: the typing and the checks do not
    depend on its content, and the recording keeps its bytes. A payload that would cost more
    than a reader's parse budget even so (30 MB of ``[[],…]``: ~900 MiB) is typed from a
    skeleton of its bytes (`byte_skeleton`), as a reader types it: its bulk is not checked."""
    if len(payload) <= ELIDE_FRAMES_OVER:
        return parse_fast(profile, payload, role), 0, False
    text, elided = elide_long_strings(payload, ELIDE_STRINGS_OVER, OPAQUE_SCAN)
    if not elided:
        text = payload
    if not within_parse_budget(len(text)) and parse_cost(text, BUDGET)[0] > BUDGET:
        # Over the budget by itself, so over it in its line too: every reader types it from
        # the same skeleton and never parses what the tap did not check.
        message, left_out = message_of_bytes(text, profile, role)
        return message, elided + left_out, True
    return profile.parse(text, role), elided, False
