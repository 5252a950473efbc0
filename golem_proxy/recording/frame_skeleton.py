"""A frame too large for a reader to parse, recorded whole with its skeleton beside it.

A reader refuses to parse a line whose parse would cost more than its budget
(`line_guard.check_line`, 512 MiB by its estimate): a recording may come from anyone. The tap
decodes frames up to its observation limit (32 MiB by default), and some of those cost more
than that once parsed: 28 MiB of ``[0,1,0,…]`` (a mask, a flattened index buffer) is about 514
MiB by the reader's estimate. Written verbatim, such a frame made every reader refuse the whole
recording at its line, every other exchange with it.

So the writer still writes it verbatim, as the line's last member, and puts its skeleton before
it: the decoded message with its bulk elided, and how many bytes were elided (``elided``). A
reader over the budget parses the members before the payload only (`frame_reading`): the frame
keeps its bytes whole (for `export`, `replay`, the TUI's read-back) and is typed from its
skeleton, as a view types a frame whose bulk it elided itself (`FrameSeen.elided`). Under the
budget the payload is parsed and the skeleton is not read: a reader shows the payload's own
message whenever it can.

The skeleton is the message with its long arrays of numbers elided (`golem_proxy.bulk`), which
is all a mesh or a point cloud needs; if that is still too large, its long arrays of anything;
then its first three levels (`_shallow`: what outcomes are read from); then its envelope's
plain members only (`_envelope`), each container a placeholder, each long string elided. The
first that reads as the message does is taken (`bulk.reads_alike`: its kind, id, method, a
request's plain params, an answer's outcome), so an outcome decided on the skeleton is the one
decided on the whole message."""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

from ..bulk import BULK_NUMBERS, without_long_arrays, without_number_arrays
from ..json_cost import MOST_PER_BYTE, most_held, parse_cost
from ..json_levels import strict_json_misfit
from .schema import DEFAULT_LINE_BUDGET, MAX_DEPTH, MSG_KEY, dumps

__all__ = [
    "SKELETON_BUDGET",
    "WITHIN_ANY",
    "over_parse_budget",
    "skeleton_members",
    "within_parse_budget",
]

LONG_STRING = 64 * 1024
"""A string this long or longer is left out of the last skeletons (`_shallow`, `_envelope`),
as the tap leaves out a blob of base64 that long: a 9 MB log text beside the bulk."""
SKELETON_BUDGET = 16 * 1024 * 1024
"""What parsing a skeleton may cost at most: every view holds it, as it holds any message."""
_AROUND = 1024 * 1024
"""What the members around a payload may add to its line's parse cost: the writer's bound
must hold for the reader's estimate of the whole line."""
_ENDS = 64
"""What the line adds around the payload besides its members: ``,"msg":``, ``}`` and the
newline."""
# ``,"msg":`` can only be a key in JSON text (inside a string its quotes are escaped): the
# same key spelled with an escape, so that the payload's ``,"msg":`` is the line's first.
_MSG_KEY_ESCAPED = b',"\\u006dsg":'


def over_parse_budget(
    payload: bytes, elided: int, around: int = _AROUND, budget: int = DEFAULT_LINE_BUDGET
) -> bool:
    """Whether a reader would refuse to parse the line of a frame whose verbatim ``payload``
    (valid JSON) it is; ``elided``: the bytes of opaque strings in it (the tap's count), which
    cost 3 bytes a byte, no more; ``around``: what the line's other members cost (`parse_cost`
    of them; a margin when they are not known). Bounded first from the lengths alone:
    counting a 16 MiB viewport capture's brackets would cost the recorder ~12 ms an answer."""
    if within_parse_budget(len(payload), elided, budget):
        return False
    limit = budget - around - _ENDS
    return parse_cost(payload, limit)[0] > limit


WITHIN_ANY = (DEFAULT_LINE_BUDGET - _AROUND - most_held(0)) // MOST_PER_BYTE
"""A payload this long or shorter is within a reader's budget whatever it holds (2.5 MiB):
the recorder's test of a frame, in one comparison."""


