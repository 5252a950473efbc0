"""Two recordings' MCP layers compared: their tool calls side by side, in order
(`compare_sessions`: what the pytest plugin's session check and `diff` read), and `diff`'s
report of it, the calls' arguments compared too (`diff_tool_calls`).

`diff_traces` compares the plugin's layer, request by request (the MCP hop's exchanges are
another layer's: `load_exchanges`). Two `golem-proxy mcp` sessions that called other tools,
with other arguments, or got other results, differ though their GOLEM traffic may not: each
tool call is compared here as `mcp-verify` compares a result with the recorded one
(`compare_sessions`: GUID-aware, inside JSON text), and its arguments too, which
`mcp-verify` sends as recorded and `diff` must not take as equal."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from golem_core.profiles.mcp import TOOLS_CALL

from ..analysis.two_layers import ToolCall
from .diffing import Comparator
from .large_payloads import compare_as_bytes
from .mcp_verify import McpCheck, compare_tool_result, note_route_addresses

__all__ = ["ToolCallDiff", "compare_sessions", "diff_tool_calls"]


@dataclass
class ToolCallDiff:
    """The tool calls of A and B, aligned by position: each one's check (B's call compared
    with A's), with the row number of each side's call (None where a side has none)."""

    checks: list[McpCheck]
    a_rows: list[Optional[int]]
    b_rows: list[Optional[int]]

    @property
    def different(self) -> list[int]:
        """The positions whose calls differ."""
        return [i for i, check in enumerate(self.checks) if not check.ok]

    def to_json(self) -> dict[str, Any]:
        differing = []
        for i in self.different:
            entry = self.checks[i].to_json()
            entry.pop("number", None)
            differing.append({"a": self.a_rows[i], "b": self.b_rows[i], **entry})
        return {"compared": len(self.checks), "differing": differing}


def diff_tool_calls(
    a: Sequence[ToolCall], b: Sequence[ToolCall], comparator: Comparator, names: tuple[str, str]
) -> Optional[ToolCallDiff]:
    """The tool calls of two recordings (`read_tool_calls`) compared, their arguments and
    their results, in words naming the recordings ``names``; None when neither has one."""
    if not a and not b:
        return None
    checks = compare_sessions(a, b, comparator, names=names)
    for was, now, check in zip(a, b, checks):
        if check.problem is None and was.tool == now.tool:
            found = comparator.compare(was.arguments, now.arguments, was.tool, ("arguments",))
            check.differences[:0] = found
    return ToolCallDiff(checks, _rows(a, len(checks)), _rows(b, len(checks)))


def _rows(calls: Sequence[ToolCall], count: int) -> list[Optional[int]]:
    return [calls[i].number if i < len(calls) else None for i in range(count)]


def compare_sessions(
    recorded: Sequence[ToolCall],
    live: Sequence[ToolCall],
    comparator: Comparator,
    *,
    names: Optional[tuple[str, str]] = None,
) -> list[McpCheck]:
    """The tool calls of two recordings side by side, in order: each live result compared
    with the recorded one (GUID-aware, inside JSON text), a call to another tool, and a
    call only one side made, as problems. ``number`` is the live call's flow number.
    ``names``: the two recordings' names, for problems said as `diff` says them (``only in
    a.jsonl``); None: as a recording and a build played now."""
    words = _Words(names)
    checks: list[McpCheck] = []
    for position in range(max(len(recorded), len(live))):
        was = recorded[position] if position < len(recorded) else None
        now = live[position] if position < len(live) else None
        if now is None:
            assert was is not None
            checks.append(McpCheck(None, was.tool, TOOLS_CALL, None, problem=words.only_recorded))
            continue
        check = McpCheck(now.number, now.tool, TOOLS_CALL, _request_id(now))
        checks.append(check)
        if was is None:
            check.problem = words.only_live
        elif was.tool != now.tool:
            check.problem = words.other_tool(was.tool, now.tool)
        elif (_skeleton(was) or _skeleton(now)) and _answer(was) and _answer(now):
            # A payload too large to parse, read from its skeleton: the answers as bytes.
            check.differences = compare_as_bytes(_payload(was), _payload(now), comparator)
        else:
            recorded_answer, live_answer = _answer(was), _answer(now)
            if live_answer is None:
                check.problem = words.unanswered_live if recorded_answer is not None else None
            elif recorded_answer is None:
                check.problem = words.unanswered_recorded
            else:
                check.differences = compare_tool_result(
                    recorded_answer, live_answer, comparator, now.tool
                )
                note_route_addresses(check, comparator)
    return checks


class _Words:
    """How `compare_sessions` says a problem: of a recording and a build played now, or of
    two recordings by name."""

    def __init__(self, names: Optional[tuple[str, str]]) -> None:
        self.names = names
        a, b = names or ("", "")
        self.only_recorded = f"only in {a}" if names else "recorded, not called now"
        self.only_live = f"only in {b}" if names else "called now, not in the recording"
        self.unanswered_live = f"answered in {a}; unanswered in {b}" if names else "no answer now"
        self.unanswered_recorded = (
            f"unanswered in {a}; answered in {b}"
            if names
            else "answered now, unanswered in the recording"
        )

    def other_tool(self, was: str, now: str) -> str:
        if self.names is None:
            return f"called {now}, the recording has {was} here"
        return f"{self.names[0]} called {was} here, {self.names[1]} {now}"


def _payload(call: ToolCall) -> bytes:
    response = call.flow.response
    return response.payload if response is not None else b""


def _skeleton(call: ToolCall) -> bool:
    """Whether ``call``'s answer is a skeleton (its payload too large to parse)."""
    response = call.flow.response
    return response is not None and bool(response.elided)


def _answer(call: ToolCall) -> Optional[dict[str, Any]]:
    response = call.flow.response
    obj = response.message.obj if response is not None else None
    return obj if isinstance(obj, dict) else None


def _request_id(call: ToolCall) -> Any:
    request = call.flow.request
    return request.message.id if request is not None else None
