"""The rules of the `jsonrpc-ndjson` profile, as the Scrybe 0.6 contract
(scrybe-rpc-contract-0.6.md) writes them, and the checks of a request and its answer against
the contract's method table.
"""

from __future__ import annotations

from typing import Any

from ..contract import Rule, Severity, Violation, violation
from ..messages import ErrorResponse, MalformedKind, Message, Request, Response, is_json_int
from ..registry import SCRYBE_APP_RANGE, Registry
from .members import json_type_name, path_of
from .scrybe_methods import COMMON_ERRORS, METHODS

__all__ = [
    "AFTER_ID_RULE",
    "MALFORMED_OUTCOMES",
    "RESPONSE_RULES",
    "RULES",
    "check_answer",
    "check_request",
]

_SPEC = "scrybe-rpc-contract-0.6.md"
_ENVELOPE = f"{_SPEC} § Envelope rules"

R_UTF8 = Rule("jsonrpc.response.utf8", Severity.ERROR, "Rule 1: valid UTF-8.", _ENVELOPE)
R_JSON = Rule("jsonrpc.response.json", Severity.ERROR, "Rule 2: valid JSON.", _ENVELOPE)
R_VERSION = Rule(
    "jsonrpc.response.version", Severity.ERROR, 'Rule 3: `jsonrpc` is exactly "2.0".', _ENVELOPE
)
R_ID = Rule(
    "jsonrpc.response.id",
    Severity.ERROR,
    "Rule 4: `id` is an unsigned integer (on the MCP hop: a string or an integer).",
    _ENVELOPE,
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
    'Requests are {jsonrpc: "2.0", id: unsigned int, method: string, params?: object} (on '
    "the MCP hop, the id a string or an integer).",
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
"""Every rule the `jsonrpc-ndjson` profile checks, in the order the wire contract documents
them."""

MALFORMED_OUTCOMES: dict[MalformedKind, str] = {
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
RESPONSE_RULES: dict[MalformedKind, Rule] = {
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
AFTER_ID_RULE = (
    MalformedKind.BOTH_RESULT_AND_ERROR,
    MalformedKind.NEITHER_RESULT_NOR_ERROR,
    MalformedKind.INVALID_ERROR_OBJECT,
)


def check_request(request: Request) -> list[Violation]:
    """The method-table violations of ``request``: an unknown method, params missing, of the
    wrong type or not in the table."""
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


def check_answer(request: Request, response: Message, registry: Registry) -> list[Violation]:
    """The method-table violations of ``response`` to ``request``: a result without the
    members of the table, an application error code the method's row does not list."""
    found: list[Violation] = []
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
        info = registry.lookup(code)
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
