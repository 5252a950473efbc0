"""A skeleton made from a payload's bytes, for a frame line over a reader's parse budget that
carries none: a recording written before the writer put skeletons beside such payloads
(`frame_skeleton`), or a payload stored raw because it is no JSON at all (a peer's broken
``[[],[],…`` of 30 MB). Parsed whole, either costs more than the budget (900 MiB for 30 MB of
``[[],…``); refused, the whole recording was lost to every reader.

The payload's brackets are checked first (`line_guard.not_one_value`, in C): a payload that is
not one JSON value is no JSON, said without parsing it. Then the skeleton keeps what is cheap
to read: a value of up to `SMALL` bytes is parsed as it is; a larger object is walked to its
members (`golem_proxy.json_walk`, strings and brackets only), down to `LEVELS` levels (a
message, its ``result``, that result's members: what profiles read outcomes from); any other
larger value is a placeholder saying how many bytes it took (an array stays an array of one
placeholder, as the writer's skeletons keep it). What parsing the skeleton costs is bounded
(`frame_skeleton.SKELETON_BUDGET`): past it, values that would parse are placeholders too; an
object of more than `MOST_MEMBERS` members keeps those of an envelope only (`ENVELOPE`).

Unlike the writer's, such a skeleton was not checked against the message it stands for: a
member of broken text that a parse would refuse may stand in it as a placeholder. A reader
types the frame from it, marked elided (`FrameSeen.elided`), as a view types a frame whose bulk
it elided; the recording's exchange lines carry the outcome the proxy decided live."""

from __future__ import annotations

from typing import Any, Optional

from golem_core.messages import Malformed, MalformedKind, Message, Role
from golem_core.profiles import Profile

from ..json_walk import Member, object_members
from .frame_skeleton import SKELETON_BUDGET
from .line_guard import decode_payload, not_one_value, parse_cost
from .schema import RecordingError

__all__ = ["LEVELS", "SMALL", "message_of_bytes", "skeleton_of_bytes"]

SMALL = 64 * 1024
"""A value this long or shorter is parsed as it is (a few MiB at most once parsed)."""
LEVELS = 3
"""The levels of objects walked to their members."""
MOST_MEMBERS = 4096
"""An object with more members than this keeps only those named in `ENVELOPE`: its skeleton
would be bulk."""
ENVELOPE = frozenset({"jsonrpc", "id", "method", "params", "result", "error", "success"})
"""The members of a JSON-RPC or GOLEM envelope, and of a GOLEM result that reports a failure:
what a wide object keeps."""


def message_of_bytes(payload: bytes, profile: Profile, role: Optional[Role]) -> tuple[Message, int]:
    """The message of a payload too large to parse, typed by ``profile`` from its skeleton,
    and the bytes the skeleton leaves out; a payload that is not UTF-8, or no JSON by what
    was read of it, is malformed (a parse would have taken hundreds of MiB to say so)."""
    try:
        payload.decode("utf-8")
    except UnicodeDecodeError:
        return profile.parse(payload, role), 0  # refused before any JSON is parsed
    try:
        skeleton, elided = skeleton_of_bytes(payload)
    except RecordingError as exc:
        detail = f"{exc.what} (judged without parsing it whole: too large to parse)"
        return Malformed(MalformedKind.INVALID_JSON, detail, None, None, role), 0
    return profile.parse_decoded(skeleton, role), elided


def skeleton_of_bytes(payload: bytes) -> tuple[Any, int]:
    """The skeleton of ``payload`` (its bulk placeholders) and the bytes it leaves out (at
    least one). Raises RecordingError when ``payload`` is no JSON by what was read of it: its
    brackets, or a value small enough to parse."""
    problem = not_one_value(payload)
    if problem:
        raise RecordingError(problem)
    text = payload.strip(b" \t\r\n")
    skeleton = _Skeleton(text)
    value = skeleton.value(0, len(text), LEVELS)
    return value, max(1, skeleton.elided)


class _Skeleton:
    """One payload's skeleton as it is built: what it left out, what parsing it costs."""

    def __init__(self, text: bytes) -> None:
        self.text = text
        self.elided = 0
        self.cost = 0

    def value(self, start: int, end: int, levels: int) -> Any:
        size = end - start
        if size <= SMALL:
            cost = parse_cost(self.text[start:end])[0]
            if self.cost + cost <= SKELETON_BUDGET:
                self.cost += cost
                return decode_payload(self.text[start:end])
        opening = self.text[start : start + 1]
        if opening == b"{" and levels > 0:
            members = object_members(self.text, start, end)
            if members is not None:
                return self.members(members, levels - 1)
        self.elided += size
        placeholder = f"<{size} bytes not parsed>"
        return [placeholder] if opening == b"[" else placeholder

    def members(self, members: list[Member], levels: int) -> dict[str, Any]:
        kept: dict[str, Any] = {}
        wide = len(members) > MOST_MEMBERS
        for key, start, end in members:
            if key is None:
                raise RecordingError("not JSON: a key that does not read as a string")
            if wide and key not in ENVELOPE:
                self.elided += end - start
                continue
            kept[key] = self.value(start, end, levels)
        return kept
