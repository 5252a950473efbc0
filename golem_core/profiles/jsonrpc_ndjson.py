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

from ..contract import Violation, violation
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
from ..registry import SCRYBE_REGISTRY
from .base import DefaultRoute, Profile
from .members import error_object, mistyped
from .scrybe_rules import (
    AFTER_ID_RULE,
    MALFORMED_OUTCOMES,
    R_ID_ECHOED,
    R_REQUEST,
    R_TOO_LARGE,
    R_TRUNCATED,
    R_UNKNOWN_CODE,
    RESPONSE_RULES,
    RULES,
    check_answer,
    check_request,
)

__all__ = ["JsonRpcNdjsonProfile"]

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

    def _envelope_problem(self, obj: Any, role: Role) -> Optional[Malformed]:
        """What makes ``obj`` no well-enveloped JSON-RPC 2.0 message of its side, or None: not an
        object, not version "2.0", no `id` (but a request that names a method and has no `id`
        is a notification), or an `id` of the wrong type."""
        if not isinstance(obj, dict):
            return _bad(
                MalformedKind.NOT_AN_OBJECT, f"{role.value} is not a JSON object", obj, role
            )
        if obj.get("jsonrpc") != "2.0":
            return _bad(MalformedKind.WRONG_VERSION, _version_detail(obj), obj, role)
        ident = obj.get("id")
        if ident is None:
            if role is Role.REQUEST and "method" in obj:
                return None
            return _bad(MalformedKind.MISSING_ID, f"{role.value} has no `id`", obj, role)
        if not self.id_is_valid(ident):
            detail = mistyped(f"{role.value} `id`", ident, self.id_description)
            return _bad(MalformedKind.INVALID_ID, detail, obj, role)
        return None

    def parse_request(self, obj: Any) -> Message:
        role = Role.REQUEST
        problem = self._envelope_problem(obj, role)
        if problem is not None:
            return problem
        method = obj.get("method", ABSENT)
        if method is ABSENT:
            return _bad(MalformedKind.MISSING_METHOD, "request has no `method`", obj, role)
        if not isinstance(method, str):
            detail = mistyped("`method`", method, "a string")
            return _bad(MalformedKind.INVALID_METHOD, detail, obj, role)
        params = obj.get("params", ABSENT)
        if params is not ABSENT and params is not None and not isinstance(params, dict):
            detail = mistyped("`params`", params, "an object")
            return _bad(MalformedKind.INVALID_PARAMS, detail, obj, role)
        ident = obj.get("id")
        if ident is None:  # no `id` (null counts as absent): JSON-RPC 2.0's notification
            return Notification(method, params, obj)
        return Request(ident, method, params, obj)

    def parse_response(self, obj: Any) -> Message:
        role = Role.RESPONSE
        problem = self._envelope_problem(obj, role)
        if problem is not None:
            return problem
        ident = obj["id"]
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

    def check_message(self, message: Message, payload: bytes = b"") -> list[Violation]:
        if isinstance(message, Malformed):
            outcome = self.malformed_outcome(message.kind)
            of = RESPONSE_RULES.get(message.kind, R_REQUEST)
            if message.role is Role.REQUEST:
                of = R_REQUEST
            return [violation(of, message.detail, outcome=outcome)]
        if isinstance(message, Request):
            return check_request(message)
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
        found.extend(check_answer(request, response, self.registry))
        return found

    def _id_mismatch(self, request: Message, response: Message) -> Optional[Violation]:
        if isinstance(response, Malformed) and response.kind not in AFTER_ID_RULE:
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
        return MALFORMED_OUTCOMES[kind]

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
        # Scrybe's wire type has no null id: an unreadable request is answered with id 0, and
        # only the ERR_PARSE / ERR_INVALID_REQUEST code tells it from a reply to a request with
        # id 0. Any other JSON-RPC 2.0 server answers it with an error whose id is null (a
        # contract violation here, but the answer all the same), and a batch (an array) with
        # an array; the client's line was typed malformed either way.
        obj = message.obj
        if isinstance(obj, list) or (
            isinstance(obj, dict) and obj.get("id") is None and "error" in obj
        ):
            return True
        return _scrybe_unparseable(message)

    def answers_this_unparseable(self, answer: Message, request: Message) -> bool:
        # Scrybe answers any line it could not type with id 0. A JSON-RPC 2.0 server reads an
        # id where there is one it can use: a request whose id is of a type this contract
        # refuses (a string) has its own answer, and a null id answers a line with none or
        # with one of no id's type (true, an object); an array answers a batch. Where no
        # line fits, the correlator falls back to the oldest unreadable one.
        if _scrybe_unparseable(answer):
            return True
        sent = request.obj
        if isinstance(answer.obj, list):
            return isinstance(sent, list)
        if isinstance(sent, list):  # a batch is answered by an array, but an empty one
            return not sent
        ident = sent.get("id") if isinstance(sent, dict) else None
        return not (isinstance(ident, str) or is_json_int(ident))

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
        err = error_object(code, message, details, "data")
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


def _version_detail(obj: dict[str, Any]) -> str:
    if "jsonrpc" not in obj:
        return "`jsonrpc` is missing"
    return f'`jsonrpc` is {obj["jsonrpc"]!r}, not "2.0"'


def _bad(kind: MalformedKind, detail: str, obj: Any, role: Role) -> Malformed:
    ident = obj.get("id") if isinstance(obj, dict) else None
    return Malformed(kind, detail, obj, ident if _unsigned(ident) else None, role)


def _parse_error_object(error: Any) -> Any:
    if not isinstance(error, dict):
        return mistyped("`error`", error, "an object")
    code = error.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        return mistyped("`error.code`", code, "an integer")
    message = error.get("message")
    if not isinstance(message, str):
        return mistyped("`error.message`", message, "a string")
    return RpcError(code, message, ABSENT, error.get("data", ABSENT))


def _scrybe_unparseable(message: Message) -> bool:
    """Scrybe's answer to a line it could not type: id 0, and a parse or invalid-request
    code (its wire type has no null id)."""
    return (
        isinstance(message, ErrorResponse)
        and message.id == 0
        and message.error.code in (ERR_PARSE, ERR_INVALID_REQUEST)
    )
