"""The mcp profile: JSON-RPC 2.0 as MCP's stdio transport uses it."""

from __future__ import annotations

import json
from typing import Any

from golem_core.messages import ErrorResponse, Malformed, Request, Response, Role
from golem_core.pairing import Correlator
from golem_core.profiles import GOLEM, JSONRPC_NDJSON, MCP
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


def test_replies_go_by_id_only_and_a_line_that_is_no_object_is_no_reply() -> None:
    # An MCP client hands a reply to the request whose id it carries and reads past anything
    # else: with one request outstanding, a reply naming another id answers nothing.
    correlator: Correlator[str] = Correlator(MCP)
    correlator.add_request(
        parse({"jsonrpc": "2.0", "id": 2, "method": "tools/call"}, Role.REQUEST), "call"
    )
    stray = parse({"jsonrpc": "2.0", "id": 9, "result": {}}, Role.RESPONSE)
    assert correlator.match_response(stray) is None
    junk = MCP.parse(b"Server ready on stdio", Role.RESPONSE)
    assert not MCP.is_reply(junk)
    assert MCP.is_reply(stray)
    logged = MCP.parse(b'{"status": "starting"}', Role.RESPONSE)  # a log line, as JSON
    assert not MCP.is_reply(logged)
    for shape in (b'{"id": 2}', b'{"error": {"code": -32700}}', b'{"result": {}}'):
        assert MCP.is_reply(MCP.parse(shape, Role.RESPONSE))  # malformed, an answer all the same
    answer = parse({"jsonrpc": "2.0", "id": 2, "result": {}}, Role.RESPONSE)
    pending = correlator.match_response(answer)
    assert pending is not None and pending.context == "call"


def test_the_sequential_clients_take_the_next_reply_as_their_answer() -> None:
    # GOLEM's and Scrybe's clients read the next reply as the answer to their one request: a
    # wrong id is paired (and reported by the exchange's check), as is a line that is no JSON.
    requests = (
        (GOLEM, {"id": "2", "method": "m", "params": {}}),
        (JSONRPC_NDJSON, {"jsonrpc": "2.0", "id": 2, "method": "m", "params": {}}),
    )
    for profile, obj in requests:
        correlator: Correlator[str] = Correlator(profile)
        request = profile.parse(profile.encode_payload(obj), Role.REQUEST)
        correlator.add_request(request, "call")
        junk = profile.parse(b"not json", Role.RESPONSE)
        assert profile.is_reply(junk)
        pending = correlator.match_response(junk)
        assert pending is not None and pending.context == "call"


def test_only_a_null_id_error_answers_an_unparseable_request() -> None:
    null_id = parse(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}, Role.RESPONSE
    )
    zero_id = parse(
        {"jsonrpc": "2.0", "id": 0, "error": {"code": -32700, "message": "x"}}, Role.RESPONSE
    )
    assert MCP.answers_unparseable(null_id)
    assert not MCP.answers_unparseable(zero_id)  # id 0 is an id like any other in MCP
    assert not MCP.answers_unparseable(MCP.parse(b"junk", Role.RESPONSE))
