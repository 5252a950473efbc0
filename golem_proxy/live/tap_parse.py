"""Typing a frame's payload fast, and encoding a redacted one back: the tap's parsing helpers,
with what a parse would hold judged before it is made (`TooCostly`)."""

from __future__ import annotations

import codecs
import json
import re
import sys
from typing import NamedTuple, Optional

from golem_core.messages import Message, Role, decode_json, elide_long_strings
from golem_core.profiles import Profile

from ..fast_json import NOT_DECODED, decode_exactly
from ..json_cost import most_held, parse_holds
from .opaque_scan import opaque_scan, opaque_span_scan

__all__ = [
    "ELIDE_FRAMES_OVER",
    "ELIDE_STRINGS_OVER",
    "Parsed",
    "TooCostly",
    "encode_redacted",
    "parse_elided",
    "parse_fast",
    "parse_for_view",
]

ELIDE_FRAMES_OVER = 1024 * 1024
"""Frames larger than this are typed with their long opaque strings elided (live view only)."""
ELIDE_STRINGS_OVER = 64 * 1024
OPAQUE_SCAN = opaque_scan()
"""How a long string is found opaque: by the C library where it loads (opaque_scan.py)."""
OPAQUE_SPAN = opaque_span_scan()
"""How far an opaque run goes, by the C library where it loads (None without it): a long
string is then found and checked in one pass (`elide_long_strings`)."""


def encode_redacted(profile: Profile, obj: object) -> bytes:
    """The redacted message as a payload. A lone surrogate (legal in JSON as an escape, not
    encodable as UTF-8) stays a ``\\uXXXX`` escape rather than stopping the inspection. A
    message that nests about as deep as the decoder goes is encoded with the recursion limit
    raised by `DEEPER` for the while: on Python 3.11 the frame was decoded by orjson, which
    goes 1,024 levels deep whatever the stack, and the stdlib's encoder stops at the
    recursion limit less the calls below it (it raised, and the tap stopped observing the
    connection). From 3.12 the C encoder has a limit of its own, as deep as the decoder's,
    which the recursion limit does not move."""
    try:
        return _encoded(profile, obj)
    except RecursionError:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(limit + DEEPER)
        try:
            return _encoded(profile, obj)
        finally:
            sys.setrecursionlimit(limit)


DEEPER = 200
"""How much deeper than its limit `encode_redacted` may go: 1,024 levels from a stack of up to
~175 calls (the tap encodes from ~40), far less than a thread's stack holds. Set and restored
under the interpreter's lock by the one thread that runs the taps."""


def _encoded(profile: Profile, obj: object) -> bytes:
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
    parsed would hold more than ``limit`` bytes, unless a parse would refuse it before it
    holds anything much (`_refused_at_once`)."""
    parsed = parse_elided(profile, payload, role, limit)
    return parsed.message, parsed.elided


class Parsed(NamedTuple):
    """A frame typed for the view (`parse_elided`)."""

    message: Message
    text: bytes
    """The payload with its long opaque strings elided (the payload itself when none was):
    a byte search that no opaque character matches finds in it what it would find in the
    payload, without a pass over the blob."""
    elided: int


def parse_elided(
    profile: Profile, payload: bytes, role: Role, limit: Optional[int] = None
) -> Parsed:
    """`parse_for_view`, with the text it parsed (`Parsed.text`). Raises `TooCostly` as it
    does."""
    large = len(payload) > ELIDE_FRAMES_OVER
    text, elided = payload, 0
    if large:
        text, elided = elide_long_strings(payload, ELIDE_STRINGS_OVER, OPAQUE_SCAN, OPAQUE_SPAN)
    if limit is not None and most_held(len(text)) > limit:
        cost = parse_holds(text, limit)
        if cost > limit:
            if not _refused_at_once(text):
                raise TooCostly(cost)
            return Parsed(profile.parse(payload, role), payload, 0)
    if large:
        return Parsed(profile.parse(text if elided else payload, role), text, elided)
    return Parsed(parse_fast(profile, payload, role), payload, 0)


def _decoder_depth() -> Optional[int]:
    """How many arrays opened in a row Python's decoder refuses (`decode_json`: its recursion
    limit: 1,000 on 3.11, more on later versions), measured once; None when it takes 100,000.
    Measured near the bottom of the stack: deeper in it, the decoder refuses sooner."""
    for depth in (1_000, 10_000, 100_000):
        nested = b"[" * depth + b"]" * depth
        if decode_json(nested)[1] is not None:
            return depth
    return None


DECODER_DEPTH = _decoder_depth()
"""A text that opens this many arrays and objects at its start is refused having held that
many (None: no depth is known to be refused)."""
_OPENS_AT_ONCE = (
    None
    if DECODER_DEPTH is None
    else re.compile(rb"[ \t\r\n]*(?:[\[{][ \t\r\n]*){%d}" % DECODER_DEPTH)
)
_READ_AT_A_TIME = 1024 * 1024


def _refused_at_once(text: bytes) -> bool:
    """Whether a parse of ``text`` fails before it holds much: not UTF-8 (the decoding fails
    first, before any JSON is read), or opening more arrays and objects at its start than
    the decoder goes deep. Such a frame is typed as a parse types it (malformed), also for
    ``--enforce-limits``, rather than left unparsed. Checked in bounded memory."""
    if _OPENS_AT_ONCE is not None and _OPENS_AT_ONCE.match(text):
        return True
    if text.isascii():
        return False
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(text)
    try:
        for start in range(0, len(text), _READ_AT_A_TIME):
            decoder.decode(view[start : start + _READ_AT_A_TIME])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return True
    return False
