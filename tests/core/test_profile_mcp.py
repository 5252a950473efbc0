"""The mcp profile: JSON-RPC 2.0 as MCP's stdio transport uses it."""

from __future__ import annotations

import json
from typing import Any

from golem_core.messages import ErrorResponse, Malformed, Request, Response, Role
from golem_core.profiles import MCP
from golem_core.profiles.mcp import is_notification, tool_call_failed, tool_name


def parse(obj: Any, role: Role) -> Any:
    return MCP.parse(json.dumps(obj).encode(), role)


def test_string_and_integer_ids_are_both_ids() -> None:
    for ident in ("abc-1", 7, 0):
        message = parse({"jsonrpc": "2.0", "id": ident, "method": "tools/list"}, Role.REQUEST)
        assert isinstance(message, Request) and message.id == ident
        assert MCP.check_message(message) == []
    answer = parse({"jsonrpc": "2.0", "id": "abc-1", "result": {}}, Role.RESPONSE)
    assert isinstance(answer, Response)


def test_a_boolean_or_object_id_is_refused() -> None:
    for ident in (True, {"a": 1}):
        message = parse({"jsonrpc": "2.0", "id": ident, "method": "x"}, Role.REQUEST)
        assert isinstance(message, Malformed)
        assert "a string or an integer" in message.detail


def test_a_notification_is_no_violation_and_says_what_it_is() -> None:
    message = parse({"jsonrpc": "2.0", "method": "notifications/initialized"}, Role.REQUEST)
    assert is_notification(message)
    assert MCP.check_message(message) == []
    assert MCP.describe(message) == "notification"
    assert not MCP.expects_response(message)


def test_no_method_table_and_no_code_registry() -> None:
    call = parse(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "create_box"}},
        Role.REQUEST,
    )
    assert MCP.check_message(call) == []
    error = parse(
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}}, Role.RESPONSE
    )
    assert isinstance(error, ErrorResponse)
    assert MCP.check_message(error) == []
    assert MCP.check_exchange(call, error) == []
    assert tool_name(call) == "create_box"


def test_a_mismatched_id_is_still_reported() -> None:
    call = parse({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, Role.REQUEST)
    answer = parse({"jsonrpc": "2.0", "id": 2, "result": {}}, Role.RESPONSE)
    [found] = MCP.check_exchange(call, answer)
    assert found.rule == "jsonrpc.exchange.id-echoed"


def test_a_tool_call_fails_on_is_error_or_an_error_answer() -> None:
    call = parse({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}, Role.REQUEST)
    ok = parse({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}, Role.RESPONSE)
    failed = parse(
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": True}}, Role.RESPONSE
    )
    error = parse({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "x"}}, Role.RESPONSE)
    assert [tool_call_failed(call, answer) for answer in (ok, failed, error)] == [False, True, True]
    listing = parse({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, Role.REQUEST)
    assert not tool_call_failed(listing, error)


def test_a_tool_call_fails_on_an_error_object_as_its_structured_content() -> None:
    call = parse({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}, Role.REQUEST)
    error_dict = {"code": "INVALID_PARAMS", "message": "needs 2 GUIDs", "details": {}}
    passed_through = parse(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"content": [], "structuredContent": error_dict, "isError": False},
        },
        Role.RESPONSE,
    )
    unsuccessful = parse(
        {"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": {"success": False}}},
        Role.RESPONSE,
    )
    fine = parse(
        {"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": {"code": "x", "n": 1}}},
        Role.RESPONSE,
    )
    assert [tool_call_failed(call, r) for r in (passed_through, unsuccessful, fine)] == [
        True,
        True,
        False,
    ]
    assert MCP.outcome(call, passed_through).text == "INVALID_PARAMS (in result)"
