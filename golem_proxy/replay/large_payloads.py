"""Recorded payloads too large for a reader to parse (over its budget: the recording keeps them
verbatim beside their skeleton, `golem_proxy.recording.frame_skeleton`), served and compared
without parsing them.

Replay answers with such a payload's bytes, its top-level ``id`` the live request's and the
recorded GUIDs it learned the live ones. `diff`, `verify`, `resend` and `mcp-verify` compare
such a payload whole, as bytes, but for its ``id``, with the GUIDs learned so far mapped: equal,
or one difference naming the sizes, since the payload is not compared member by member.

The ``id`` is found by walking the payload's strings and brackets only (`golem_proxy.json_walk`),
as ``json.loads`` finds it: a key spelled with an escape (``"\\u0069d"``) or given twice, the
last."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Optional

from ..json_cost import STRING_OR_REST
from ..json_walk import COLON, member_span
from .diffing import ABSENT, Comparator, Difference
from .matching import GUID_RE

__all__ = ["compare_as_bytes", "with_id"]

# A string shaped like a GUID (`matching.is_guid`: the only strings a `GuidMap` binds).
_GUID_VALUE = re.compile(b'"' + GUID_RE.pattern.encode() + b'"')
_GUID_STRING = 38


def with_id(payload: bytes, ident: Any, guids: Mapping[str, str]) -> bytes:
    """``payload`` (a recorded or live answer) with its top-level ``id`` ``ident`` (put first
    when it has none, as ``profile.with_id`` adds it) and each GUID of ``guids`` (a string
    value of it, not a key, as `GuidMap.to_live` maps them) the one it maps to; as it is when
    it is no object. Replay gives the live request's id and the GUIDs learned, recorded to
    live; `verify --update` the recorded id and live to recorded."""
    return _with_id(_guids_mapped(payload, guids), _string(ident))


def _with_id(payload: bytes, ident: bytes) -> bytes:
    span = member_span(payload, "id")
    if span is not None:
        return payload[: span[0]] + ident + payload[span[1] :]
    text = payload.strip(b" \t\r\n")
    if not (text.startswith(b"{") and text.endswith(b"}")):
        return payload  # no object: as it was recorded
    opening = payload.index(b"{")
    rest = payload[opening + 1 :]
    separator = b"" if rest.lstrip().startswith(b"}") else b", "
    return payload[: opening + 1] + b'"id": ' + ident + separator + rest


def _guids_mapped(payload: bytes, guids: Mapping[str, str]) -> bytes:
    if not guids:
        return payload

    # One pass over the payload's strings, each looked up once: replacing GUID after GUID
    # would cost a pass each and map a live GUID that is also a recorded one a second time;
    # taking strings whole, a GUID after an escaped quote inside a string is no value.
    def mapped(match: re.Match[bytes]) -> bytes:
        string = match.group()
        if len(string) != _GUID_STRING or not _GUID_VALUE.fullmatch(string):
            return string
        if COLON.match(payload, match.end()):
            return string  # a key: `GuidMap` maps values only
        found = guids.get(string[1:-1].decode("ascii"))
        return string if found is None else _string(found)

    return STRING_OR_REST.sub(mapped, payload)


def _string(value: Any) -> bytes:
    """``value`` as JSON text, non-ASCII as escapes (a lone surrogate too: the peer reads the
    same value)."""
    return json.dumps(value).encode("ascii")


def compare_as_bytes(
    recorded: bytes, live: bytes, comparator: Optional[Comparator] = None, path: str = "response"
) -> list[Difference]:
    """Two payloads, one of them too large to parse, compared whole but for their ``id``:
    the recorded one with the live one's id and the GUIDs ``comparator`` learned so far
    mapped. Nothing when that is the live one byte for byte, else one difference at
    ``path`` naming both sizes (a short payload shown as it is), since they are not compared
    member by member: neither ``--ignore``, nor ``--float-tolerance``, nor GUIDs not learned
    yet, nor spacing are allowed for."""
    to_live = comparator.guids.to_live_map if comparator is not None else {}
    span = member_span(live, "id")
    live_id = live[span[0] : span[1]] if span is not None else None
    expected = _guids_mapped(recorded, to_live)
    if live_id is not None:
        expected = _with_id(expected, live_id)
    if expected == live:
        return []
    return [Difference(path, _described(recorded), _described(live))]


_SHOWN_UP_TO = 200


def _described(value: Optional[bytes]) -> Any:
    if value is None:
        return ABSENT
    if len(value) <= _SHOWN_UP_TO:
        return value.decode("utf-8", "replace")
    return f"<{len(value)} bytes, compared as bytes: a payload too large to parse>"
