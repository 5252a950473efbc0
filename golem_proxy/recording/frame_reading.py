"""A frame's line read back (docs/recording-format.md, "Frames"): the line parsed with its
payload apart (`event_object`), then the frame built from its members (`read_frame`); a frame
too large to parse is read from its skeleton (`frame_skeleton`), or from one made of its bytes
when it has none (`byte_skeleton`)."""

from __future__ import annotations

import sys
from typing import Any, Optional

from golem_core.messages import Message, Role
from golem_core.profiles import Profile

from .. import events
from ..events import Direction
from .byte_skeleton import as_recorded, message_of_bytes, skeleton_of_bytes
from .frame_skeleton import over_parse_budget
from .line_guard import (
    NOT_ONE_VALUE,
    OverBudget,
    check_line,
    decode_json,
    decode_payload,
    not_one_value,
)
from .members import (
    member_answer_of,
    member_base64,
    member_bool,
    member_direction,
    member_int,
    member_optional_int,
    member_optional_str,
    member_redacted,
    member_routes_down,
    member_str,
    member_tool_calls,
)
from .schema import MSG_KEY, RecordingError

__all__ = ["event_object", "read_frame"]

_NOT_LAST = "msg is not the last member"


def event_object(line: bytes) -> tuple[dict[str, Any], Optional[bytes]]:
    """One event line parsed, after its parse budget is checked: its members, and a frame's
    verbatim payload (None for other lines). Raises RecordingError.

    A frame's payload is the line's bytes after the first ``,"msg":`` up to its last ``}``
    (docs/recording-format.md). The members before it and the payload are parsed apart, at
    the cost of parsing the line once, so that the message a reader shows is the one whose
    bytes it keeps: a line whose ``msg`` is not its last member, or that has two, is
    refused. A frame line over the parse budget has its members parsed, not its payload: it
    is typed from its skeleton (the writer's, for a payload too large to parse:
    `frame_skeleton`), or from one made of its bytes when it has none (`byte_skeleton`)."""
    try:
        check_line(line)
    except OverBudget:
        unparsed = _unparsed_frame(line)
        if unparsed is None:
            raise
        return unparsed
    start = line.find(MSG_KEY)
    members = _frame_members(line, start)
    if members is not None:
        if "msg" in members:
            raise RecordingError(_NOT_LAST)
        payload = _verbatim(line, start)
        try:
            members["msg"] = decode_payload(payload)
        except RecordingError as exc:
            if exc.what.startswith("not JSON: Extra data"):
                raise RecordingError(_NOT_LAST) from None
            raise
        return members, payload
    data = decode_json(line)
    if not isinstance(data, dict):
        raise RecordingError("an event line is not a JSON object")
    if start >= 0 and data.get("kind") == "frame" and "msg" in data:
        raise RecordingError(_NOT_LAST)  # members before it that do not parse on their own
    return data, None


def _unparsed_frame(line: bytes) -> Optional[tuple[dict[str, Any], bytes]]:
    """The members of a frame ``line`` over the parse budget, parsed without its payload
    (checked as any line is), and its payload as the line holds it, unparsed: typed from the
    writer's skeleton (its brackets checked, `not_one_value`), or from one made of its bytes
    when the line has none (`byte_skeleton`: a recording written before skeletons); None
    when ``line`` is no such line. Raises RecordingError."""
    start = line.find(MSG_KEY)
    if start < 0:
        return None
    check_line(line[:start] + b"}")
    members = _frame_members(line, start)
    if members is None or "msg" in members or "raw" in members:
        return None
    payload = _verbatim(line, start)
    if "skeleton" not in members:
        members["skeleton"], members["elided"] = skeleton_of_bytes(payload, members)
        return members, payload
    problem = not_one_value(payload)
    if problem == NOT_ONE_VALUE:
        # The writer puts one JSON value after ``"msg":``: a member after it, or damage.
        problem += " (msg is not the last member?)"
    if problem:
        raise RecordingError(problem)
    return members, payload


def _frame_members(line: bytes, start: int) -> Optional[dict[str, Any]]:
    """A frame line's members before its first ``,"msg":`` at ``start``, parsed on their own;
    None when there is none or they are not a frame's (a ``,"msg":`` inside another
    member: not the writer's frame)."""
    if start < 0:
        return None
    try:
        members = decode_json(line[:start] + b"}")
    except RecordingError:
        return None
    return members if isinstance(members, dict) and members.get("kind") == "frame" else None


def _verbatim(line: bytes, start: int) -> bytes:
    """A frame's payload: the line's bytes after its ``,"msg":`` at ``start`` up to its last
    ``}`` (a checkout may have added a carriage return after it)."""
    return line[start + len(MSG_KEY) : line.rstrip(b"\r\n").rfind(b"}")]


