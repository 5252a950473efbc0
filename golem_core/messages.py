"""The message model: a frame's payload becomes a Request, a Notification (a request that
wants no answer), a Response, an ErrorResponse or a Malformed message of one documented kind.

Envelope rules differ per protocol, so the profiles (`golem_core.profiles`) decide which of
these a decoded object is; this module holds the shared types, the closed taxonomy of malformed
kinds and the first, protocol-independent steps (UTF-8, then JSON, then "is it an object").
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

__all__ = [
    "ABSENT",
    "KINDS",
    "OPAQUE_CHARACTERS",
    "ErrorResponse",
    "Malformed",
    "MalformedKind",
    "Message",
    "Notification",
    "OpaqueCheck",
    "OpaqueSpan",
    "Request",
    "Response",
    "Role",
    "RpcError",
    "decode_json",
    "elide_long_strings",
    "is_json_int",
    "is_opaque_run",
    "kind_of",
    "method_of",
]


class Role(enum.Enum):
    """Which side of an exchange a message is expected to be."""

    REQUEST = "request"
    RESPONSE = "response"


class MalformedKind(enum.Enum):
    """Every way a payload can fail to be a valid message. Closed: profiles map each to their own
    outcome names (the Scrybe contract's, for instance) and `docs/wire-contract.md` pins them."""

    INVALID_UTF8 = "invalid-utf8"
    INVALID_JSON = "invalid-json"
    NOT_AN_OBJECT = "not-an-object"
    WRONG_VERSION = "wrong-version"
    MISSING_ID = "missing-id"
    INVALID_ID = "invalid-id"
    MISSING_METHOD = "missing-method"
    INVALID_METHOD = "invalid-method"
    INVALID_PARAMS = "invalid-params"
    BOTH_RESULT_AND_ERROR = "both-result-and-error"
    NEITHER_RESULT_NOR_ERROR = "neither-result-nor-error"
    INVALID_ERROR_OBJECT = "invalid-error-object"


class _Absent:
    """Marks a member that is not present at all (as opposed to present and null)."""

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()

JsonId = Union[str, int, None]


@dataclass(frozen=True)
class RpcError:
    """A well-formed error object: ``code`` is an int (JSON-RPC) or a GOLEM domain string.
    ``details`` is GOLEM's optional member, ``data`` JSON-RPC's; both ABSENT when missing."""

    code: Union[int, str]
    message: str
    details: Any = ABSENT
    data: Any = ABSENT


class _Slotted:
    """Base of the message classes: slotted, because a viewer keeps two messages per
    exchange of a recording and an instance dictionary cost ~100 bytes each. Frozen
    dataclasses refuse ``setattr``, so pickling (a forked reader's result) restores the
    slots itself."""

    __slots__ = ()

    def __getstate__(self) -> tuple[Any, ...]:
        names: tuple[str, ...] = self.__slots__
        return tuple(getattr(self, name) for name in names)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        names: tuple[str, ...] = self.__slots__
        for name, value in zip(names, state):
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class Request(_Slotted):
    """A call. ``params`` is exactly what was on the wire (ABSENT when the member is missing)."""

    __slots__ = ("id", "method", "obj", "params")

    id: JsonId
    method: str
    params: Any
    obj: dict[str, Any]

    role = Role.REQUEST


@dataclass(frozen=True)
class Notification(_Slotted):
    """A request that wants no answer (JSON-RPC 2.0: a ``method`` and no ``id``). Either peer
    may send one: a server's progress or log message, a client's "initialized". Never paired,
    never held; ``params`` is exactly what was on the wire (ABSENT when missing)."""

    __slots__ = ("method", "obj", "params")

    method: str
    params: Any
    obj: dict[str, Any]

    id = None
    role = Role.REQUEST


@dataclass(frozen=True)
class Response(_Slotted):
    """A successful reply."""

    __slots__ = ("id", "obj", "result")

    id: JsonId
    result: Any
    obj: dict[str, Any]

    role = Role.RESPONSE


@dataclass(frozen=True)
class ErrorResponse(_Slotted):
    """A reply carrying a well-formed error object."""

    __slots__ = ("error", "id", "obj")

    id: JsonId
    error: RpcError
    obj: dict[str, Any]

    role = Role.RESPONSE


@dataclass(frozen=True)
class Malformed(_Slotted):
    """A payload that is not a valid message. ``obj`` is the decoded JSON when there was any,
    ``id`` the best-effort id (for pairing a reply to it), ``role`` what it was expected to be."""

    __slots__ = ("detail", "id", "kind", "obj", "role")

    kind: MalformedKind
    detail: str
    obj: Any
    id: JsonId
    role: Optional[Role]


Message = Union[Request, Notification, Response, ErrorResponse, Malformed]

# What json.loads(str) calls, minus its per-call argument handling.
_json_decode = json.JSONDecoder().decode
_object_new = object.__new__
# The slots' own setters: a frozen dataclass's __setattr__ refuses, object.__setattr__ is slower.
_request_slots: dict[str, Any] = dict(vars(Request))
_set_request_id = _request_slots["id"].__set__
_set_request_method = _request_slots["method"].__set__
_set_request_params = _request_slots["params"].__set__
_set_request_obj = _request_slots["obj"].__set__


def build_request(ident: JsonId, method: str, params: Any, obj: dict[str, Any]) -> Request:
    """``Request(ident, method, params, obj)`` for the decoding hot path: a frozen dataclass's
    generated __init__ sets each field through object.__setattr__, which is slow."""
    request: Request = _object_new(Request)
    _set_request_id(request, ident)
    _set_request_method(request, method)
    _set_request_params(request, params)
    _set_request_obj(request, obj)
    return request


def method_of(message: Message) -> Optional[str]:
    """The method a request or notification names, also when it is malformed but still says
    it (None else)."""
    if isinstance(message, (Request, Notification)):
        return message.method
    if isinstance(message, Malformed) and isinstance(message.obj, dict):
        method = message.obj.get("method")
        return method if isinstance(method, str) else None
    return None


KINDS = ("object", "array", "number", "string", "boolean", "null")


def kind_of(value: Any) -> str:
    """The JSON kind of a decoded value: one of `KINDS`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    return "object"


def is_json_int(value: Any) -> bool:
    """True for a JSON integer (Python int, but not bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


# A run of this many base64/identifier characters between two quotes can only be the inside
# of one JSON string: anything structural between two tokens needs a ',' or ':' first.
_OPAQUE_CHARS = rb"[A-Za-z0-9+/=_.\-]"
OPAQUE_CHARACTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_.-"
"""Every opaque character: a run is opaque when deleting them all leaves nothing, one C loop
and no copy of the run (a 16 MiB blob: ~20 ms, against ~65 ms to translate it first)."""

OpaqueCheck = Callable[[bytes, int, int], bool]
"""Whether ``payload[start:end]`` is a non-empty run of `OPAQUE_CHARACTERS` (`is_opaque_run`)."""
OpaqueSpan = Callable[[bytes, int], int]
"""How many bytes of `OPAQUE_CHARACTERS` follow one another in ``payload`` from ``start``."""


def elide_long_strings(
    payload: bytes,
    min_length: int,
    is_opaque: Optional[OpaqueCheck] = None,
    opaque_span: Optional[OpaqueSpan] = None,
) -> tuple[bytes, int]:
    """Replace every JSON string made of at least ``min_length`` base64-like characters (an
    image, a mesh blob) by a short placeholder. Returns the smaller payload and how many bytes
    were elided. The result types and checks like the original (a string stays a string), so
    a live view can inspect a 64 MiB frame without materialising its blob twice.

    Exactly what substituting ``"<opaque>{min_length,}"`` would give, found faster: such a
    run contains a whole aligned block of ``min_length // 2`` bytes without a quote, so the
    payload is probed block by block with ``find`` (memchr) and only quote-free blocks are
    looked at closely. A 16 MiB blob costs a few ms instead of a regex step per byte.
    ``is_opaque`` checks a run (`is_opaque_run` when None): a faster one must agree with it.
    With ``opaque_span``, a run is measured from its opening quote instead: where it stops at
    a quote, that is its closing quote and the run is opaque, found and checked in one pass
    (a 16 MiB blob is not searched for its quote first)."""
    if min_length < 2:
        return _elide_by_pattern(payload, min_length)
    check = is_opaque_run if is_opaque is None else is_opaque
    block = min_length // 2
    size = len(payload)
    find, rfind = payload.find, payload.rfind
    pieces: list[bytes] = []
    elided = 0
    done = 0  # payload[:done] is in pieces
    start = 0
    while start < size:
        if find(b'"', start, start + block) >= 0:
            start += block
            continue
        opening = rfind(b'"', done, start)
        opaque: Optional[bool] = None
        if opaque_span is not None and opening >= 0:
            # No quote lies between the opening one and the block's end: the first byte the
            # run stops at is the closing quote (all before it opaque), or no run reaches it.
            stop = opening + 1 + opaque_span(payload, opening + 1)
            opaque = payload[stop : stop + 1] == b'"'
            closing = stop if opaque else find(b'"', stop)
        else:
            closing = find(b'"', start + block)
        if closing < 0:
            break
        length = closing - opening - 1
        if opaque is None:
            opaque = opening >= 0 and length >= min_length and check(payload, opening + 1, closing)
        if opaque and length >= min_length:
            pieces.append(payload[done:opening])
            pieces.append(b'"<%d bytes elided>"' % length)
            elided += length
            done = closing + 1
        start = (closing // block + 1) * block  # the first block after the closing quote
    if not elided:
        return payload, 0
    pieces.append(payload[done:])
    return b"".join(pieces), elided


_OPAQUE_WINDOW = 512 * 1024
"""The piece of a run checked at a time: copied and scanned while it is still in the cache (a
16 MiB run copied whole, then scanned, took twice as long, both passes missing the cache)."""


def is_opaque_run(payload: bytes, start: int, end: int) -> bool:
    """Whether ``payload[start:end]`` is a non-empty run of `OPAQUE_CHARACTERS`."""
    if start >= end:
        return False
    for at in range(start, end, _OPAQUE_WINDOW):
        if payload[at : min(at + _OPAQUE_WINDOW, end)].translate(None, OPAQUE_CHARACTERS):
            return False
    return True


def _elide_by_pattern(payload: bytes, min_length: int) -> tuple[bytes, int]:
    """`elide_long_strings` by regex substitution: the definition the fast path keeps to."""
    pattern = re.compile(b'"' + _OPAQUE_CHARS + b"{%d,}" % min_length + b'"')
    elided = 0

    def placeholder(match: re.Match[bytes]) -> bytes:
        nonlocal elided
        size = match.end() - match.start() - 2
        elided += size
        return b'"<%d bytes elided>"' % size

    return pattern.sub(placeholder, payload), elided


def decode_json(payload: bytes) -> tuple[Any, Optional[Malformed]]:
    """Decode a payload as the GOLEM reference does (``payload.decode("utf-8")`` then
    ``json.loads``). Returns ``(obj, None)`` or ``(None, Malformed)`` for invalid UTF-8 or JSON.

    Decoding through ``str`` matters: ``json.loads(bytes)`` would guess UTF-16/32 encodings.
    """
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, Malformed(
            MalformedKind.INVALID_UTF8, f"invalid UTF-8 at byte {exc.start}", None, None, None
        )
    try:
        return _json_decode(text), None
    except ValueError as exc:  # JSONDecodeError, and RecursionError-free ValueErrors
        return None, Malformed(MalformedKind.INVALID_JSON, str(exc), None, None, None)
    except RecursionError:
        return None, Malformed(MalformedKind.INVALID_JSON, "nesting too deep", None, None, None)
