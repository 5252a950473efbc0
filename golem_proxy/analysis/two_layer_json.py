"""What `show --json` (and `export`, and the Parquet rows of `query`) says of a flow's two
layers in a `golem-proxy mcp` recording: its layer, and the tool call it made or belongs to
(`two_layer_json`), added to each flow of a reader (`layered_json`).

Apart from tool_calls.py, which reads the layers for every view, because this is one output
format's wording of what it reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from golem_core.profiles import Profile

from .call_outage import routes_down, went_down
from .flows import Flow
from .late_answers import answer_of, answer_of_text, is_late, late_text
from .proxy_notes import after_return, step_names
from .tool_calls import (
    AMBIGUOUS,
    ToolCallIndex,
    arguments_of,
    is_tool_call,
    layer_of,
    mcp_routes,
    tool_call_error,
    tool_of,
)
from .trace import FlowReader, flow_to_json

__all__ = ["layered_json", "two_layer_json"]


def two_layer_json(flow: Flow, profile: Profile, index: ToolCallIndex) -> dict[str, Any]:
    """The members `show --json` adds to a flow: its ``layer``; for an MCP ``tools/call``
    its ``tool``, ``arguments`` and ``is_error`` (and ``routes_down``, the GOLEM routes not
    listening when it was made, and ``went_down``, those that stopped listening while it was
    in flight, when any did, and ``answer_of``, the GOLEM exchange whose answer its result
    is when not its own, and ``proxy_under``, the GOLEM rows of it the proxy acted on, each
    ``{"flow", "faults"}`` with the names of its steps); for a flow of the other layer,
    ``tool_call`` (the number of the MCP flow that caused it, or null), ``attribution``
    (``call``, ``none``, ``ambiguous``, or ``unknown`` without an MCP layer), when
    ambiguous, ``tool_call_candidates``, and when its answer came after its call returned,
    ``late`` and ``late_text``."""
    data: dict[str, Any] = {"layer": layer_of(profile)}
    if profile.tool_layer:
        if is_tool_call(flow):
            data.update(
                tool=tool_of(flow), arguments=arguments_of(flow), is_error=tool_call_error(flow)
            )
            for member, routes in (
                ("routes_down", routes_down(flow)),
                ("went_down", went_down(flow)),
            ):
                if routes:
                    data[member] = [{"route": d.route, "since": d.since} for d in routes]
            if flow.proxy_under:  # the proxy's doing under the call, as the tracker placed it
                returned = flow.response.t if flow.response is not None else None
                data["proxy_under"] = [
                    {
                        "flow": row,
                        "faults": step_names(steps),
                        **({"after_return": True} if after_return(steps, returned) else {}),
                    }
                    for row, steps in flow.proxy_under
                ]
            found = answer_of(flow)
            if found is not None:
                number = index.golem_number(found)
                data["answer_of"] = {
                    "flow": number,
                    "route": found.route,
                    "conn": found.conn,
                    "n": found.index,
                    "method": found.method,
                    "tool": found.tool,
                    "text": answer_of_text(flow, number),
                }
        return data
    attribution = index.attribution(flow)
    data.update(tool_call=attribution.number, attribution=attribution.state)
    if attribution.state == AMBIGUOUS:
        data["tool_call_candidates"] = list(attribution.numbers)
    if is_late(flow):
        data.update(late=True, late_text=late_text(flow, attribution.rows))
    return data


def layered_json(reader: FlowReader) -> Iterator[tuple[Flow, dict[str, Any]]]:
    """Every flow of ``reader`` as `show --json` gives it, in order: `flow_to_json` under its
    route's profile, with its two-layer members (`two_layer_json`)."""
    index = ToolCallIndex(mcp_routes(reader.route_profiles))
    for flow in reader.flows():
        index.note(flow)
        profile = reader.profile_for(flow.route)
        data = flow_to_json(flow, profile)
        data.update(two_layer_json(flow, profile, index))
        yield flow, data
