"""Per-tool statistics of a `golem-proxy mcp` recording: calls, failures, latency, and how
the latency splits into time inside Rhino (the GOLEM exchanges the call caused) and the MCP
server's own time (the rest, stdio hop included).

Fed flows in number order (as `FlowReader.flows` hands them on), after `ToolCallIndex.note`
saw them; a tool call's GOLEM flows come after it, so the figures are final at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .call_outage import routes_down, went_down
from .flows import Flow
from .proxy_notes import acted
from .stats import LatencySummary, summarize_latencies
from .tool_calls import ToolCallIndex, tool_call_error
from .trace import json_ms
from .two_layers import ToolCall, TwoLayerBuilder

__all__ = ["ToolStats", "ToolStatsBuilder"]


@dataclass(frozen=True)
class ToolStats:
    """One tool's row. Times in seconds; the Rhino and server shares are means per
    answered call whose GOLEM flows are all its own (a call that overlapped others shares
    some: `shared_flows`, and how its time splits is unknown)."""

    tool: str
    calls: int
    errors: int
    pending: int
    golem_flows: int
    latency: LatencySummary
    rhino_mean: Optional[float]
    server_mean: Optional[float]
    shared_flows: int = 0
    split_calls: int = 0
    """The answered calls the Rhino and server means are over."""
    failed_connections: int = 0
    """GOLEM connections its calls opened that ended before a byte crossed them."""
    made_while_down: int = 0
    """Its calls made while a GOLEM route was not listening (`FrameSeen.routes_down`): their
    connection attempts there, if any, were refused by the system, unseen."""
    went_down_during: int = 0
    """Its calls during which a GOLEM route stopped listening (their answer's
    `FrameSeen.routes_down`): what they tried there after that was refused too."""
    met_route_down: int = 0
    """Its calls that met a GOLEM route not listening, either way (each counted once)."""
    unknown: int = 0
    """Its calls whose outcome is not known, neither failed nor succeeded: pending at the
    end, let go past the pairing limits, or answered in a gap (`tool_call_error` None)."""
    by_proxy: int = 0
    """Its calls a GOLEM flow of which the proxy itself acted on (``--fault``,
    ``--intercept``: `Flow.faults`): the Rhino and server means leave them out, as their
    time in Rhino is partly the proxy's."""

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "calls": self.calls,
            "errors": self.errors,
            "pending": self.pending,
            "golem_flows": self.golem_flows,
            "latency": self.latency.to_json(),
            "rhino_mean_ms": json_ms(self.rhino_mean),
            "server_mean_ms": json_ms(self.server_mean),
            "shared_golem_flows": self.shared_flows,
            "split_calls": self.split_calls,
            "failed_connections": self.failed_connections,
            "calls_while_down": self.made_while_down,
            "calls_went_down": self.went_down_during,
            "calls_met_route_down": self.met_route_down,
            "unknown": self.unknown,
            "by_proxy": self.by_proxy,
        }


class ToolStatsBuilder:
    """Collects the tool calls of a stream of flows and their GOLEM flows."""

    def __init__(self, index: ToolCallIndex) -> None:
        self.index = index
        self._layers = TwoLayerBuilder(index, keep=False)

    def add(self, flow: Flow) -> None:
        self._layers.add(flow)

    def stats(self) -> list[ToolStats]:
        """One row per tool, by name."""
        by_tool: dict[str, list[ToolCall]] = {}
        for call in self._layers.layers.tool_calls:
            by_tool.setdefault(call.tool, []).append(call)
        return [_row(tool, calls) for tool, calls in sorted(by_tool.items())]


def _row(tool: str, calls: list[ToolCall]) -> ToolStats:
    answered = [call for call in calls if call.latency is not None]
    proxied = [call for call in calls if _by_proxy(call)]
    split = [call for call in answered if not call.shared and call not in proxied]
    rhino = [call.rhino_time for call in split]
    server = [call.server_time or 0.0 for call in split]
    return ToolStats(
        tool,
        len(calls),
        sum(1 for call in calls if call.is_error),
        sum(1 for call in calls if call.flow.pending),
        sum(len(call.golem) for call in calls),
        summarize_latencies(call.latency for call in answered if call.latency is not None),
        sum(rhino) / len(rhino) if rhino else None,
        sum(server) / len(server) if server else None,
        len({flow.number for call in calls for flow in call.shared}),
        len(split),
        sum(len(call.failed_connections) for call in calls),
        sum(1 for call in calls if routes_down(call.flow)),
        sum(1 for call in calls if went_down(call.flow)),
        sum(1 for call in calls if routes_down(call.flow) or went_down(call.flow)),
        sum(1 for call in calls if tool_call_error(call.flow) is None),
        len(proxied),
    )


def _by_proxy(call: ToolCall) -> bool:
    """Whether the proxy acted on a GOLEM flow of ``call`` (`Flow.faults`)."""
    return any(acted(step) for flow in call.golem for step in flow.faults)
