"""An object's top-level members found in its JSON text by walking the text's strings and
brackets, never parsing it: for payloads too large to parse (a reader's budget), which replay
serves with another id (`golem_proxy.replay.large_payloads`) and a reader types from a skeleton
made of their bytes when the line has none (`golem_proxy.recording.byte_skeleton`).

Numbers and spacing are skipped by a regex search for the next string or bracket, and so is
an empty array or object: the walk searches a copy of the text in which each ``[]`` and ``{}``
is two spaces, the same length (`blanked`). So 28 MiB of ``[0,1,0,…]`` is two brackets, 28 MiB
of ``[[],[],…]`` too, a mesh of a million points two million, in bounded memory. A string is
taken whole by one regex match (a string that never closes ends the walk: no member is found),
and every key is read, so that a key spelled with an escape (``"\\u0069d"``) or given twice is
found as ``json.loads`` finds it. A walk may be given a budget of tokens (`Tokens`): text that
nests deep everywhere is a Python step per bracket, and a reader must not spend minutes on
it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, Optional

from .json_cost import JSON_STRING

__all__ = [
    "COLON",
    "Member",
    "NotAnObject",
    "Tokens",
    "blanked",
    "iter_members",
    "member_span",
]

_STRUCTURE = re.compile(rb'["\[\]{}]')
COLON = re.compile(rb"[ \t\r\n]*:[ \t\r\n]*")
"""What may stand between a key and its value."""
_SCALAR = re.compile(rb"[^,}\] \t\r\n]*")
_SPACING = re.compile(rb"[ \t\r\n]*")

Member = tuple[Any, int, int]
"""A top-level member: its key as read (None when it does not read), where its value starts
and ends."""


class NotAnObject(ValueError):
    """The text walked is no JSON object: not one at all, or one whose strings or brackets do
    not close where it ends."""


class Tokens:
    """What a walk may still take: strings and brackets. Past it, `iter_members` stops."""

    def __init__(self, left: int) -> None:
        self.left = left


def member_span(payload: bytes, name: str) -> Optional[tuple[int, int]]:
    """Where the value of the top-level member ``name`` of the JSON object ``payload`` is
    (its last, as ``json.loads`` keeps the last of a key given twice); None when ``payload``
    is no object, has no such member, or its walk breaks (`iter_members`)."""
    found: Optional[tuple[int, int]] = None
    try:
        for key, start, end in iter_members(payload):
            if key == name:
                found = (start, end)
    except NotAnObject:
        return None
    return found


def blanked(text: bytes) -> bytes:
    """``text`` with each empty array and object made spaces, the same length: what a walk
    searches for the next string or bracket."""
    return text.replace(b"[]", b"  ").replace(b"{}", b"  ")


def iter_members(
    payload: bytes,
    start: int = 0,
    end: Optional[int] = None,
    *,
    searched: Optional[bytes] = None,
    tokens: Optional[Tokens] = None,
) -> Iterator[Member]:
    """The members of the JSON object ``payload[start:end]`` (spacing around it allowed), in
    order, each as soon as its value's end is found. Raises NotAnObject when that is no
    object or its walk breaks: a string that never closes, or brackets that do not close at
    its end. ``searched``: `blanked` of the whole ``payload`` when the caller has it (walks
    inside one payload share it); ``tokens``: past it, the walk stops, and a member whose
    value it was walking is yielded with the end -1 (the members after it are not known).
    One walk: a container value's end is where the walk is back at the object's level. The
    text's commas and scalars are not checked (a parse does that): what the walk finds in
    text that is not JSON is not a parse's."""
    end = len(payload) if end is None else end
    opening = _after_spacing(payload, start, end)
    if payload[opening : opening + 1] != b"{":
        raise NotAnObject("not a JSON object")
    if searched is None:
        searched, offset = blanked(payload[start:end]), start
    else:
        offset = 0
    if _blanked(payload, searched, opening, offset):
        if _after_spacing(payload, opening + 2, end) != end:
            raise NotAnObject("more after the object")
        return
    depth = 0
    key: Any = None
    value_at = -1  # where a container value began, while its end is looked for
    for token_start, token_end in _tokens(payload, searched, offset, opening, end):
        if tokens is not None:
            tokens.left -= 1
            if tokens.left < 0:
                if value_at >= 0:
                    yield key, value_at, -1  # its end not reached
                return
        if token_end < 0:
            raise NotAnObject("a string that never closes")
        first = payload[token_start]
        if first == 0x22:  # a string: a key of the object when a colon follows it
            colon = COLON.match(payload, token_end, end) if depth == 1 else None
            if colon is not None:
                key, at = _key(payload[token_start:token_end]), colon.end()
                opening_char = payload[at : at + 1]
                if opening_char in (b"[", b"{") and _blanked(payload, searched, at, offset):
                    yield key, at, at + 2  # empty: no token of its own
                elif opening_char in (b"[", b"{"):
                    value_at = at
                elif opening_char == b'"':
                    string = JSON_STRING.match(payload, at, end)
                    if string is None:
                        raise NotAnObject("a string that never closes")
                    yield key, at, string.end()
                else:
                    scalar = _SCALAR.match(payload, at, end)
                    yield key, at, scalar.end() if scalar is not None else at
            continue
        depth += 1 if first in b"[{" else -1
        if depth == 1 and value_at >= 0:
            yield key, value_at, token_end
            value_at = -1
        elif depth == 0:
            if first != 0x7D or _after_spacing(payload, token_end, end) != end:
                raise NotAnObject("brackets that do not close where the object ends")
            return
    raise NotAnObject("an object that never closes")


def _tokens(
    payload: bytes, searched: bytes, offset: int, start: int, end: int
) -> Iterator[tuple[int, int]]:
    """Where each string and bracket of ``payload[start:end]`` starts and ends, in order (an
    empty array or object is none: ``searched`` is that text blanked, ``payload[offset:]``);
    a string that never closes ends the walk, its end -1."""
    at, stop = start - offset, end - offset
    while True:
        token = _STRUCTURE.search(searched, at, stop)
        if token is None:
            return
        found = offset + token.start()
        if searched[token.start()] == 0x22:
            string = JSON_STRING.match(payload, found, end)
            if string is None:
                yield found, -1
                return
            at = string.end() - offset
        else:
            at = token.start() + 1
        yield found, offset + at


def _blanked(payload: bytes, searched: bytes, at: int, offset: int) -> bool:
    """Whether the bracket at ``at`` in ``payload`` opens an empty array or object, blanked in
    ``searched`` (which is ``payload[offset:]``'s)."""
    return payload[at : at + 1] in (b"[", b"{") and searched[at - offset : at - offset + 1] == b" "


def _after_spacing(payload: bytes, at: int, end: int) -> int:
    spacing = _SPACING.match(payload, at, end)
    return spacing.end() if spacing is not None else at


def _key(token: bytes) -> Any:
    """A key's JSON string read (its escapes too); None when it does not read."""
    if b"\\" not in token:
        return token[1:-1].decode("utf-8", "replace")
    try:
        return json.loads(token)
    except ValueError:
        return None