def read_frame(
    data: dict[str, Any], verbatim: Optional[bytes], t: float, profile: Profile
) -> events.FrameSeen:
    """The frame of a parsed ``frame`` line (`event_object`: ``verbatim`` is its payload as
    the line holds it), every member checked, typed by ``profile``. Raises RecordingError."""
    direction = member_direction(data)
    role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
    # Copies of the message's, for people reading the file: checked as every member is, so
    # that every reader refuses the same line in the same words.
    member_str(data, "type", "")
    member_optional_str(data, "method")
    redacted = member_redacted(data)
    elided = 0
    if "raw" in data:
        if "msg" in data:
            raise RecordingError("a frame line has both msg and raw")
        payload = member_base64(data)
        if not over_parse_budget(payload, 0):
            message = profile.parse(payload, role)
        elif "skeleton" in data:
            message, elided = _from_skeleton(data, profile, role)
        else:
            message, elided = message_of_bytes(payload, profile, role, data)
    elif "msg" not in data and "skeleton" in data and verbatim is not None:
        # Over the parse budget (`event_object`): typed from its skeleton, its bytes kept.
        payload = verbatim
        message, elided = _from_skeleton(data, profile, role)
    else:
        if "msg" not in data:
            raise RecordingError("a frame line has neither msg nor raw")
        obj = data["msg"]
        if redacted:
            payload = profile.encode_payload(obj)
        elif verbatim is None:
            raise RecordingError('msg is not where the writer puts it (,"msg": last)')
        else:
            payload = verbatim
        if type(obj) is dict and type(obj.get("method")) is str:
            # One string per method name, not one per request: a viewer keeps them all.
            obj["method"] = sys.intern(obj["method"])
        message = profile.parse_decoded(obj, role)
    route = sys.intern(member_str(data, "route", ""))
    late = member_bool(data, "late", False)
    answer_of = member_answer_of(data)
    held_under = member_bool(data, "held_under", False)
    _check_layer_members(late, answer_of, route, direction, profile)
    if held_under and (profile.name != _MCP or direction is not Direction.S2C):
        raise RecordingError(
            "held_under on a frame that is no answer of the MCP hop (only a tool call holds "
            "GOLEM requests)"
        )
    return events.FrameSeen(
        conn=member_int(data, "conn"),
        route=route,
        direction=direction,
        index=member_int(data, "n"),
        t=t,
        size=member_int(data, "size", len(payload)),
        payload=payload,
        message=message,
        redacted=redacted,
        elided=elided,
        tool_calls=member_tool_calls(data),
        expects_answer=member_bool(data, "expects_answer", False),
        answers=member_optional_int(data, "answers"),
        orphan=member_bool(data, "orphan", False),
        undelivered=member_str(data, "undelivered", ""),
        delivered_bytes=member_int(data, "delivered_bytes", 0),
        routes_down=member_routes_down(data),
        late=late,
        answer_of=answer_of,
        held_under=held_under,
    )


def _check_layer_members(
    late: bool,
    answer_of: Optional[events.AnswerOf],
    route: str,
    direction: Direction,
    profile: Profile,
) -> None:
    """Refuse the two-layer members on a frame they cannot be true of: ``late`` is said of a
    GOLEM answer only (decoded after its tool calls were answered), ``answer_of`` of the
    answer to an MCP tool call only, naming a GOLEM exchange. Views believe them (they mark
    rows by them): a reader does not re-derive them, it refuses a file that lies."""
    mcp = profile.name == _MCP
    if late and (mcp or direction is not Direction.S2C):
        raise RecordingError(
            "late on a frame that is no GOLEM answer (only a plugin's answer comes late)"
        )
    if answer_of is None:
        return
    if not mcp or direction is not Direction.S2C:
        raise RecordingError(
            "answer_of on a frame that is no answer of the MCP hop (only a tool call's "
            "answer is another exchange's)"
        )
    if answer_of.route == route:
        raise RecordingError("answer_of names the MCP hop's own route: it names a GOLEM exchange")


_MCP = "mcp"
"""The profile of `golem-proxy mcp`'s stdio hop (the ``mcp`` route)."""


def _from_skeleton(data: dict[str, Any], profile: Profile, role: Role) -> tuple[Message, int]:
    """The message of a frame line's ``skeleton``, as the line's ``type`` says the proxy read
    the whole payload (`as_recorded`), and the bytes its ``elided`` says were left out of it
    (at least one: it stands for a payload it is not)."""
    message = as_recorded(profile.parse_decoded(data["skeleton"], role), data, role)
    return message, max(1, member_int(data, "elided", 1))
