"""A skeleton made from a payload's bytes, for a payload too large to parse that has none of
the writer's (`frame_skeleton`): a frame line over a reader's parse budget written before
skeletons, or a payload stored raw because it is no JSON at all (a peer's broken ``[[],[],…``
of 30 MB). Parsed whole, each costs more than the budget (900 MiB for 30 MB of ``[[],…``);
refused, the whole recording was lost to every reader.

The skeleton keeps what is cheap to read: a value of up to `SMALL` bytes is parsed as it is; a
larger object is walked to its members (`golem_proxy.json_walk`, strings and brackets only),
down to `LEVELS` levels (a message, its ``result``, that result's members: what profiles read
outcomes from); any other larger value is a placeholder saying how many bytes it took (an array
stays an array of one placeholder, as the writer's skeletons keep it). What it may cost is
bounded: its parse and its placeholders (`frame_skeleton.SKELETON_BUDGET`, each kept value
counted at least `KEPT_COST`: past it, an object keeps its envelope's members only,
`ENVELOPE`, as one of more than `MOST_MEMBERS` members does), and the walks' strings and
brackets (`MOST_TOKENS`: past it, what was not walked is left out). A payload that is not UTF-8,
an object whose walk breaks (a string or a bracket that does not close) and a value that does
not parse are no JSON: said without parsing the rest. The frame line's own members are the
proxy's reading of the whole payload, and stand where the skeleton cannot (`as_recorded`, the
``id`` and ``method`` of `skeleton_of_bytes`).

Unlike the writer's, such a skeleton was not checked against the message it stands for: a comma
missing inside a placeholder is not seen. A reader types the frame from it, marked elided
(`FrameSeen.elided`), as a view types a frame whose bulk it elided."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from golem_core.messages import Malformed, MalformedKind, Message, Role
from golem_core.outcome import Outcome, OutcomeKind
from golem_core.profiles import Profile

from ..json_cost import parse_cost
from ..json_walk import NotAnObject, Tokens, blanked, iter_members
from .frame_skeleton import SKELETON_BUDGET
from .line_guard import decode_payload
from .schema import RecordingError

__all__ = [
    "LEVELS",
    "SMALL",
    "as_recorded",
    "message_of_bytes",
    "outcome_as_recorded",
    "skeleton_of_bytes",
]

SMALL = 64 * 1024
"""A value this long or shorter is parsed as it is (a few MiB at most once parsed)."""
LEVELS = 3
"""The levels of objects walked to their members."""
MOST_MEMBERS = 4096
"""Past this many members, an object keeps only those named in `ENVELOPE`."""
ENVELOPE = frozenset(
    {"jsonrpc", "id", "method", "params", "result", "error", "success", "code", "message",
     "isError"}
)  # fmt: skip
"""The members of a JSON-RPC or GOLEM envelope and of a result that reports a failure (GOLEM's
error object and ``success: false``, MCP's ``isError``): what an object keeps past its budget."""
NEEDED = 4096
"""A member named in `ENVELOPE` this short is parsed even past the budget: an id, a flag, a
code, a message (at most ten of them an object)."""
KEPT_COST = 128
"""What a kept value counts against the budget at least: its slot, its object, a placeholder."""
MOST_TOKENS = 2_000_000
"""The strings and brackets the walks of one skeleton may take together (about a second):
text that nests deep everywhere costs a Python step per bracket."""


class NotUtf8(RecordingError):
    """A payload that is not UTF-8 (`skeleton_of_bytes`): no JSON before any is read."""


def message_of_bytes(
    payload: bytes, profile: Profile, role: Optional[Role], recorded: Mapping[str, Any]
) -> tuple[Message, int]:
    """The message of a raw payload too large to parse, typed by ``profile`` from its
    skeleton (`as_recorded`: ``recorded`` is its frame line's members), and the bytes the
    skeleton leaves out; a payload that is not UTF-8, or no JSON by what was read of it, is
    malformed (a parse would have taken hundreds of MiB to say so)."""
    try:
        skeleton, elided = skeleton_of_bytes(payload, recorded)
    except NotUtf8:
        return profile.parse(payload, role), 0  # refused before any JSON is parsed
    except RecordingError as exc:
        detail = f"{exc.what} (judged without parsing it whole: too large to parse)"
        return Malformed(MalformedKind.INVALID_JSON, detail, None, _recorded_id(recorded), role), 0
    return as_recorded(profile.parse_decoded(skeleton, role), recorded, role), elided


def as_recorded(message: Message, recorded: Mapping[str, Any], role: Optional[Role]) -> Message:
    """``message``, typed from a skeleton, as the proxy recorded it: a frame line's ``type``
    is the tap's reading of the whole payload. One it found malformed in a way the skeleton
    does not show (a comma missing inside the bulk) is malformed, its kind not known again."""
    if recorded.get("type") != "malformed" or isinstance(message, Malformed):
        return message
    detail = "recorded as malformed; too large to parse again, so how is not known"
    return Malformed(MalformedKind.INVALID_JSON, detail, None, _recorded_id(recorded), role)


def outcome_as_recorded(rebuilt: Outcome, recorded: Mapping[str, Any]) -> Outcome:
    """The outcome of an exchange one of whose frames a reader typed from a skeleton: the one
    ``rebuilt`` from the frames, or, where that is not what the exchange line ``recorded``
    (its ``outcome`` kind and ``status`` text: the proxy's decision on the whole payloads), the
    recorded one. A skeleton's budgets may leave out what the outcome is read from (a failure
    reported after a bulk); the line's decision stands then, its message not known again."""
    kind, status = recorded.get("outcome"), recorded.get("status")
    if not isinstance(kind, str) or not isinstance(status, str) or kind not in _OUTCOME_KINDS:
        return rebuilt  # a line written before it said its outcome's kind
    if rebuilt.kind.value == kind and rebuilt.text == status:
        return rebuilt
    found = OutcomeKind(kind)
    for suffix in _CODE_SUFFIXES.get(found, ()):
        if status.endswith(suffix):  # `Outcome.text` marks a result's code so
            name = status[: -len(suffix)]
            return Outcome(found, name, name)
    return Outcome(found, status)


_OUTCOME_KINDS = frozenset(kind.value for kind in OutcomeKind)
_CODE_SUFFIXES = {
    OutcomeKind.ERROR_IN_RESULT: (" (in result)",),
    OutcomeKind.UNSUCCESSFUL: (" (success: false)",),
}


def _recorded_id(recorded: Mapping[str, Any]) -> Any:
    """A frame line's ``id`` as the writer writes it (a string or an integer), else None."""
    ident = recorded.get("id")
    return ident if isinstance(ident, (str, int)) and not isinstance(ident, bool) else None


def skeleton_of_bytes(payload: bytes, recorded: Mapping[str, Any]) -> tuple[Any, int]:
    """The skeleton of ``payload`` (its bulk placeholders) and the bytes it leaves out (at
    least one); ``recorded``: its frame line's members, whose ``id`` and ``method`` (the
    tap's reading of the whole payload) it takes when its walks did not reach them. Raises
    RecordingError when ``payload`` is no JSON by what was read of it."""
    text = payload.strip(b" \t\r\n")
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotUtf8(f"not UTF-8 (byte {exc.start})") from None
    skeleton = _Skeleton(text)
    value = skeleton.value(0, len(text), LEVELS)
    ident = _recorded_id(recorded)
    if isinstance(value, dict):
        if "id" not in value and ident is not None:
            value["id"] = ident
        if "method" not in value and isinstance(recorded.get("method"), str):
            value["method"] = recorded["method"]
    return value, max(1, skeleton.elided)


class _Skeleton:
    """One payload's skeleton as it is built: what it left out, what it costs, what its walks
    may still take."""

    def __init__(self, text: bytes) -> None:
        self.text = text
        self.searched = b""  # `blanked` text, made for the first walk
        self.tokens = Tokens(MOST_TOKENS)
        self.elided = 0
        self.cost = 0

    def value(self, start: int, end: int, levels: int, needed: bool = False) -> Any:
        if end - start <= SMALL:
            cost = max(KEPT_COST, parse_cost(self.text[start:end])[0])
            if self.cost + cost <= SKELETON_BUDGET or (needed and end - start <= NEEDED):
                self.cost += cost
                return decode_payload(self.text[start:end])
        if self.text[start : start + 1] == b"{" and levels > 0 and self.affords():
            return self.members(start, end, levels - 1)
        return self.placeholder(start, end)

    def affords(self) -> bool:
        return self.cost + KEPT_COST <= SKELETON_BUDGET

    def placeholder(self, start: int, end: int) -> Any:
        size = end - start
        self.elided += size
        self.cost += KEPT_COST
        text = f"<{size} bytes not parsed>"
        return [text] if self.text[start : start + 1] == b"[" else text

    def members(self, start: int, end: int, levels: int) -> dict[str, Any]:
        if not self.searched:
            self.searched = blanked(self.text)
        kept: dict[str, Any] = {}
        known = start  # where the members walked end
        count = 0
        try:
            for key, at, to in iter_members(
                self.text, start, end, searched=self.searched, tokens=self.tokens
            ):
                if key is None:
                    raise RecordingError("not JSON: a key that does not read as a string")
                count += 1
                if to < 0:  # the walk stopped inside its value: the rest is left out
                    kept[key] = self.placeholder(at, end - 1)
                    return kept
                known = to
                if key in ENVELOPE:
                    kept[key] = self.value(at, to, levels, needed=True)
                elif count <= MOST_MEMBERS and self.affords():
                    kept[key] = self.value(at, to, levels)
                else:
                    self.elided += to - at
        except NotAnObject as exc:
            raise RecordingError(f"not JSON: {exc}") from None
        if self.tokens.left < 0:  # the walk stopped: what it did not reach is left out
            self.elided += end - known
        return kept
