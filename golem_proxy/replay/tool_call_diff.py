"""`diff`'s comparison of two recordings' MCP layers: their tool calls side by side, in order.

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

from ..analysis.tool_calls import ToolCall
from .diffing import Comparator
from .mcp_verify import McpCheck, compare_sessions

__all__ = ["ToolCallDiff", "diff_tool_calls"]


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
