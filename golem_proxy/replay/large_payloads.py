"""Recorded payloads too large for a reader to parse (over its budget: the recording keeps them
verbatim beside their skeleton, `golem_proxy.recording.frame_skeleton`), served and compared
without parsing them.

Replay answers with such a payload's bytes, its top-level ``id`` replaced by the live
request's and the recorded GUIDs it learned replaced by their live ones. `diff` and `verify`
compare such a payload's ``params``, ``result`` and ``error`` as bytes: equal, or one
difference that says they could not be compared member by member.

A top-level member is found by walking the payload's strings and brackets only (a regex takes
each whole), never its numbers: 28 MiB of ``[0,1,0,…]`` is two brackets, a mesh of a million
points two million, in bounded memory."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Optional

from .diffing import ABSENT, Difference

__all__ = ["compare_as_bytes", "member_span", "with_live_id"]

_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_COLON = re.compile(rb"[ \t\r\n]*:[ \t\r\n]*")
_SCALAR = re.compile(rb"[^,}\] \t\r\n]*")


def member_span(payload: bytes, name: str) -> Optional[tuple[int, int]]:
    """Where the value of the top-level member ``name`` of the JSON object ``payload`` is;
    None when ``payload`` is no object or has no such member."""
    key = json.dumps(name, ensure_ascii=False).encode("utf-8")
    depth = 0
    tokens = _TOKENS.finditer(payload)
    for token in tokens:
        first = payload[token.start()]
        if first == 0x22:  # a string: a key of the top level when a colon follows it
            colon = _COLON.match(payload, token.end()) if depth == 1 else None
            if colon is not None and token.group() == key:
                return colon.end(), _value_end(payload, colon.end(), tokens)
            continue
        if depth == 0 and first != 0x7B:
            return None  # an array
        depth += 1 if first in b"[{" else -1
        if depth == 0:
            return None
    return None


def _value_end(payload: bytes, start: int, tokens: Iterator[re.Match[bytes]]) -> int:
    """The end of the JSON value at ``start``; ``tokens`` (the walk's) is at it."""
    if payload[start : start + 1] not in (b"[", b"{", b'"'):
        match = _SCALAR.match(payload, start)
        return match.end() if match is not None else start
    depth = 0
    for token in tokens:
        first = payload[token.start()]
        if first != 0x22:
            depth += 1 if first in b"[{" else -1
        if depth == 0:
            return token.end()
    return len(payload)


def with_live_id(payload: bytes, request_id: Any, to_live: Mapping[str, str]) -> bytes:
    """``payload`` (a recorded answer) with its top-level ``id`` the live ``request_id`` and
    each recorded GUID of ``to_live`` (a string value of it, as the replay's map holds them)
    the live one; as it is when it has no ``id``."""
    for recorded, live in to_live.items():
        payload = payload.replace(_string(recorded), _string(live))
    span = member_span(payload, "id")
    if span is None:
        return payload
    start, end = span
    return payload[:start] + _string(request_id) + payload[end:]


def _string(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def compare_as_bytes(
    recorded: bytes, live: bytes, members: tuple[str, ...] = ("params", "result", "error")
) -> list[Difference]:
    """The ``members`` of two payloads, one of them too large to parse, compared as bytes:
    nothing when each is the same bytes (or absent from both), else one difference naming
    the member and the sizes, since they are not compared member by member."""
    found = []
    for name in members:
        a, b = _member(recorded, name), _member(live, name)
        if a != b:
            found.append(Difference(name, _described(a), _described(b)))
    return found


def _member(payload: bytes, name: str) -> Optional[bytes]:
    span = member_span(payload, name)
    return None if span is None else payload[span[0] : span[1]]


def _described(value: Optional[bytes]) -> Any:
    if value is None:
        return ABSENT
    return f"<{len(value)} bytes, too large to compare member by member>"
