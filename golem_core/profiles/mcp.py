"""The `mcp` profile: the Model Context Protocol's stdio transport, newline-delimited
JSON-RPC 2.0 between an MCP client and an MCP server (the GOLEM-3DMCP server, say).

It is the jsonrpc-ndjson framing and envelope with MCP's own freedoms: an id is a string or
an integer, there is no fixed method table (the tools are whatever the server lists) and
no registry of application error codes. A notification (a method and no id) is never
answered, and a tool's failure is the ``isError`` flag of its result (`IsErrorFlag`), or a
failure its ``structuredContent`` reports in the shape a GOLEM result does (an error object,
``"success": false``: `InStructuredContent`), which is what the model reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional, Union

from ..contract import Violation
from ..messages import (
    Malformed,
    MalformedKind,
    Message,
    Notification,
    Request,
    Response,
    is_json_int,
    method_of,
)
from ..outcome import (
    ErrorObjectInResult,
    InStructuredContent,
    IsErrorFlag,
    ResultFailureRule,
    UnsuccessfulFlag,
)
from .base import DefaultRoute
from .jsonrpc_ndjson import JsonRpcNdjsonProfile

__all__ = [
    "MCP_CAP",
    "TOOLS_CALL",
    "TOOL_FAILURES",
    "McpProfile",
    "cancelled_id",
    "is_notification",
    "tool_call_failed",
    "tool_name",
]

MCP_CAP = 128 * 1024 * 1024
"""A line may be this long before it is reported oversized: MCP sets no limit, and a tool may
return a large image or mesh (the observer still digests frames over its own limit)."""

TOOLS_CALL = "tools/call"
CANCELLED = "notifications/cancelled"

TOOL_FAILURES: tuple[ResultFailureRule, ...] = (
    IsErrorFlag(),
    InStructuredContent(ErrorObjectInResult()),
    InStructuredContent(UnsuccessfulFlag()),
)
"""The result shapes of a ``tools/call`` that report a failure, the first match deciding."""


def is_notification(message: Message) -> bool:
    """A JSON-RPC notification: a ``method`` member and no ``id`` member (also one that is
    broken in some other way)."""
    if isinstance(message, Notification):
        return True
    obj = message.obj
    return (
        isinstance(message, Malformed)
        and message.kind is MalformedKind.MISSING_ID
        and isinstance(obj, dict)
        and isinstance(obj.get("method"), str)
        and "id" not in obj
    )


class McpProfile(JsonRpcNdjsonProfile):
    """JSON-RPC 2.0 over NDJSON as MCP's stdio transport uses it."""

    name = "mcp"
    default_cap = MCP_CAP
    channels = ("mcp",)
    id_description = "a string or an integer"
    tool_layer = True
    result_failures = TOOL_FAILURES
    replies_by_id = True  # an MCP client routes a reply by its id, and reads past other lines

    def default_routes(self, env: Mapping[str, str]) -> tuple[DefaultRoute, ...]:
        return ()  # the stdio hop is `golem-proxy mcp`'s, never a listening route

    def answers_unparseable(self, message: Message) -> bool:
        # JSON-RPC 2.0: the error answering a request whose id could not be read has a null
        # id (0 is an id like any other here, unlike on Scrybe's wire). A batch's answer (an
        # array, 2025-03-26) goes the same way: to the oldest request without an id of its
        # own, which is how a batch is held.
        obj = message.obj
        return isinstance(obj, list) or (
            message.id is None and isinstance(obj, dict) and "error" in obj
        )

    def id_is_valid(self, ident: Any) -> bool:
        return isinstance(ident, str) or is_json_int(ident)

    def check_message(self, message: Message, payload: bytes = b"") -> list[Violation]:
        if is_notification(message):
            return []
        if isinstance(message, Malformed):
            return super().check_message(message, payload)
        return []  # no method table, no code registry: the tools are the server's own

    def describe(self, message: Message) -> str:
        return "notification" if is_notification(message) else super().describe(message)

    def check_exchange(self, request: Message, response: Message) -> list[Violation]:
        mismatch = self._id_mismatch(request, response)
        return [] if mismatch is None else [mismatch]


def cancelled_id(message: Message) -> Optional[Union[str, int]]:
    """The id of the request a ``notifications/cancelled`` names; None for any other message,
    or one that names no usable id."""
    if method_of(message) != CANCELLED or not isinstance(message.obj, dict):
        return None
    params = message.obj.get("params")
    ident = params.get("requestId") if isinstance(params, dict) else None
    if isinstance(ident, bool) or not isinstance(ident, (str, int)):
        return None
    return ident


def tool_name(message: Message) -> str:
    """The tool a ``tools/call`` request names (``?`` when it names none)."""
    if isinstance(message, Request) and isinstance(message.params, dict):
        name = message.params.get("name")
        if isinstance(name, str):
            return name
    return "?"


def tool_call_failed(request: Message, response: Message) -> bool:
    """Whether a ``tools/call`` failed as the model sees it: a result `TOOL_FAILURES` reads
    a failure in (``isError``, an error object as its structured content), or an answer that
    is no result at all (an error response, a malformed one). False for any other request."""
    if not isinstance(request, Request) or request.method != TOOLS_CALL:
        return False
    if isinstance(response, Response):
        registry = McpProfile.registry
        return any(rule.match(response.result, registry) is not None for rule in TOOL_FAILURES)
    return True