def within_parse_budget(size: int, elided: int = 0, budget: int = DEFAULT_LINE_BUDGET) -> bool:
    """Whether a payload of ``size`` bytes, ``elided`` of them in opaque strings, is within a
    reader's parse budget whatever it holds and whatever the members around it (up to a
    mebibyte's parse: a frame's are a few hundred bytes)."""
    return most_held(size, elided) <= budget - _AROUND


def skeleton_members(
    obj: Any, elided: int, reads_alike: Callable[[Any], bool] = lambda _: True
) -> tuple[int, bytes]:
    """A frame line's ``elided`` and ``skeleton`` members for a message decoded as ``obj``
    (strings of ``elided`` bytes elided from it already, by the tap): the bytes elided in
    all, and the skeleton as JSON text, which holds no ``,"msg":``. The first skeleton that
    fits `SKELETON_BUDGET` and ``reads_alike`` (types as the message does: id, method,
    outcome) is taken; when none reads alike, the first that fits."""
    fitting: Optional[tuple[int, bytes]] = None
    for skim in (_without_number_arrays, without_long_arrays, _shallow, _envelope):
        skeleton, count = skim(obj)
        if not count and not elided and skim is not _envelope:
            continue  # nothing left out of a whole message, which is too large
        text = dumps(skeleton)
        if parse_cost(text)[0] > SKELETON_BUDGET or strict_json_misfit(skeleton, MAX_DEPTH - 1):
            continue
        found = (elided + count, text.replace(MSG_KEY, _MSG_KEY_ESCAPED))
        if reads_alike(skeleton):
            return found
        fitting = fitting or found
    if fitting is None:  # pragma: no cover - top-level members too many even as plain ones
        size = len(dumps(obj))
        return elided + size, dumps(f"<{size} bytes not kept>")
    return fitting


def _without_number_arrays(obj: Any) -> tuple[Any, int]:
    return without_number_arrays(obj, message=True)


_SHALLOW = 3
"""The levels `_shallow` keeps: a message, its ``result``, that result's ``error``, and the
plain members of that (its code and message): what a profile reads an outcome from."""


def _shallow(obj: Any, depth: int = _SHALLOW) -> tuple[Any, int]:
    """``obj`` to `_SHALLOW` levels, each container below them and each array of
    `BULK_NUMBERS` items or more a string saying how many bytes it took."""
    if isinstance(obj, dict) and depth > 0:
        kept: dict[str, Any] = {}
        elided = 0
        for key, value in obj.items():
            kept[key], count = _shallow(value, depth - 1)
            elided += count
        return kept, elided
    if isinstance(obj, list) and depth > 0 and len(obj) < BULK_NUMBERS:
        items = [_shallow(item, depth - 1) for item in obj]
        return [item for item, _ in items], sum(count for _, count in items)
    return _plain_or_placeholder(obj)


def _envelope(obj: Any) -> tuple[Any, int]:
    """``obj``'s plain members (strings, numbers, booleans, null; a long string elided), each
    of the others a string saying how many bytes it took: the last resort."""
    if not isinstance(obj, dict):
        return _plain_or_placeholder(obj)
    kept: dict[str, Any] = {}
    elided = 0
    for key, value in obj.items():
        kept[key], count = _plain_or_placeholder(value)
        elided += count
    return kept, elided


def _plain_or_placeholder(value: Any) -> tuple[Any, int]:
    """A plain value as it is (a long string elided, as the tap elides a blob), any other a
    string saying how many bytes it took."""
    if isinstance(value, str) and len(value) >= LONG_STRING:
        return f"<{len(value)} bytes elided>", len(value)
    if value is None or isinstance(value, (str, int)) or _finite(value):  # bool is an int
        return value, 0
    size = len(dumps(value))
    return f"<{size} bytes not kept>", size


def _finite(value: Any) -> bool:
    return isinstance(value, float) and math.isfinite(value)
