"""A `golem-proxy mcp` recording read whole into its two layers: every MCP flow, each tool call
with the GOLEM flows it caused (and what overlapping calls shared), and the GOLEM flows of no
call or of several. The attribution each flow carries is read through tool_calls.py; nothing
here decides one."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional

from ..events import FrameSeen
from .flows import Flow
from .reading_notes import reading_notes
from .tool_calls import (
    AMBIGUOUS,
    LAYER_MCP,
    ToolCallIndex,
    arguments_of,
    is_tool_call,
    mcp_routes,
    tool_call_error,
    tool_of,
)
from .trace import open_flows

__all__ = ["ToolCall", "TwoLayerBuilder", "TwoLayers", "read_tool_calls", "read_two_layers"]


@dataclass
class ToolCall:
    """One MCP ``tools/call`` and the GOLEM flows it caused."""

    flow: Flow
    golem: list[Flow] = field(default_factory=list)
    shared: list[Flow] = field(default_factory=list)
    """GOLEM flows sent while this call overlapped others: each names every candidate, so
    this call's Rhino time is unknown while it has any."""
    failed_connections: list[Flow] = field(default_factory=list)
    """GOLEM connections opened during this call alone that ended before a byte crossed them
    (the plugin refused them, …): no exchange, no Rhino time, and not in ``golem``."""

    @property
    def number(self) -> int:
        return self.flow.number

    @property
    def tool(self) -> str:
        return tool_of(self.flow) or "?"

    @property
    def arguments(self) -> Any:
        return arguments_of(self.flow)

    @property
    def is_error(self) -> bool:
        return bool(tool_call_error(self.flow))

    @property
    def latency(self) -> Optional[float]:
        return self.flow.latency

    @property
    def rhino_time(self) -> float:
        """Seconds of this call's span spent in the GOLEM exchanges it caused (request sent to
        answer read). Only the part of an exchange inside the span counts: one may outlive
        its call (the server's tool gave up waiting and answered; Rhino answered later), and
        that later part is no part of the call's latency. An exchange never answered (the
        plugin died, or the server stopped waiting) counts to the call's end: the server was
        waiting on Rhino, or learning it was gone, not working. An unanswered call's span has
        no end yet."""
        start = self.flow.t
        end = None if self.latency is None else start + self.latency
        spans: list[tuple[float, float]] = []
        for flow in self.golem:
            if flow.latency is not None:
                finish = flow.t + flow.latency
            elif end is not None and flow.closed_unanswered:
                # Waited until its connection closed (or the plugin's side ended), or the
                # call's end if that was not recorded.
                finish = end if flow.unanswered_at is None else flow.unanswered_at
            else:
                continue
            if end is not None:
                finish = min(finish, end)
            begin = max(flow.t, start)
            if finish > begin:
                spans.append((begin, finish))
        # Exchanges that overlap (a retry on a new connection while the old one waited,
        # pipelined calls) are one wait on Rhino, not two.
        total, reached = 0.0, start
        for begin, finish in sorted(spans):
            begin = max(begin, reached)
            if finish > begin:
                total += finish - begin
                reached = finish
        return total

    @property
    def server_time(self) -> Optional[float]:
        """Seconds of the call's latency spent outside the GOLEM exchanges: the MCP server's
        own work (and the stdio hop)."""
        latency = self.latency
        return None if latency is None else max(0.0, latency - self.rhino_time)

    @property
    def failed_golem(self) -> list[Flow]:
        """The GOLEM exchanges under this call that failed."""
        return [flow for flow in self.golem if flow.is_error]


@dataclass
class TwoLayers:
    """A recording of `golem-proxy mcp` read whole: every MCP flow in order, the tool calls
    with the GOLEM flows each caused, and the GOLEM flows of no call or of several."""

    mcp: list[Flow] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    outside: list[Flow] = field(default_factory=list)
    """GOLEM flows sent outside any tool call."""
    ambiguous: list[Flow] = field(default_factory=list)
    """GOLEM flows sent while several tool calls overlapped (`Attribution.numbers` names them)."""
    notes: list[str] = field(default_factory=list)
    """What reading the recording to its end noted (`reading_notes`: cut short, lines lost or
    out of order, …), as every view prints them; empty from a `TwoLayerBuilder` alone."""

    def client_requests(self) -> list[FrameSeen]:
        """What the MCP client sent, in wire order (requests and notifications): the client
        side to play again."""
        frames = [flow.request for flow in self.mcp if flow.request is not None]
        return sorted(frames, key=lambda frame: (frame.conn, frame.index))


class TwoLayerBuilder:
    """Sorts flows, in number order, into `TwoLayers`; with ``keep=False`` it keeps only the
    tool calls and their GOLEM flows (what per-tool statistics need)."""

    def __init__(self, index: ToolCallIndex, *, keep: bool = True) -> None:
        self.index = index
        self.keep = keep
        self.layers = TwoLayers()
        self._calls: dict[int, ToolCall] = {}

    def add(self, flow: Flow) -> None:
        """Sort one flow (`ToolCallIndex.note` must have seen it)."""
        layers, index = self.layers, self.index
        if index.layer(flow) == LAYER_MCP:
            if self.keep:
                layers.mcp.append(flow)
            if is_tool_call(flow):
                call = self._calls[flow.number] = ToolCall(flow)
                layers.tool_calls.append(call)
            return
        attribution = index.attribution(flow)
        number = attribution.number
        failed = flow.connection_failed is not None
        if attribution.state == AMBIGUOUS and not failed:
            for candidate in attribution.numbers:
                if candidate is not None and candidate in self._calls:
                    self._calls[candidate].shared.append(flow)
        if number is not None and number in self._calls:
            call = self._calls[number]
            (call.failed_connections if failed else call.golem).append(flow)
        elif not self.keep:
            return
        elif attribution.state == AMBIGUOUS:
            layers.ambiguous.append(flow)
        else:
            layers.outside.append(flow)


def read_two_layers(path: str | os.PathLike[str]) -> TwoLayers:
    """Read the recording at ``path`` into its two layers, with what reading it noted
    (`TwoLayers.notes`). Raises TraceError (analysis.trace)
    for a file that cannot be read; a recording without an MCP layer has every flow in
    ``outside``."""
    with open_flows(os.fspath(path)) as reader:  # the notes name it as a text
        index = ToolCallIndex(mcp_routes(reader.route_profiles))
        builder = TwoLayerBuilder(index)
        for flow in reader.flows():
            index.note(flow)
            builder.add(flow)
        builder.layers.notes = reading_notes(reader)
    return builder.layers


def read_tool_calls(path: str) -> list[ToolCall]:
    """The tool calls of the recording at ``path``, in order, each with its GOLEM flows.
    Raises TraceError (analysis.trace) for a file that cannot be read."""
    return read_two_layers(path).tool_calls
