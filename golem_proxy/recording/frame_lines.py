"""A frame's line in a recording (docs/recording-format.md): its members, then its message.

When the payload is valid JSON on one line, its exact bytes are spliced in as the last member
(``"msg": <payload>``), so the file is readable, diffable and still byte-exact without
re-encoding anything; one a reader would not parse has its skeleton before it
(`frame_skeleton`). Other payloads (invalid UTF-8 or JSON, embedded newlines, a number JSON has
not, nesting past a reader's depth) are stored base64 in ``raw``.
"""

from __future__ import annotations

import base64
import json
from json.encoder import encode_basestring
from typing import Any, Callable

from golem_core.messages import (
    ErrorResponse,
    MalformedKind,
    Message,
    Notification,
    Request,
    Response,
    Role,
)
from golem_core.profiles import Profile

from .. import events
from ..bulk import reads_alike
from ..events import Direction
from ..json_cost import parse_cost
from .frame_skeleton import WITHIN_ANY, over_parse_budget, skeleton_members
from .line_guard import strictly_unreadable, unreadable_by_bytes
from .schema import JSON_SAFE, MSG_KEY, dumps

__all__ = [
    "answer_of_json",
    "b64",
    "encode_frame",
    "frame_members",
    "frame_type",
    "json_str",
    "json_text",
    "routes_down_json",
    "tool_calls_json",
]


def encode_frame(
    event: events.FrameSeen, profile: Profile, seq: int, *, from_tap: bool = False
) -> list[bytes]:
    """A frame's line, in pieces (the payload one of them, not copied). ``from_tap``: the
    frame is the tap's, whose ``elided`` counts opaque strings only (they nest nothing and
    cost a reader 3 bytes a byte); any other frame whose message has bulk elided (read from
    a skeleton, kept by a view) is measured from its payload's bytes."""
    message = event.message
    payload = event.payload
    undecodable = _undecodable(message)
    unreadable = ""
    if not event.redacted and not undecodable and b"\n" not in payload:
        obj = getattr(message, "obj", None)
        opaque = event.elided if from_tap else 0
        if event.elided and not from_tap:
            unreadable = unreadable_by_bytes(payload)  # its message cannot say
        else:
            unreadable = strictly_unreadable(payload, obj, skeleton=event.elided > 0)
        if not unreadable:
            prefix = _frame_prefix(event, message, seq)
            if len(payload) <= WITHIN_ANY or not over_parse_budget(
                payload, opaque, parse_cost(prefix, 0)[0]
            ):
                # The common case, formatted by hand: json.dumps of the small prefix dict
                # was the recorder's largest cost per frame. The exact payload bytes are
                # spliced in as the last member: readable and byte-exact.
                return [prefix, payload, b"}\n"]
            return _with_skeleton(frame_members(event, message, seq), event, profile, payload)
    base = frame_members(event, message, seq)
    if event.redacted:
        base["redacted"] = list(event.redacted)
        obj = None if undecodable else message.obj
        unreadable = strictly_unreadable(payload, obj, skeleton=True)
        if not unreadable:
            head = dumps(base)
            if over_parse_budget(payload, 0, parse_cost(head, 0)[0]):
                # Its payload is the redacted message encoded again: it holds nothing redacted.
                return _with_skeleton(base, event, profile, payload)
            base["msg"] = obj
            return [dumps(base) + b"\n"]
        # Its payload is the redacted message encoded again: raw, it holds nothing redacted.
        base["raw"] = b64(payload)
        base["note"] = f"{unreadable}; stored raw"
    else:  # not JSON, a payload spanning lines, or one the reader would refuse: base64
        base["raw"] = b64(payload)
        if not undecodable:
            base["note"] = f"{unreadable or 'payload spans lines'}; stored raw"
    line = dumps(base)
    if not undecodable and over_parse_budget(payload, 0):
        # Read from its skeleton, not parsed: a reader's parse of it would be over budget (as
        # the reader judges a raw payload: by itself, its opaque strings not known).
        elided, skeleton = skeleton_members(message.obj, event.elided, _reads_alike(event, profile))
        line = line[:-1] + b',"elided":%d,"skeleton":' % elided + skeleton + b"}"
    return [line + b"\n"]


def _with_skeleton(
    base: dict[str, Any], event: events.FrameSeen, profile: Profile, payload: bytes
) -> list[bytes]:
    """A frame line whose verbatim payload a reader would not parse (`frame_skeleton`): its
    members, its skeleton, then its payload, last as always."""
    alike = _reads_alike(event, profile)
    elided, skeleton = skeleton_members(event.message.obj, event.elided, alike)
    head = dumps(base)[:-1] + b',"elided":%d,"skeleton":' % elided + skeleton + MSG_KEY
    return [head, payload, b"}\n"]


def _reads_alike(event: events.FrameSeen, profile: Profile) -> Callable[[Any], bool]:
    """Whether a skeleton of ``event``'s message types as the message does (`reads_alike`)."""
    role = Role.REQUEST if event.direction is Direction.C2S else Role.RESPONSE
    return lambda skeleton: reads_alike(
        event.message, profile.parse_decoded(skeleton, role), profile
    )


