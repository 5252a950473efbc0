"""Two recordings' MCP layers compared: their tool calls aligned and side by side
(`compare_sessions`: what the pytest plugin's session check and `diff` read), and `diff`'s
report of it, the calls' arguments compared too (`diff_tool_calls`).

`diff_traces` compares the plugin's layer, request by request (the MCP hop's exchanges are
another layer's: `load_exchanges`). Two `golem-proxy mcp` sessions that called other tools,
with other arguments, or got other results, differ though their GOLEM traffic may not: each
tool call is compared here as `mcp-verify` compares a result with the recorded one
(`compare_sessions`: GUID-aware, inside JSON text), and its arguments too, which
`mcp-verify` sends as recorded and `diff` must not take as equal.

The calls are aligned as the plugin's layer aligns its requests (`alignment.align`), not by
position: one call made first in only one session is that call, inserted, and the others
still meet their like (by position, every call after it was compared with the one before).
They are aligned by tool and arguments, then, between what that aligned, by tool alone, so a
call whose arguments changed meets the call it replaced and differs in them.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Optional

from golem_core.profiles.mcp import TOOLS_CALL

from ..analysis.tool_calls import arguments_summary
from ..analysis.two_layers import ToolCall
from .alignment import Windowed, align
from .diffing import Comparator
from .large_payloads import compare_as_bytes
from .mcp_verify import McpCheck, compare_tool_result, note_route_addresses

__all__ = ["CallPair", "ToolCallDiff", "compare_sessions", "diff_tool_calls", "pair_tool_calls"]

CallPair = tuple[Optional[ToolCall], Optional[ToolCall]]
"""A call of A and its like in B; None on the side that has no such call."""


@dataclass
class ToolCallDiff:
    """The tool calls of A and B, aligned (`pair_tool_calls`): each pair's check (B's call
    compared with A's), with the pair itself."""

    checks: list[McpCheck]
    pairs: list[CallPair]
    windowed: Optional[Windowed] = None
    """Set when the calls were many and aligned in windows (`alignment`): a call moved
    further than a window shows as removed and added."""

    @property
    def a_rows(self) -> list[Optional[int]]:
        """The row of A's call of each pair, None where only B has one."""
        return [a.number if a is not None else None for a, _ in self.pairs]

    @property
    def b_rows(self) -> list[Optional[int]]:
        return [b.number if b is not None else None for _, b in self.pairs]

    @property
    def different(self) -> list[int]:
        """The positions whose calls differ."""
        return [i for i, check in enumerate(self.checks) if not check.ok]

    def call_text(self, index: int) -> str:
        """The pair's tool, with the arguments of a call only one side made (``create_layer(
        name="A")``): the pair says no more of which call it is."""
        a, b = self.pairs[index]
        if a is not None and b is not None:
            return self.checks[index].name
        call = a if a is not None else b
        assert call is not None
        return f"{call.tool}({arguments_summary(call.flow)})"

    def to_json(self) -> dict[str, Any]:
        differing = []
        a_rows, b_rows = self.a_rows, self.b_rows
        for i in self.different:
            entry = self.checks[i].to_json()
            entry.pop("number", None)
            differing.append({"a": a_rows[i], "b": b_rows[i], **entry})
        report: dict[str, Any] = {"compared": len(self.checks), "differing": differing}
        if self.windowed is not None:  # optional: present only when aligned in windows
            report["windowed"] = {
                "window": self.windowed.window,
                "a_calls": self.windowed.a_span,
                "b_calls": self.windowed.b_span,
            }
        return report


def diff_tool_calls(
    a: Sequence[ToolCall], b: Sequence[ToolCall], comparator: Comparator, names: tuple[str, str]
) -> Optional[ToolCallDiff]:
    """The tool calls of two recordings (`read_tool_calls`) aligned and compared, their
    arguments and their results, in words naming the recordings ``names``; None when neither
    has one."""
    if not a and not b:
        return None
    pairs, windowed = _aligned(a, b)
    checks = _compare_pairs(pairs, comparator, _Words(names))
    for (was, now), check in zip(pairs, checks):
        if was is not None and now is not None and check.problem is None:
            found = comparator.compare(was.arguments, now.arguments, was.tool, ("arguments",))
            check.differences[:0] = found
    return ToolCallDiff(checks, pairs, windowed)


