"""`check`'s MCP auditor on flows built from real MCP payloads: schemas that cannot be
applied, tools listed after they are called, and an answer taken by a junk line."""

from __future__ import annotations

import json
from typing import Any, Optional

from golem_core.messages import Role
from golem_core.profiles import MCP
from golem_proxy.analysis.flows import Flow
from golem_proxy.analysis.mcp_audit import McpAuditor
from golem_proxy.events import Direction, FrameSeen

_index = {Direction.C2S: 0, Direction.S2C: 0}


def frame(direction: Direction, obj: Any, t: float) -> FrameSeen:
    payload = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
    _index[direction] += 1
    return FrameSeen(
        conn=1,
        route="mcp",
        direction=direction,
        index=_index[direction],
        t=t,
        size=len(payload),
        payload=payload,
        message=MCP.parse(payload, role),
    )


class Session:
    """Flows of one MCP session, numbered in order."""

    def __init__(self) -> None:
        self.flows: list[Flow] = []
        self.t = 0.0

    def exchange(self, ident: Any, method: str, params: Any, answer: Optional[Any]) -> Flow:
        self.t += 1
        request = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
        flow = Flow(len(self.flows) + 1, 1, "mcp", request=frame(Direction.C2S, request, self.t))
        if answer is not None:
            body = (
                answer
                if isinstance(answer, bytes)
                else {"jsonrpc": "2.0", "id": ident, "result": answer}
            )
            flow.response = frame(Direction.S2C, body, self.t + 0.5)
        self.flows.append(flow)
        return flow

    def orphan(self, ident: Any, result: Any) -> None:
        body = {"jsonrpc": "2.0", "id": ident, "result": result}
        flow = Flow(
            len(self.flows) + 1, 1, "mcp", response=frame(Direction.S2C, body, self.t + 0.7)
        )
        self.flows.append(flow)

    def opened(self) -> Session:
        self.exchange(0, "initialize", {}, {"protocolVersion": "2025-06-18"})
        return self


def tools(**schemas: Any) -> dict[str, Any]:
    return {"tools": [{"name": name, "inputSchema": s} for name, s in schemas.items()]}


def rules(auditor: McpAuditor, flows: list[Flow]) -> list[tuple[str, int, str]]:
    found = auditor.feed(flows) + auditor.finish()
    return [(f.rule, f.flow or 0, f.violation.message) for f in found]


def test_calls_before_the_listing_are_checked_once_it_comes() -> None:
    session = Session().opened()
    session.exchange(1, "tools/call", {"name": "add", "arguments": {"a": "x"}}, {"content": []})
    session.exchange(2, "tools/list", {}, tools(add={"properties": {"a": {"type": "integer"}}}))
    found = rules(McpAuditor({"mcp"}), session.flows)
    assert [(rule, flow) for rule, flow, _ in found] == [("mcp.tools-call.arguments", 2)]


def test_a_schema_that_cannot_be_applied_is_said_so_and_check_goes_on() -> None:
    session = Session().opened()
    session.exchange(1, "tools/list", {}, tools(
        remote={"$ref": "https://example.invalid/schema.json"},
        invalid={"type": 12},
        pattern={"properties": {"a": {"type": "string", "pattern": "("}}},
    ))  # fmt: skip
    for ident, name in ((2, "remote"), (3, "invalid"), (4, "pattern")):
        session.exchange(ident, "tools/call", {"name": name, "arguments": {"a": "x"}}, None)
    found = rules(McpAuditor({"mcp"}), session.flows)
    assert [(rule, flow) for rule, flow, _ in found] == [
        ("mcp.tools-call.arguments", 3),
        ("mcp.tools-call.arguments", 4),
        ("mcp.tools-call.arguments", 5),
    ]
    assert "cannot be applied" in found[0][2]
    assert "not a valid JSON Schema" in found[1][2]


def test_an_answer_taken_by_a_junk_line_still_counts() -> None:
    session = Session()
    session.exchange(0, "initialize", {}, b"hello from the server")
    session.orphan(0, {"protocolVersion": "2025-06-18"})
    session.exchange(1, "tools/list", {}, tools(add={"type": "object"}))
    found = rules(McpAuditor({"mcp"}), session.flows)
    # The banner is flagged; initialize counts as answered, so tools/list is in order.
    assert [rule for rule, _, _ in found] == ["mcp.stdio.stdout-not-jsonrpc"]


def test_an_object_with_no_json_rpc_member_on_stdout_is_not_json_rpc() -> None:
    """A log line a server prints as JSON (``{"status": "starting"}``, ``{}``) is no JSON-RPC
    message at all; one with a JSON-RPC member but the wrong version is one, malformed."""
    session = Session()
    session.exchange(0, "initialize", {}, b'{"status": "starting"}')
    session.exchange(1, "ping", {}, b"{}")
    session.exchange(2, "ping", {}, b'{"jsonrpc": "1.0", "id": 2, "result": {}}')
    found = rules(McpAuditor({"mcp"}), session.flows)
    stdout = [flow for rule, flow, _ in found if rule == "mcp.stdio.stdout-not-jsonrpc"]
    assert stdout == [1, 2]


def test_flows_of_other_routes_are_left_alone() -> None:
    session = Session()
    session.exchange(1, "tools/call", {"name": "x"}, None)
    assert rules(McpAuditor({"other"}), session.flows) == []


BACKTRACKING = {"properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}


def test_while_the_session_runs_a_tool_whose_schema_holds_a_regex_is_left_to_check() -> None:
    # ^(a+)+$ against a run of a's and a "!" backtracks exponentially: live, it would hold the
    # observing process (and in one process the relay) for minutes. Short here, so check's
    # own pass over it ends at once.
    session = Session().opened()
    plain = {"properties": {"a": {"type": "integer"}}}
    session.exchange(1, "tools/list", {}, tools(regex=BACKTRACKING, plain=plain))
    call = {"name": "regex", "arguments": {"s": "a" * 12 + "!", "extra": 1}}
    session.exchange(2, "tools/call", call, {"content": []})
    session.exchange(3, "tools/call", {"name": "plain", "arguments": {"b": 1}}, {"content": []})
    live = rules(McpAuditor({"mcp"}, live=True), session.flows)
    assert [(rule, flow) for rule, flow, _ in live] == [("mcp.tools-call.undeclared-argument", 4)]
    after = rules(McpAuditor({"mcp"}), session.flows)
    assert [(rule, flow) for rule, flow, _ in after] == [
        ("mcp.tools-call.arguments", 3),
        ("mcp.tools-call.undeclared-argument", 3),
        ("mcp.tools-call.undeclared-argument", 4),
    ]


def test_a_regex_anywhere_in_a_schema_or_one_too_large_to_look_through_live_counts() -> None:
    from golem_proxy.analysis.schema_checks import SCHEMA_NODES, uses_regex

    assert not uses_regex({"type": "object", "properties": {"a": {"type": "string"}}})
    assert uses_regex({"anyOf": [{"type": "integer"}, {"patternProperties": {"^x": {}}}]})
    assert uses_regex({"$defs": {"id": {"pattern": "^[0-9]+$"}}, "$ref": "#/$defs/id"})
    large = {"not": {"pattern": "^x"}, "enum": list(range(20_000))}  # the enum looked at first
    assert uses_regex({"enum": list(range(20_000))}, SCHEMA_NODES)  # live: too large to tell
    assert not uses_regex({"enum": list(range(20_000))})  # check: looked through whole
    assert uses_regex(large)  # check: found past the live path's bound
