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

from golem_core.messages import Malformed, Message, Role, elide_long_strings
from golem_core.profiles import Profile

from ..bulk import (
    BULK_NUMBERS,
    DEEPEST,
    holds_elided_numbers,
    reads_alike,
    without_number_arrays,
)
from ..events import Direction, FrameSeen
from ..live.tap_parse import ELIDE_STRINGS_OVER, OPAQUE_SCAN

__all__ = [
    "BULK_NUMBERS",
    "DEEPEST",
    "holds_elided_numbers",
    "without_bulk",
    "without_number_arrays",
]


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
    if message is not whole and not frame.elided and not reads_alike(whole, message, profile):
        return whole, 0
    return message, elided + numbers
