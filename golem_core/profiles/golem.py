"""The `golem` profile: GOLEM-3DMCP's length-prefixed JSON link (spec: golem-tcp-protocol.md)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, Optional

from ..contract import Rule, Severity, Violation, violation
from ..framing import (
    DEFAULT_LENGTH_PREFIXED_CAP,
    FrameError,
    FrameErrorKind,
    Framing,
    encode_json,
    encode_length_prefixed,
)
from ..messages import (
    ABSENT,
    ErrorResponse,
    Malformed,
    MalformedKind,
    Message,
    Request,
    Response,
    Role,
    RpcError,
    build_request,
    is_json_int,
)
from ..outcome import ErrorObjectInResult, UnsuccessfulFlag
from ..registry import GOLEM_REGISTRY
from .base import INTERNAL_ERROR_CODE, DefaultRoute, Profile
from .members import error_object, id_is_valid, mistyped, path_of

__all__ = ["INTERNAL_ERROR_CODE", "METHOD_NOT_FOUND_CODE", "RULES", "GolemProfile"]

METHOD_NOT_FOUND_CODE = -32601
NOT_FOUND_CODE = "NOT_FOUND"
_NO_SUCH_GUID = "00000000-0000-4000-8000-000000000000"

_SPEC = "golem-tcp-protocol.md"
R_OVERSIZED = Rule(
    "golem.frame.oversized",
    Severity.ERROR,
    "The header declares more than 64 MiB; both reference sides reject it with ValueError.",
    f"{_SPEC} § Wire Format",
)
R_TRUNCATED = Rule(
    "golem.frame.truncated",
    Severity.ERROR,
    "The stream ended inside a frame (the reference reader raises ConnectionError).",
    f"{_SPEC} § Wire Format",
)
R_MALFORMED = Rule(
    "golem.message.malformed",
    Severity.ERROR,
    "The payload is not a valid request or response envelope.",
    f"{_SPEC} § Message Format",
)
R_PARAMS_OBJECT = Rule(
    "golem.request.params-object",
    Severity.WARNING,
    "`params` should be an object; when absent or not an object the plugin treats it as {}.",
    f"{_SPEC} § Request",
)
R_EXPLICIT_NULL_ERROR = Rule(
    "golem.response.explicit-null-error",
    Severity.ERROR,
    'A success response must carry `"error": null` explicitly.',
    f"{_SPEC} § Wire Compatibility Notes (null values)",
)
R_EXPLICIT_NULL_RESULT = Rule(
    "golem.response.explicit-null-result",
    Severity.ERROR,
    'An error response must carry `"result": null` explicitly.',
    f"{_SPEC} § Wire Compatibility Notes (null values)",
)
R_RESULT_OBJECT = Rule(
    "golem.response.result-object",
    Severity.WARNING,
    "A success `result` is the handler's return value as an object (at minimum {}).",
    f"{_SPEC} § Response — Success",
)
R_UNKNOWN_CODE = Rule(
    "golem.error.unknown-code",
    Severity.ERROR,
    "Error codes are -32601/-32603/-32000 or a GOLEM domain code string.",
    f"{_SPEC} § Error Codes",
)
R_OK_CODE = Rule(
    "golem.error.ok-code",
    Severity.ERROR,
    "`OK` is a success code and is never used in an error response.",
    f"{_SPEC} § GOLEM Domain Codes",
)
R_DETAILS_OBJECT = Rule(
    "golem.error.details-object",
    Severity.WARNING,
    "The optional `details` of a domain error is an object.",
    f"{_SPEC} § GOLEM Domain Codes",
)
R_UNKNOWN_MEMBER = Rule(
    "golem.envelope.unknown-member",
    Severity.WARNING,
    "Envelopes have only id/method/params (request) or id/result/error (response).",
    f"{_SPEC} § Message Format",
)
R_ASCII_ESCAPED = Rule(
    "golem.encoding.ascii-escaped",
    Severity.WARNING,
    "Non-ASCII text is sent as UTF-8 (`ensure_ascii=False`), not as \\u escapes.",
    f"{_SPEC} § Wire Compatibility Notes (JSON encoding)",
)
R_ID_ECHOED = Rule(
    "golem.exchange.id-echoed",
    Severity.ERROR,
    "The response echoes the request's id (same value and type).",
    f"{_SPEC} § Response",
)
R_NULL_ID = Rule(
    "golem.exchange.null-id",
    Severity.ERROR,
    "A null response id is only for requests that could not be parsed.",
    f"{_SPEC} § Response — Error",
)
RULES = (
    R_OVERSIZED,
    R_TRUNCATED,
    R_MALFORMED,
    R_PARAMS_OBJECT,
    R_EXPLICIT_NULL_ERROR,
    R_EXPLICIT_NULL_RESULT,
    R_RESULT_OBJECT,
    R_UNKNOWN_CODE,
    R_OK_CODE,
    R_DETAILS_OBJECT,
    R_UNKNOWN_MEMBER,
    R_ASCII_ESCAPED,
    R_ID_ECHOED,
    R_NULL_ID,
)
"""Every rule this profile checks, in the order the wire contract documents them."""

# Malformed responses whose id was read and validated before the envelope check failed.
_ID_READ_KINDS = (
    MalformedKind.BOTH_RESULT_AND_ERROR,
    MalformedKind.NEITHER_RESULT_NOR_ERROR,
    MalformedKind.INVALID_ERROR_OBJECT,
)
_REQUEST_MEMBERS = ("id", "method", "params")
_RESPONSE_MEMBERS = ("id", "result", "error")
# A \u escape of a code point >= 0x80 (an escaped backslash before it is rare enough to ignore).
_NON_ASCII_ESCAPE = re.compile(
    rb"\\u(?:00[89a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}|[1-9a-fA-F][0-9a-fA-F]{3})"
)


class GolemProfile(Profile):
    """GOLEM-3DMCP: ``!I`` length prefix, JSON objects, string-or-int ids, mixed code sets."""

    name = "golem"
    framing = Framing.LENGTH_PREFIXED
    default_cap = DEFAULT_LENGTH_PREFIXED_CAP
    registry = GOLEM_REGISTRY
    rules = RULES
    channels = ("main", "gh")
    # A GOLEM client sends a request and reads its one answer; between calls it reads nothing.
    clients_read_past_answers = False
    builtin_methods = ("ping", "shutdown", "list_methods")
    # The Grasshopper server (9877) answers gh.ping and gh.shutdown before its dispatcher.
    channel_builtins = MappingProxyType(
        {channels[0]: builtin_methods, channels[1]: ("gh.ping", "gh.shutdown")}
    )
    # The plugin's wrapped handlers (operations.*, manipulation.*) return their error dict as
    # the result of a success envelope; scripts and viewport calls say "success": false.
    result_failures = (ErrorObjectInResult(), UnsuccessfulFlag())

    def default_routes(self, env: Mapping[str, str]) -> tuple[DefaultRoute, ...]:
        # The MCP server finds the plugin through GOLEM_RHINO_PORT / GOLEM_GH_PORT.
        return (
            DefaultRoute(
                self.channels[0],
                "127.0.0.1:19876",
                "127.0.0.1:9876",
                "GOLEM_RHINO_PORT",
                client_host_env="GOLEM_RHINO_HOST",
            ),
            DefaultRoute(self.channels[1], "127.0.0.1:19877", "127.0.0.1:9877", "GOLEM_GH_PORT"),
        )

    def frame_payload(self, payload: bytes) -> bytes:
        return encode_length_prefixed(payload)

    def encode_payload(self, obj: Any) -> bytes:
        return encode_json(obj)

    def parse_request(self, obj: Any) -> Message:
        problem = _not_an_envelope(obj, Role.REQUEST)
        if problem is not None:
            return problem
        ident = obj["id"]
        id_type = type(ident)
        if id_type is not str and id_type is not int and not id_is_valid(ident):
            detail = mistyped("request `id`", ident, "a string or integer")
            return _bad(MalformedKind.INVALID_ID, detail, obj, Role.REQUEST)
        method = obj.get("method", ABSENT)
        if method is ABSENT:
            return _bad(MalformedKind.MISSING_METHOD, "request has no `method`", obj, Role.REQUEST)
        if not isinstance(method, str):
            detail = mistyped("`method`", method, "a string")
            return _bad(MalformedKind.INVALID_METHOD, detail, obj, Role.REQUEST)
        return build_request(ident, method, obj.get("params", ABSENT), obj)

    def parse_response(self, obj: Any) -> Message:
        problem = _not_an_envelope(obj, Role.RESPONSE)
        if problem is not None:
            return problem
        ident = obj["id"]
        if ident is not None and not id_is_valid(ident):
            detail = mistyped("response `id`", ident, "a string, integer or null")
            return _bad(MalformedKind.INVALID_ID, detail, obj, Role.RESPONSE)
        result = obj.get("result")
        error = obj.get("error")
        if result is not None and error is not None:
            return _bad(
                MalformedKind.BOTH_RESULT_AND_ERROR,
                "both `result` and `error` are non-null",
                obj,
                Role.RESPONSE,
            )
        if error is None:
            if result is None:
                return _bad(
                    MalformedKind.NEITHER_RESULT_NOR_ERROR,
                    "neither `result` nor `error` is non-null",
                    obj,
                    Role.RESPONSE,
                )
            return Response(ident, result, obj)
        parsed = _parse_error_object(error)
        if isinstance(parsed, str):
            return _bad(MalformedKind.INVALID_ERROR_OBJECT, parsed, obj, Role.RESPONSE)
        return ErrorResponse(ident, parsed, obj)

    def check_message(self, message: Message, payload: bytes = b"") -> list[Violation]:
        found: list[Violation] = []
        if isinstance(message, Malformed):
            found.append(
                violation(R_MALFORMED, message.detail, outcome=self.malformed_outcome(message.kind))
            )
        elif isinstance(message, Request):
            params = message.params
            if params is ABSENT:
                found.append(violation(R_PARAMS_OBJECT, "`params` is missing", "$.params"))
            elif not isinstance(params, dict):
                found.append(_not_an_object(R_PARAMS_OBJECT, params, "$.params"))
            found.extend(_unknown_members(message.obj, _REQUEST_MEMBERS))
        elif isinstance(message, Response):
            if "error" not in message.obj:
                found.append(
                    violation(R_EXPLICIT_NULL_ERROR, "success response omits `error`", "$.error")
                )
            if not isinstance(message.result, dict):
                found.append(_not_an_object(R_RESULT_OBJECT, message.result, "$.result"))
            found.extend(_unknown_members(message.obj, _RESPONSE_MEMBERS))
        elif isinstance(message, ErrorResponse):
            if "result" not in message.obj:
                found.append(
                    violation(R_EXPLICIT_NULL_RESULT, "error response omits `result`", "$.result")
                )
            code = message.error.code
            if code == "OK":
                found.append(violation(R_OK_CODE, "error code is `OK`", "$.error.code"))
            elif self.registry.lookup(code) is None:
                found.append(
                    violation(R_UNKNOWN_CODE, f"unknown error code {code!r}", "$.error.code")
                )
            details = message.error.details
            if details is not ABSENT and details is not None and not isinstance(details, dict):
                found.append(_not_an_object(R_DETAILS_OBJECT, details, "$.error.details"))
            found.extend(_unknown_members(message.obj, _RESPONSE_MEMBERS))
        # One memchr for the backslash first: a 16 MiB blob has none, and the two-byte search
        # costs ten times as much.
        if b"\\" in payload and b"\\u" in payload and _NON_ASCII_ESCAPE.search(payload):
            found.append(
                violation(R_ASCII_ESCAPED, "non-ASCII text is \\u-escaped (ensure_ascii=True?)")
            )
        return found

    def check_exchange(self, request: Message, response: Message) -> list[Violation]:
        if isinstance(response, Malformed) and response.kind not in _ID_READ_KINDS:
            return []  # no id could be read: already reported as malformed
        expected = request.id
        actual = response.id
        if isinstance(request, Malformed) and expected is None:
            return []  # a null id answers an unparseable request
        if actual is None:
            return [
                violation(
                    R_NULL_ID,
                    f"response id is null but the request had id {expected!r}",
                    "$.id",
                )
            ]
        if not self.ids_equal(expected, actual):
            return [
                violation(R_ID_ECHOED, f"expected id {expected!r}, response has {actual!r}", "$.id")
            ]
        return []

    def frame_violation(self, error: FrameError) -> Violation:
        of = R_OVERSIZED if error.kind is FrameErrorKind.OVERSIZED else R_TRUNCATED
        return violation(of, error.detail, outcome=self.frame_error_outcome(error.kind))

    def malformed_outcome(self, kind: MalformedKind) -> str:
        return kind.value

    def frame_error_outcome(self, kind: FrameErrorKind) -> str:
        return "oversized" if kind is FrameErrorKind.OVERSIZED else "truncated"

    def request_ids(self) -> Iterator[str]:
        # The MCP server's connection sends a fresh UUID4 string per request.
        while True:
            yield str(uuid.uuid4())

    def request(self, request_id: Any, method: str, params: Any) -> dict[str, Any]:
        return {"id": request_id, "method": method, "params": params}

    def success(self, request_id: Any, result: Any) -> dict[str, Any]:
        return {"id": request_id, "result": result, "error": None}

    def error(
        self, request_id: Any, code: Any, message: str, details: Any = None
    ) -> dict[str, Any]:
        err = error_object(code, message, details, "details")
        return {"id": request_id, "result": None, "error": err}

    def method_not_found(self, request_id: Any, method: str) -> dict[str, Any]:
        return self.error(request_id, METHOD_NOT_FOUND_CODE, f"Method not found: {method}")

    def answer_by_hand(self, request_id: Any) -> dict[str, Any]:
        # An object that is not there, as the plugin at 9819b31 answers it: its server
        # flattens every error envelope to -32000, so a domain code only reaches the client
        # as a wrapped handler's error dict inside a success envelope. The wrapper strips
        # quotes off the KeyError's text, the GUID's closing one too.
        missing = f"Object not found in Rhino document: '{_NO_SUCH_GUID}"
        return self.success(request_id, {"code": "OBJECT_NOT_FOUND", "message": missing})

    def unparseable_request(self, request: Malformed) -> Optional[dict[str, Any]]:
        # The reference server loop catches the exception and answers -32603 with the id it
        # could read (null when the JSON itself did not parse).
        return self.error(request.id, INTERNAL_ERROR_CODE, f"Invalid request: {request.detail}")

    def miss_error(self, request_id: Any, method: str, explanation: str) -> dict[str, Any]:
        # The plugin's dispatcher answers NOT_FOUND for a name it does not know; the details
        # tell a replay miss apart from a real one.
        return self.error(
            request_id, NOT_FOUND_CODE, explanation, {"method": method, "replay": "miss"}
        )


def _not_an_envelope(obj: Any, role: Role) -> Optional[Malformed]:
    """Why ``obj`` cannot be a GOLEM ``role`` at all (no object, or no `id`), or None."""
    if not isinstance(obj, dict):
        return _bad(MalformedKind.NOT_AN_OBJECT, f"{role.value} is not a JSON object", obj, role)
    if "id" not in obj:
        return _bad(MalformedKind.MISSING_ID, f"{role.value} has no `id`", obj, role)
    return None


def _bad(kind: MalformedKind, detail: str, obj: Any, role: Role) -> Malformed:
    ident = obj.get("id") if isinstance(obj, dict) else None
    if not id_is_valid(ident):
        ident = None
    return Malformed(kind, detail, obj, ident, role)


def _parse_error_object(error: Any) -> Any:
    """An RpcError, or a string saying why ``error`` is not a valid GOLEM error object."""
    if not isinstance(error, dict):
        return mistyped("`error`", error, "an object")
    code = error.get("code", ABSENT)
    if code is ABSENT:
        return "`error` has no `code`"
    if not (is_json_int(code) or isinstance(code, str)):
        return mistyped("`error.code`", code, "an integer or string")
    message = error.get("message", ABSENT)
    if message is ABSENT:
        return "`error` has no `message`"
    if not isinstance(message, str):
        return mistyped("`error.message`", message, "a string")
    return RpcError(code, message, error.get("details", ABSENT), error.get("data", ABSENT))


def _not_an_object(rule: Rule, value: Any, path: str) -> Violation:
    """``rule`` broken by the member at ``path`` (``$.params``) holding ``value``, no object."""
    member = path.rsplit(".", 1)[-1]
    return violation(rule, mistyped(f"`{member}`", value, "an object"), path)


MAX_UNKNOWN_MEMBERS = 10
"""Unexpected members named one violation each; past them one violation counts the rest (a
frame of millions of members is one check, not millions of violations to publish)."""


def _unknown_members(obj: dict[str, Any], allowed: Any) -> list[Violation]:
    found: list[Violation] = []
    more = 0
    for key in obj:
        if key in allowed:
            continue
        if len(found) < MAX_UNKNOWN_MEMBERS:
            found.append(violation(R_UNKNOWN_MEMBER, f"unexpected member `{key}`", path_of(key)))
        else:
            more += 1
    if more:
        found.append(violation(R_UNKNOWN_MEMBER, f"{more} more unexpected members", "$"))
    return found