def frame_members(event: events.FrameSeen, message: Message, seq: int) -> dict[str, Any]:
    """A frame line's members before its message (``msg`` or ``raw``), in their order."""
    base: dict[str, Any] = {
        "seq": seq,
        "t": round(event.t, 6),
        "kind": "frame",
        "conn": event.conn,
        "route": event.route,
        "dir": event.direction.value,
        "n": event.index,
        "size": event.size,
        "type": frame_type(message),
    }
    if message.id is not None:
        base["id"] = message.id
    if isinstance(message, (Request, Notification)):
        base["method"] = message.method
    if event.tool_calls is not None:
        base["tool_calls"] = tool_calls_json(event.tool_calls)
    if event.expects_answer:
        base["expects_answer"] = True
    if event.answers is not None:
        base["answers"] = event.answers
    if event.orphan:
        base["orphan"] = True
    if event.undelivered:
        base["undelivered"] = event.undelivered
        if event.delivered_bytes:
            base["delivered_bytes"] = event.delivered_bytes
    if event.routes_down is not None:
        base["routes_down"] = routes_down_json(event.routes_down)
    if event.late:
        base["late"] = True
    if event.answer_of is not None:
        base["answer_of"] = answer_of_json(event.answer_of)
    if event.held_under:
        base["held_under"] = True
    return base


def _frame_prefix(event: events.FrameSeen, message: Message, seq: int) -> bytes:
    """``{...members...,"msg":`` for a verbatim frame, byte for byte what `dumps` writes for
    `frame_members` (a test pins the equivalence): the common case, written by hand."""
    ident = message.id
    parts = [
        f'{{"seq":{seq},"t":{round(event.t, 6)!r},"kind":"frame","conn":{event.conn},'
        f'"route":{json_text(event.route)},"dir":"{event.direction.value}","n":{event.index},'
        f'"size":{event.size},"type":"{frame_type(message)}"'
    ]
    if ident is not None:
        parts.append(f',"id":{json_text(ident) if isinstance(ident, str) else int(ident)}')
    if isinstance(message, (Request, Notification)):
        parts.append(f',"method":{json_text(message.method)}')
    if event.tool_calls is not None:
        parts.append(f',"tool_calls":{json_str(tool_calls_json(event.tool_calls))}')
    if event.expects_answer:
        parts.append(',"expects_answer":true')
    if event.answers is not None:
        parts.append(f',"answers":{event.answers}')
    if event.orphan:
        parts.append(',"orphan":true')
    if event.undelivered:
        parts.append(f',"undelivered":{json_text(event.undelivered)}')
        if event.delivered_bytes:
            parts.append(f',"delivered_bytes":{event.delivered_bytes}')
    if event.routes_down is not None:
        parts.append(f',"routes_down":{json_str(routes_down_json(event.routes_down))}')
    if event.late:
        parts.append(',"late":true')
    if event.answer_of is not None:
        parts.append(f',"answer_of":{json_str(answer_of_json(event.answer_of))}')
    if event.held_under:
        parts.append(',"held_under":true')
    parts.append(',"msg":')
    return "".join(parts).encode("utf-8", JSON_SAFE)


def tool_calls_json(calls: tuple[events.ToolCallRef, ...]) -> list[dict[str, Any]]:
    """A frame's ``tool_calls`` member (a close's too): the MCP ``tools/call`` requests in
    flight."""
    return [{"conn": c.conn, "n": c.index, "id": c.id, "tool": c.tool} for c in calls]


def routes_down_json(routes: tuple[events.RouteDown, ...]) -> list[dict[str, Any]]:
    """A ``tools/call`` frame's ``routes_down`` member: the GOLEM routes not listening then."""
    return [{"route": down.route, "since": round(down.since, 6)} for down in routes]


def answer_of_json(found: events.AnswerOf) -> dict[str, Any]:
    """A ``tools/call`` answer's ``answer_of`` member: the GOLEM exchange whose answer it is."""
    return {
        "route": found.route,
        "conn": found.conn,
        "n": found.index,
        "method": found.method,
        "tool": found.tool,
    }


_FRAME_TYPES: tuple[tuple[type[Message], str], ...] = (
    (Request, "request"),
    (Notification, "notification"),
    (Response, "response"),
    (ErrorResponse, "error"),
)


def frame_type(message: Message) -> str:
    """A frame line's ``type``: what kind of message the frame holds (a subclass, as the
    TUI's compact messages are, is the kind it extends)."""
    for kind, name in _FRAME_TYPES:
        if isinstance(message, kind):
            return name
    return "malformed"


def _undecodable(message: Message) -> bool:
    kind = getattr(message, "kind", None)
    return kind in (MalformedKind.INVALID_UTF8, MalformedKind.INVALID_JSON)


json_str = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""A string (or any value) as compact JSON text, without `dumps`' UTF-8 encoding."""
json_text = encode_basestring
"""A string, and only a string, as `json_str` writes it: the function `json_str` calls for
one, without the encoder's method around it (a frame's line has two or three)."""


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")
