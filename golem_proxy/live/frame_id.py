"""A request's id read from its bytes, for a frame too costly to parse (`tap_parse.TooCostly`):
what a ``--fault error`` answering it in the server's place echoes, so that the client can
match the answer. The top-level members of the frame's first `ID_WITHIN` bytes are walked
(`golem_proxy.json_walk`), never parsed: clients write ``id`` first or second, before the
bulk of ``params``."""

from __future__ import annotations

import json
from typing import Any

from ..json_walk import NotAnObject, Tokens, iter_members

__all__ = ["ID_WITHIN", "UNKNOWN", "id_of_bytes"]

ID_WITHIN = 64 * 1024
"""How many of a frame's first bytes are walked for its ``id``."""
_TOKENS = 16_384
"""How many strings and brackets the walk may take (text nested deep everywhere is a Python
step per bracket, on the forwarding side)."""
_LONGEST_ID = 1024
"""An id longer than this, as JSON text, is not read (nor echoed)."""


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
"""What `id_of_bytes` returns when the id is not found where it looks."""


def id_of_bytes(payload: bytes) -> Any:
    """The ``id`` of the JSON object ``payload`` (the last given, as ``json.loads`` keeps it);
    None when it has none, or is no JSON object whose members can be read (a server reads no
    id in it either); `UNKNOWN` when it is not found in the first `ID_WITHIN` bytes, within
    the walk's budget, or is longer than a request's id is."""
    end = min(len(payload), ID_WITHIN)
    whole = end == len(payload)
    if not payload[:end].lstrip(b" \t\r\n").startswith(b"{"):
        return None if whole or payload[:end].strip(b" \t\r\n") else UNKNOWN
    tokens = Tokens(_TOKENS)
    span = None
    try:
        for key, start, stop in iter_members(payload, 0, end, tokens=tokens):
            # A value that reaches the end of what is walked may go on past it.
            if key == "id" and stop >= 0 and (whole or stop < end):
                span = (start, stop)
    except NotAnObject:
        if whole:
            return None  # broken: a server reads no id in it
        closed = False
    else:
        closed = tokens.left >= 0 and whole
    if span is None:
        return None if closed else UNKNOWN
    text = payload[span[0] : span[1]]
    if len(text) > _LONGEST_ID:
        return UNKNOWN
    try:
        return json.loads(text)
    except ValueError:
        return UNKNOWN