def pair_tool_calls(a: Sequence[ToolCall], b: Sequence[ToolCall]) -> list[CallPair]:
    """The calls of ``a`` and ``b`` aligned, in order (see the module): each pair a call of
    both, or of one (None for the other), where the alignment put it."""
    return _aligned(a, b)[0]


def _aligned(
    a: Sequence[ToolCall], b: Sequence[ToolCall]
) -> tuple[list[CallPair], Optional[Windowed]]:
    exact = align([_call_key(call) for call in a], [_call_key(call) for call in b])
    pairs: list[CallPair] = []
    i = j = 0
    for i_start, j_start, size in [*exact.blocks, (len(a), len(b), 0)]:
        pairs += _paired(a[i:i_start], b[j:j_start], lambda call: call.tool)
        pairs += zip(a[i_start : i_start + size], b[j_start : j_start + size])
        i, j = i_start + size, j_start + size
    return pairs, exact.windowed


def _paired(
    a: Sequence[ToolCall], b: Sequence[ToolCall], key: Callable[[ToolCall], Hashable]
) -> list[CallPair]:
    """``a`` and ``b`` aligned by ``key``: as the plugin's layer lists them, what only A has
    before what only B has, then the calls alike."""
    if not a or not b:
        return [(call, None) for call in a] + [(None, call) for call in b]
    pairs: list[CallPair] = []
    i = j = 0
    for i_start, j_start, size in [*align([key(c) for c in a], [key(c) for c in b]).blocks]:
        pairs += [(call, None) for call in a[i:i_start]] + [(None, c) for c in b[j:j_start]]
        pairs += zip(a[i_start : i_start + size], b[j_start : j_start + size])
        i, j = i_start + size, j_start + size
    return pairs + [(call, None) for call in a[i:]] + [(None, call) for call in b[j:]]


def _call_key(call: ToolCall) -> Hashable:
    """A call's tool and arguments, as one value equal for the same call made again."""
    try:
        arguments = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        arguments = repr(call.arguments)
    return call.tool, arguments


def compare_sessions(
    recorded: Sequence[ToolCall],
    live: Sequence[ToolCall],
    comparator: Comparator,
    *,
    names: Optional[tuple[str, str]] = None,
) -> list[McpCheck]:
    """The tool calls of two recordings aligned (`pair_tool_calls`) and compared: each live
    result with the recorded one (GUID-aware, inside JSON text), and a call only one side
    made, as a problem. ``number`` is the recorded call's flow number (None for a call only
    made live): the row of the recording the user has, not of one made to compare.
    ``names``: the two recordings' names, for problems said as `diff` says them (``only in
    a.jsonl``); None: as a recording and a build played now."""
    return _compare_pairs(pair_tool_calls(recorded, live), comparator, _Words(names))


def _compare_pairs(pairs: list[CallPair], comparator: Comparator, words: _Words) -> list[McpCheck]:
    checks: list[McpCheck] = []
    for was, now in pairs:
        if now is None:
            assert was is not None
            checks.append(
                McpCheck(was.number, was.tool, TOOLS_CALL, None, problem=words.only_recorded)
            )
            continue
        number = was.number if was is not None else None
        check = McpCheck(number, now.tool, TOOLS_CALL, _request_id(now))
        checks.append(check)
        if was is None:
            check.problem = words.only_live
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
        a, b = names or ("", "")
        self.only_recorded = f"only in {a}" if names else "recorded, not called now"
        self.only_live = f"only in {b}" if names else "called now, not in the recording"
        self.unanswered_live = f"answered in {a}; unanswered in {b}" if names else "no answer now"
        self.unanswered_recorded = (
            f"unanswered in {a}; answered in {b}"
            if names
            else "answered now, unanswered in the recording"
        )


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
