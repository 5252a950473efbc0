"""What the two ends of a frame too large to observe say of it: the top-level members of its
JSON object read from its first bytes and from its last, never from the whole payload (it is
over the observation limit: parsing it is what the limit forbids).

The tap reads a digested frame's ``id`` this way (`FrameEnds.reply_id`) to tell which waiting
request it answers, so that a request whose answer was too large to observe is known answered
(`golem_proxy.live.tap_gap_answer`). Most writers put the envelope first (``{"jsonrpc",
"id", "result": …}``); the MCP TypeScript SDK puts it last (``{"result": …, "jsonrpc",
"id"}``), so the tail is read too, backwards from the closing brace, as the Wireshark
dissector reads a trailing id (golem_proxy/interop/lua_template.py, ``trailing_members``).
Both scans are bounded by `END_BYTES`, whatever the frame holds.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

__all__ = ["END_BYTES", "FrameEnds", "head_members", "tail_members"]

END_BYTES = 64 * 1024
"""Bytes of each end of a digested frame that are kept and scanned."""

_SPACE = b" \t\r\n"
_STRING_BODY = re.compile(rb'(?:[^"\\]|\\.)*"', re.DOTALL)
"""The rest of a JSON string after its opening quote, through its closing quote."""
_SCALAR = re.compile(rb"-?[0-9][0-9eE.+-]*|true|false|null")
_STRUCTURE = re.compile(rb'["\[\]{}]')
_NO_VALUE = object()


def _skip_space(data: bytes, at: int) -> int:
    while at < len(data) and data[at] in _SPACE:
        at += 1
    return at


def _string_end(data: bytes, at: int) -> Optional[int]:
    """The index after the string opening at ``at`` (a quote), or None when it does not end
    within ``data``."""
    found = _STRING_BODY.match(data, at + 1)
    return None if found is None else found.end()


def _nested_end(data: bytes, at: int) -> Optional[int]:
    """The index after the object or array opening at ``at``, or None when it does not end
    within ``data``. Strings are skipped whole: a bracket in one is no bracket."""
    depth = 0
    while True:
        found = _STRUCTURE.search(data, at)
        if found is None:
            return None
        at = found.start()
        char = data[at]
        if char == 0x22:  # '"'
            end = _string_end(data, at)
            if end is None:
                return None
            at = end
            continue
        depth += 1 if char in b"[{" else -1
        at += 1
        if depth == 0:
            return at


def head_members(data: bytes) -> tuple[dict[str, bytes], set[str]]:
    """The top-level members of the JSON object ``data`` begins (its first bytes only): those
    with a scalar value that ends within ``data`` (name → raw JSON text; the first of a name
    read twice), and the name of every member begun in it. Stops at the first thing that is not
    JSON, and at the end of ``data``."""
    scalars: dict[str, bytes] = {}
    names: set[str] = set()
    at = _skip_space(data, 0)
    if at >= len(data) or data[at] != 0x7B:  # '{'
        return scalars, names
    at += 1
    while True:
        at = _skip_space(data, at)
        if at >= len(data) or data[at] != 0x22:
            return scalars, names
        end = _string_end(data, at)
        if end is None:
            return scalars, names
        name = _name(data[at:end])
        at = _skip_space(data, end)
        if name is None or at >= len(data) or data[at] != 0x3A:  # ':'
            return scalars, names
        names.add(name)
        at = _skip_space(data, at + 1)
        if at >= len(data):
            return scalars, names
        char = data[at]
        if char == 0x22:
            end = _string_end(data, at)
        elif char in b"[{":
            end = _nested_end(data, at)
        else:
            found = _SCALAR.match(data, at)
            end = None if found is None or found.end() >= len(data) else found.end()
        if end is None:
            return scalars, names
        if char not in b"[{":
            scalars.setdefault(name, data[at:end])
        at = _skip_space(data, end)
        if at >= len(data) or data[at] != 0x2C:  # ','
            return scalars, names
        at += 1


def _space_before(data: bytes, at: int) -> int:
    """The index of the last byte at or before ``at`` that is not white space (-1: none)."""
    while at >= 0 and data[at] in _SPACE:
        at -= 1
    return at


def _string_opening(data: bytes, close: int) -> Optional[int]:
    """Where the string whose closing quote is at ``close`` opens, or None. JSON has no
    backslash outside strings, so a quote after an even run of backslashes is a delimiter; a
    run that reaches the start of ``data`` cannot be counted."""
    at = close - 1
    while at >= 0:
        at = data.rfind(b'"', 0, at + 1)
        if at < 0:
            return None
        back = at - 1
        while back >= 0 and data[back] == 0x5C:  # '\\'
            back -= 1
        if back < 0 and at > 0:
            return None
        if (at - 1 - back) % 2 == 0:
            return at
        at -= 1
    return None


def tail_members(data: bytes) -> tuple[dict[str, bytes], set[str]]:
    """The members with a scalar value that end the JSON object ``data`` ends (its last bytes
    only), read backwards from its closing brace up to the first other value (which holds
    them all at the top level): name → raw JSON text (the last of a name read twice, as a
    parser keeps), and their names."""
    scalars: dict[str, bytes] = {}
    at = _space_before(data, len(data) - 1)
    if at < 0 or data[at] != 0x7D:  # '}'
        return scalars, set()
    while True:
        last = _space_before(data, at - 1)
        if last < 0:
            break
        if data[last] == 0x22:
            first: Optional[int] = _string_opening(data, last)
        else:
            first = last
            while first > 0 and data[first - 1 : first] in b"0123456789.+-eEtrufalsn":
                first -= 1
        if first is None:
            break
        value = data[first : last + 1]
        if value[:1] != b'"' and _SCALAR.fullmatch(value) is None:
            break
        colon = _space_before(data, first - 1)
        if colon < 0 or data[colon] != 0x3A:
            break
        close = _space_before(data, colon - 1)
        if close < 0 or data[close] != 0x22:
            break
        opening = _string_opening(data, close)
        if opening is None:
            break
        name = _name(data[opening : close + 1])
        if name is None:
            break
        scalars.setdefault(name, value)
        at = _space_before(data, opening - 1)
        if at < 0 or data[at] != 0x2C:  # ','
            break
    return scalars, set(scalars)


def _name(token: bytes) -> Optional[str]:
    """A member name from its JSON string token (escapes read), or None when it is not one."""
    try:
        name = json.loads(token)
    except ValueError:
        return None
    return name if isinstance(name, str) else None


class FrameEnds:
    """The first and last `END_BYTES` of a frame's payload, kept as it is digested."""

    def __init__(self, first: bytes) -> None:
        self._head = bytearray(first[:END_BYTES])
        self._tail = bytearray(first[-END_BYTES:])

    def add(self, data: bytes) -> None:
        head = self._head
        if len(head) < END_BYTES:  # a limit under END_BYTES: the head grows up to it
            head += data[: END_BYTES - len(head)]
        tail = self._tail
        tail += data[-END_BYTES:]
        if len(tail) > END_BYTES:
            del tail[: len(tail) - END_BYTES]

    @property
    def head(self) -> bytes:
        return bytes(self._head)

    @property
    def tail(self) -> bytes:
        return bytes(self._tail)

    def reply_id(self) -> Any:
        """The id of the reply this frame is, as JSON reads it, or `NO_ID` when its ends do
        not show one: a top-level ``id`` with a scalar value, a ``result`` or an ``error``
        member, and no ``method`` (a request or a notification, whatever its id)."""
        tail_scalars, tail_names = tail_members(self.tail)
        head_scalars, head_names = head_members(self.head)
        names = tail_names | head_names
        if "method" in names or not names & {"result", "error"}:
            return NO_ID
        # The tail's is the last member of that name, which a parser keeps.
        raw = tail_scalars.get("id", head_scalars.get("id"))
        if raw is None:
            return NO_ID
        try:
            return json.loads(raw)
        except ValueError:
            return NO_ID


NO_ID: Any = _NO_VALUE
"""`FrameEnds.reply_id` found no id."""
