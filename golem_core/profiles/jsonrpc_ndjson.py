"""The `jsonrpc-ndjson` profile: newline-delimited JSON-RPC 2.0, as frozen by the Scrybe 0.6
compatibility artifact (scrybe-rpc-contract-0.6.md).

Responses are typed in the contract's validation order, and every violation carries the
contract's own outcome name (``InvalidEnvelope(WrongVersion)``, ``MismatchedResponseId``, …).
A member whose value is ``null`` counts as absent, as the reference client's optional fields do.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from typing import Any, Optional

from ..contract import Rule, Severity, Violation, violation
from ..framing import (
    DEFAULT_LINE_CAP,
    FrameError,
    FrameErrorKind,
    Framing,
    encode_line,
)
from ..messages import (
    ABSENT,
    ErrorResponse,
    Malformed,
    MalformedKind,
    Message,
    Notification,
    Request,
    Response,
    Role,
    RpcError,
    is_json_int,
)
from ..outcome import Outcome, OutcomeKind
from ..registry import SCRYBE_APP_RANGE, SCRYBE_REGISTRY
from .base import DefaultRoute, Profile, json_type_name, path_of
from .scrybe_methods import COMMON_ERRORS, METHODS

__all__ = ["RULES", "JsonRpcNdjsonProfile"]

_SPEC = "scrybe-rpc-contract-0.6.md"
_ENVELOPE = f"{_SPEC} § Envelope rules"

R_UTF8 = Rule("jsonrpc.response.utf8", Severity.ERROR, "Rule 1: valid UTF-8.", _ENVELOPE)
R_JSON = Rule("jsonrpc.response.json", Severity.ERROR, "Rule 2: valid JSON.", _ENVELOPE)
R_VERSION = Rule(
    "jsonrpc.response.version", Severity.ERROR, 'Rule 3: `jsonrpc` is exactly "2.0".', _ENVELOPE
)
R_ID = Rule(
    "jsonrpc.response.id", Severity.ERROR, "Rule 4: `id` is an unsigned integer.", _ENVELOPE
)
R_ID_ECHOED = Rule(
    "jsonrpc.exchange.id-echoed", Severity.ERROR, "Rule 5: `id` equals the request id.", _ENVELOPE
)
R_ONE_OF = Rule(
    "jsonrpc.response.result-xor-error",
    Severity.ERROR,
    "Rule 6: exactly one of `result` / `error`.",
    _ENVELOPE,
)
R_ERROR_OBJECT = Rule(
    "jsonrpc.response.error-object",
    Severity.ERROR,
    "Rule 7: `error` is {code: int, message: string, data?}.",
    _ENVELOPE,
)
R_TOO_LARGE = Rule(
    "jsonrpc.frame.too-large",
    Severity.ERROR,
    "A line, newline included, is at most 16 MiB.",
    f"{_SPEC} § Transport & framing",
)
R_TRUNCATED = Rule(
    "jsonrpc.frame.truncated",
    Severity.ERROR,
    "The connection closed mid-frame (the client reports Io(UnexpectedEof)).",
    f"{_SPEC} § Malformed-reply examples",
)
R_REQUEST = Rule(
    "jsonrpc.request.envelope",
    Severity.ERROR,
    'Requests are {jsonrpc: "2.0", id: unsigned int, method: string, params?: object}.',
    f"{_SPEC} § Transport & framing",
)
R_UNKNOWN_METHOD = Rule(
    "jsonrpc.method.unknown",
    Severity.ERROR,
    "The method is in the contract's method table.",
    f"{_SPEC} § Methods",
)
R_PARAM_MISSING = Rule(
    "jsonrpc.params.missing",
    Severity.ERROR,
    "Every required param of the method is present.",
    f"{_SPEC} § Methods",
)
R_PARAM_TYPE = Rule(
    "jsonrpc.params.type",
    Severity.ERROR,
    "Params have the types of the method table.",
    f"{_SPEC} § Methods",
)
R_PARAM_UNKNOWN = Rule(
    "jsonrpc.params.unknown",
    Severity.WARNING,
    "Params not in the method table are ignored by the server.",
    f"{_SPEC} § Methods",
)
R_RESULT_SHAPE = Rule(
    "jsonrpc.result.shape",
    Severity.ERROR,
    "A result carries the members of the method table.",
    f"{_SPEC} § Methods",
)
R_UNKNOWN_CODE = Rule(
    "jsonrpc.error.unknown-code",
    Severity.ERROR,
    "Error codes are JSON-RPC standard codes or registered application codes.",
    f"{_SPEC} § Stable error codes",
)
R_CODE_FOR_METHOD = Rule(
    "jsonrpc.error.code-for-method",
    Severity.WARNING,
    "An application code is one the method's row lists.",
    f"{_SPEC} § Methods",
)
RULES = (
    R_UTF8,
    R_JSON,
    R_VERSION,
    R_ID,
    R_ID_ECHOED,
    R_ONE_OF,
    R_ERROR_OBJECT,
    R_TOO_LARGE,
    R_TRUNCATED,
    R_REQUEST,
    R_UNKNOWN_METHOD,
    R_PARAM_MISSING,
    R_PARAM_TYPE,
    R_PARAM_UNKNOWN,
    R_RESULT_SHAPE,
    R_UNKNOWN_CODE,
    R_CODE_FOR_METHOD,
)
"""Every rule this profile checks, in the order the wire contract documents them."""

_OUTCOMES = {
    MalformedKind.INVALID_UTF8: "InvalidUtf8",
    MalformedKind.INVALID_JSON: "InvalidJson",
    # Rule 3 is the first one a non-object fails: it has no `jsonrpc` member.
    MalformedKind.NOT_AN_OBJECT: "InvalidEnvelope(WrongVersion)",
    MalformedKind.WRONG_VERSION: "InvalidEnvelope(WrongVersion)",
    MalformedKind.MISSING_ID: "InvalidEnvelope(MissingId)",
    MalformedKind.INVALID_ID: "InvalidEnvelope(MissingId)",
    MalformedKind.BOTH_RESULT_AND_ERROR: "InvalidEnvelope(BothResultAndError)",
    MalformedKind.NEITHER_RESULT_NOR_ERROR: "InvalidEnvelope(NeitherResultNorError)",
    MalformedKind.INVALID_ERROR_OBJECT: "InvalidEnvelope(InvalidErrorObject)",
    MalformedKind.MISSING_METHOD: "InvalidRequest(MissingMethod)",
    MalformedKind.INVALID_METHOD: "InvalidRequest(InvalidMethod)",
    MalformedKind.INVALID_PARAMS: "InvalidRequest(InvalidParams)",
}
_RESPONSE_RULES = {
    MalformedKind.INVALID_UTF8: R_UTF8,
    MalformedKind.INVALID_JSON: R_JSON,
    MalformedKind.NOT_AN_OBJECT: R_VERSION,
    MalformedKind.WRONG_VERSION: R_VERSION,
    MalformedKind.MISSING_ID: R_ID,
    MalformedKind.INVALID_ID: R_ID,
    MalformedKind.BOTH_RESULT_AND_ERROR: R_ONE_OF,
    MalformedKind.NEITHER_RESULT_NOR_ERROR: R_ONE_OF,
    MalformedKind.INVALID_ERROR_OBJECT: R_ERROR_OBJECT,
}
# Kinds the contract checks after the id comparison (rules 6 and 7): a mismatched id wins.
_AFTER_ID_RULE = (
    MalformedKind.BOTH_RESULT_AND_ERROR,
    MalformedKind.NEITHER_RESULT_NOR_ERROR,
    MalformedKind.INVALID_ERROR_OBJECT,
)

DEFAULT_SOCKET = "~/.scrybe/sock"
"""Where the app listens unless $SCRYBE_SOCK says otherwise (contract § Transport)."""

_encode_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

ERR_PARSE = -32700
ERR_INVALID_REQUEST = -32600
ERR_METHOD_NOT_FOUND = -32601


def _unsigned(value: Any) -> bool:
    return is_json_int(value) and value >= 0


class JsonRpcNdjsonProfile(Profile):
    """JSON-RPC 2.0 over NDJSON with the Scrybe 0.6 envelope contract."""

    name = "jsonrpc-ndjson"
    framing = Framing.LINE
    default_cap = DEFAULT_LINE_CAP
    registry = SCRYBE_REGISTRY
    rules = RULES
    channels = ("scrybe",)
    servers_send_requests = True

    def default_routes(self, env: Mapping[str, str]) -> tuple[DefaultRoute, ...]:
        """Listen in the user's runtime directory (``$XDG_RUNTIME_DIR/golem-proxy``, else
        ``~/.scrybe``) and relay to where the client would connect: ``$SCRYBE_SOCK``, else
        ``~/.scrybe/sock`` (contract § Transport)."""
        runtime = env.get("XDG_RUNTIME_DIR")
        listen = f"{runtime}/golem-proxy/scrybe.sock" if runtime else "~/.scrybe/proxy.sock"
        upstream = env.get("SCRYBE_SOCK") or DEFAULT_SOCKET
        return (
            DefaultRoute(
                self.channels[0], f"unix:{listen}", f"unix:{upstream}", "SCRYBE_SOCK", "path"
            ),
        )

    def frame_payload(self, payload: bytes) -> bytes:
        return encode_line(payload)

    def encode_payload(self, obj: Any) -> bytes:
        # Compact separators, as serde_json writes; json.dumps never emits a raw newline.
        return _encode_compact(obj).encode("utf-8")

    # -- parsing -----------------------------------------------------------------------------
    id_description = "an unsigned integer"
    """What `id_is_valid` accepts, in words, for the violation that refuses an id."""

    def id_is_valid(self, ident: Any) -> bool:
        """Whether ``ident`` is an id this flavour of JSON-RPC allows (Scrybe: unsigned ints)."""
        return _unsigned(ident)

    def expects_response(self, message: Message) -> bool:
        # A notification (a method and no `id` member) is never answered by design, also when
        # it is broken in some other way.
        obj = message.obj
        if isinstance(message, Malformed) and isinstance(obj, dict):
            return not ("method" in obj and "id" not in obj)
        return super().expects_response(message)

    def parse_request(self, obj: Any) -> Message:
        role = Role.REQUEST
        if not isinstance(obj, dict):
            return _bad(MalformedKind.NOT_AN_OBJECT, "request is not a JSON object", obj, role)
        if obj.get("jsonrpc") != "2.0":
            return _bad(MalformedKind.WRONG_VERSION, _version_detail(obj), obj, role)
        ident = obj.get("id")
        method = obj.get("method", ABSENT)
        if ident is None and method is ABSENT:
            return _bad(MalformedKind.MISSING_ID, "request has no `id`", obj, role)
        if ident is not None and not self.id_is_valid(ident):
            return _bad(
                MalformedKind.INVALID_ID,
                f"request `id` is {json_type_name(ident)}, not {self.id_description}",
                obj,
                role,
            )
        if method is ABSENT:
            return _bad(MalformedKind.MISSING_METHOD, "request has no `method`", obj, role)
        if not isinstance(method, str):
            return _bad(
                MalformedKind.INVALID_METHOD,
                f"`method` is {json_type_name(method)}, not a string",
                obj,
                role,
            )
        params = obj.get("params", ABSENT)
        if params is not ABSENT and params is not None and not isinstance(params, dict):
            return _bad(
                MalformedKind.INVALID_PARAMS,
                f"`params` is {json_type_name(params)}, not an object",
                obj,
                role,
            )
        if ident is None:  # no `id` (null counts as absent): JSON-RPC 2.0's notification
            return Notification(method, params, obj)
        return Request(ident, method, params, obj)

    def parse_response(self, obj: Any) -> Message:
        role = Role.RESPONSE
        if not isinstance(obj, dict):
            return _bad(MalformedKind.NOT_AN_OBJECT, "response is not a JSON object", obj, role)
        if obj.get("jsonrpc") != "2.0":
            return _bad(MalformedKind.WRONG_VERSION, _version_detail(obj), obj, role)
        ident = obj.get("id")
        if ident is None:
            return _bad(MalformedKind.MISSING_ID, "response has no `id`", obj, role)
        if not self.id_is_valid(ident):
            return _bad(
                MalformedKind.INVALID_ID,
                f"response `id` is {json_type_name(ident)}, not {self.id_description}",
                obj,
                role,
            )
        result = obj.get("result")
        error = obj.get("error")
        if result is not None and error is not None:
            return _bad(MalformedKind.BOTH_RESULT_AND_ERROR, "both `result` and `error`", obj, role)
        if result is None and error is None:
            return _bad(
                MalformedKind.NEITHER_RESULT_NOR_ERROR, "neither `result` nor `error`", obj, role
            )
        if error is None:
            return Response(ident, result, obj)
        parsed = _parse_error_object(error)
        if isinstance(parsed, str):
            return _bad(MalformedKind.INVALID_ERROR_OBJECT, parsed, obj, role)
        return ErrorResponse(ident, parsed, obj)

    # -- contract ----------------------------------------------------------------------------
    def check_message(self, message: Message, payload: bytes = b"") -> list[Violation]:
        if isinstance(message, Malformed):
            outcome = self.malformed_outcome(message.kind)
            of = _RESPONSE_RULES.get(message.kind, R_REQUEST)
            if message.role is Role.REQUEST:
                of = R_REQUEST
            return [violation(of, message.detail, outcome=outcome)]
        if isinstance(message, Request):
            return _check_request(message)
        if isinstance(message, ErrorResponse):
            code = message.error.code
            if self.registry.lookup(code) is None:
                return [violation(R_UNKNOWN_CODE, f"unknown error code {code!r}", "$.error.code")]
        return []

    def check_exchange(self, request: Message, response: Message) -> list[Violation]:
        found: list[Violation] = []
        mismatch = self._id_mismatch(request, response)
        if mismatch is not None:
            found.append(mismatch)
        if not isinstance(request, Request):
            return found
        shape = METHODS.get(request.method)
        if shape is None:
            return found
        if isinstance(response, Response):
            result = response.result
            if not isinstance(result, dict):
                found.append(
                    violation(
                        R_RESULT_SHAPE,
                        f"`{request.method}` result is {json_type_name(result)}, not an object",
                        "$.result",
                    )
                )
            else:
                missing = [key for key in shape.result_keys if key not in result]
                if missing:
                    found.append(
                        violation(
                            R_RESULT_SHAPE,
                            f"`{request.method}` result lacks {', '.join(missing)}",
                            "$.result",
                        )
                    )
        elif isinstance(response, ErrorResponse):
            code = response.error.code
            info = self.registry.lookup(code)
            low, high = SCRYBE_APP_RANGE
            allowed = set(shape.app_errors) | set(COMMON_ERRORS)
            if shape.reply_correlated:
                allowed.add("ERR_REPLY_TIMEOUT")
            if (
                info is not None
                and is_json_int(code)
                and low <= int(code) <= high
                and info.name not in allowed
            ):
                found.append(
                    violation(
                        R_CODE_FOR_METHOD,
                        f"`{request.method}` does not list {info.name}",
                        "$.error.code",
                    )
                )
        return found

    def _id_mismatch(self, request: Message, response: Message) -> Optional[Violation]:
        if isinstance(response, Malformed) and response.kind not in _AFTER_ID_RULE:
            return None  # rules 1-4 fail before the id comparison
        if not isinstance(request, Request):
            return None
        actual = response.id
        if actual is None or self.ids_equal(request.id, actual):
            return None
        return violation(
            R_ID_ECHOED,
            f"expected id {request.id}, response has {actual}",
            "$.id",
            outcome=f"MismatchedResponseId {{ expected: {request.id}, actual: {actual} }}",
        )

    def frame_violation(self, error: FrameError) -> Violation:
        if error.kind is FrameErrorKind.OVERSIZED:
            return violation(R_TOO_LARGE, error.detail, outcome="FrameTooLarge")
        return violation(R_TRUNCATED, error.detail, outcome="Io(UnexpectedEof)")

    def frame_error_outcome(self, kind: FrameErrorKind) -> str:
        return "FrameTooLarge" if kind is FrameErrorKind.OVERSIZED else "Io(UnexpectedEof)"

    def malformed_outcome(self, kind: MalformedKind) -> str:
        return _OUTCOMES[kind]

    def client_outcome(self, request: Optional[Message], response: Message) -> str:
        """The typed outcome the reference client reports for ``response`` (contract order)."""
        if request is not None:
            mismatch = self._id_mismatch(request, response)
            if mismatch is not None and mismatch.outcome is not None:
                return mismatch.outcome
        if isinstance(response, Malformed):
            return self.malformed_outcome(response.kind)
        if isinstance(response, ErrorResponse):
            return f"Remote(RpcError {{ code: {response.error.code} }})"
        return "Ok"

    def describe(self, message: Message) -> str:
        # The contract's outcome names, so logs and tables speak the client's language.
        if isinstance(message, Malformed) and message.role is not Role.REQUEST:
            return self.malformed_outcome(message.kind)
        return super().describe(message)

    def outcome(self, request: Optional[Message], response: Message) -> Outcome:
        """As the base, except that a reply whose id is not the request's is malformed,
        ``MismatchedResponseId {…}``: the client checks the id before rules 6 and 7."""
        if request is not None:
            mismatch = self._id_mismatch(request, response)
            if mismatch is not None and mismatch.outcome is not None:
                return Outcome(OutcomeKind.MALFORMED, mismatch.outcome, message=mismatch.message)
        return super().outcome(request, response)

    def answers_unparseable(self, message: Message) -> bool:
        # The wire type has no null id: an unreadable request is answered with id 0, and only
        # the ERR_PARSE / ERR_INVALID_REQUEST code tells it from a reply to a request with id 0.
        return (
            isinstance(message, ErrorResponse)
            and message.id == 0
            and message.error.code in (ERR_PARSE, ERR_INVALID_REQUEST)
        )

    # -- requests and replies ----------------------------------------------------------------
    def request_ids(self) -> Iterator[int]:
        # The reference client counts up from 1 on each connection.
        return itertools.count(1)

    def request(self, request_id: Any, method: str, params: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}

    def success(self, request_id: Any, result: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def error(
        self, request_id: Any, code: Any, message: str, details: Any = None
    ) -> dict[str, Any]:
        err: dict[str, Any] = {"code": code, "message": message}
        if details is not None:
            err["data"] = details
        return {"jsonrpc": "2.0", "id": request_id, "error": err}

    def method_not_found(self, request_id: Any, method: str) -> dict[str, Any]:
        return self.error(request_id, ERR_METHOD_NOT_FOUND, f"method not found: {method}")

    def miss_error(self, request_id: Any, method: str, explanation: str) -> dict[str, Any]:
        return self.error(request_id, ERR_METHOD_NOT_FOUND, explanation)

    def unparseable_request(self, request: Malformed) -> Optional[dict[str, Any]]:
        # The wire type has no null id: a request that cannot be read is answered with id 0.
        if request.kind in (MalformedKind.INVALID_UTF8, MalformedKind.INVALID_JSON):
            return self.error(0, ERR_PARSE, f"parse error: {request.detail}")
        ident = request.id if _unsigned(request.id) else 0
        return self.error(ident, ERR_INVALID_REQUEST, f"invalid request: {request.detail}")


def _check_request(request: Request) -> list[Violation]:
    shape = METHODS.get(request.method)
    if shape is None:
        return [
            violation(
                R_UNKNOWN_METHOD,
                f"`{request.method}` is not in the 0.6 method table",
                "$.method",
                outcome="ERR_METHOD_NOT_FOUND",
            )
        ]
    params = request.params if isinstance(request.params, dict) else {}
    found: list[Violation] = []
    for name, tag in shape.required.items():
        if name not in params:
            found.append(
                violation(
                    R_PARAM_MISSING,
                    f"`{request.method}` needs `{name}`",
                    path_of("params", name),
                    outcome="ERR_INVALID_PARAMS",
                )
            )
        elif not _has_type(params[name], tag):
            found.append(_type_violation(request.method, name, tag, params[name]))
    for name, value in params.items():
        if name in shape.required:
            continue
        optional_tag = shape.optional.get(name)
        if optional_tag is None:
            found.append(
                violation(
                    R_PARAM_UNKNOWN,
                    f"`{request.method}` has no param `{name}`",
                    path_of("params", name),
                )
            )
        elif value is not None and not _has_type(value, optional_tag):
            found.append(_type_violation(request.method, name, optional_tag, value))
    return found


def _type_violation(method: str, name: str, tag: str, value: Any) -> Violation:
    return violation(
        R_PARAM_TYPE,
        f"`{method}.{name}` should be {tag}, got {json_type_name(value)}",
        path_of("params", name),
        outcome="ERR_INVALID_PARAMS",
    )


def _has_type(value: Any, tag: str) -> bool:
    if tag == "str":
        return isinstance(value, str)
    if tag == "int":
        return is_json_int(value)
    if tag == "bool":
        return isinstance(value, bool)
    if tag == "list[str]":
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    if tag.startswith("enum:"):
        return isinstance(value, str) and value in tag[5:].split("|")
    raise ValueError(f"unknown type tag {tag!r}")


def _version_detail(obj: dict[str, Any]) -> str:
    if "jsonrpc" not in obj:
        return "`jsonrpc` is missing"
    return f'`jsonrpc` is {obj["jsonrpc"]!r}, not "2.0"'


def _bad(kind: MalformedKind, detail: str, obj: Any, role: Role) -> Malformed:
    ident = obj.get("id") if isinstance(obj, dict) else None
    return Malformed(kind, detail, obj, ident if _unsigned(ident) else None, role)


def _parse_error_object(error: Any) -> Any:
    if not isinstance(error, dict):
        return f"`error` is {json_type_name(error)}, not an object"
    code = error.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        return f"`error.code` is {json_type_name(code)}, not an integer"
    message = error.get("message")
    if not isinstance(message, str):
        return f"`error.message` is {json_type_name(message)}, not a string"
    return RpcError(code, message, ABSENT, error.get("data", ABSENT))
