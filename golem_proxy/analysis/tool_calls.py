"""The two layers of a `golem-proxy mcp` recording, as the views read them: which layer a flow
is on, which MCP tool call a GOLEM flow belongs to, and what a tool call did.

Nothing here decides an attribution: the tap did, as it decoded each GOLEM frame, and the
frame carries it (`FrameSeen.tool_calls`, docs/recording-format.md). A GOLEM flow takes the
attribution of its request frame (of its response, for an orphan response); a GOLEM
connection that ended before a byte crossed it, that of its close (`Flow.connection_failed`).
This module maps the MCP request it names to that request's flow number and reads the
outcome of a ``tools/call`` (its ``isError``, an error response, or no answer at all).

A recording read whole into its tool calls and their GOLEM flows is two_layers.py's; what
`show --json` says of each flow's layers is two_layer_json.py's.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, TypeVar

from golem_core.messages import Request
from golem_core.profiles import Profile
from golem_core.profiles.mcp import TOOLS_CALL, tool_call_failed, tool_name

from ..events import AnswerOf, FrameSeen, ToolCallRef
from .call_outage import outage_label
from .flows import Flow
from .trace import json_text

if TYPE_CHECKING:  # served at run time by `__getattr__` (two_layers.py imports this module)
    from .two_layers import (
        ToolCall,
        TwoLayerBuilder,
        TwoLayers,
        read_tool_calls,
        read_two_layers,
    )

__all__ = [
    "LAYER_GOLEM",
    "LAYER_MCP",
    "SHOWN_CANDIDATES",
    "Attribution",
    # Their old home: `__getattr__` serves them from two_layers.py, star imports included.
    "ToolCall",
    "ToolCallIndex",
    "TwoLayerBuilder",
    "TwoLayers",
    "arguments_summary",
    "attributed_tool",
    "attribution_refs",
    "call_key",
    "candidates_text",
    "cause_text",
    "caused_by",
    "connection_text",
    "is_tool_call",
    "layer_of",
    "mcp_routes",
    "owner_key",
    "read_tool_calls",
    "read_two_layers",
    "tool_call_error",
    "tool_call_name",
    "tool_of",
    "two_layer_label",
]

LAYER_MCP = "mcp"
LAYER_GOLEM = "golem"

NO_MCP_LAYER = "unknown"
NO_TOOL_CALL = "none"
ONE_TOOL_CALL = "call"
AMBIGUOUS = "ambiguous"
MAX_HELD_FLOWS = 4096
"""GOLEM flows numbered since a late answer on their connection, kept at most."""
SHOWN_CANDIDATES = 3
"""How many of the tool calls a GOLEM flow may belong to a view names before it counts the
rest (`candidates_text`): with 300 calls in flight, every row and log line would otherwise be
as wide as the list. ``--json`` and the flow table keep them all."""

T = TypeVar("T")


def mcp_routes(route_profiles: Mapping[str, Profile]) -> frozenset[str]:
    """The routes of a recording that are its MCP layer (their profile says so)."""
    return frozenset(route for route, profile in route_profiles.items() if profile.tool_layer)


@dataclass(frozen=True)
class Attribution:
    """What a GOLEM flow's frames say about the tool call that caused it."""

    refs: Optional[tuple[ToolCallRef, ...]]
    """The calls in flight when its request was decoded; None: the recording has no MCP layer."""
    numbers: tuple[Optional[int], ...] = ()
    """The flow number of each call in `refs` (None for one not seen in this read)."""

    @property
    def state(self) -> str:
        """``call`` (exactly one), ``none`` (outside any tool call), ``ambiguous`` (several
        overlapped) or ``unknown`` (no MCP layer in the recording, or a flow without a frame
        to carry the decision: a gap, a framing error)."""
        if self.refs is None:
            return NO_MCP_LAYER
        if not self.refs:
            return NO_TOOL_CALL
        return ONE_TOOL_CALL if len(self.refs) == 1 else AMBIGUOUS

    @property
    def number(self) -> Optional[int]:
        """The number of the MCP flow that caused it, when exactly one did."""
        return self.numbers[0] if self.state == ONE_TOOL_CALL and self.numbers else None

    @property
    def tool(self) -> Optional[str]:
        return self.refs[0].tool if self.refs and len(self.refs) == 1 else None

    @property
    def rows(self) -> dict[CallKey, int]:
        """Each call named (its key) and its flow number, where known."""
        refs = self.refs or ()
        return {(r.conn, r.index): n for r, n in zip(refs, self.numbers) if n is not None}


def _attributed_frame(flow: Flow) -> Optional[FrameSeen]:
    return flow.request if flow.request is not None else flow.response


def attribution_refs(flow: Flow) -> Optional[tuple[ToolCallRef, ...]]:
    """The tool calls a flow's frames name (empty: outside any call), or the close of a
    connection that carried nothing; None when they carry no attribution at all (a recording
    without an MCP layer, a gap, a framing error)."""
    frame = _attributed_frame(flow)
    if frame is not None:
        return frame.tool_calls
    closed = flow.connection_failed
    return closed.tool_calls if closed is not None else None


def attributed_tool(flow: Flow) -> Optional[str]:
    """The tool of the one tool call a GOLEM flow belongs to (None: no call, several, or a
    recording without an MCP layer)."""
    refs = attribution_refs(flow)
    return refs[0].tool if refs is not None and len(refs) == 1 else None


def connection_text(flow: Flow) -> Optional[str]:
    """``✗ connection: REASON`` for a GOLEM connection that ended before a byte crossed it
    (`Flow.connection_failed`), in the proxy's words; ``✂ connection closed by the proxy:
    REASON`` for one the proxy closed itself (`Flow.closed_by_proxy`: ``--idle-timeout``);
    None for any other flow."""
    cut = flow.closed_by_proxy
    if cut is not None:
        return f"✂ connection closed by the proxy: {cut.reason}"
    closed = flow.connection_failed
    return None if closed is None else f"✗ connection: {closed.reason}"


def two_layer_label(flow: Flow) -> Optional[str]:
    """A row's method text in a two-layer recording, from the decisions its frames carry: a
    tool call as ``tool(arguments)``, a GOLEM flow of one call as ``  ↳ method``, of
    overlapping calls as ``  ? method`` (a connection that carried nothing as
    ``✗ connection: REASON`` in place of the method), a call made while a GOLEM route was
    down with ``  ⋯ ROUTE down since T s`` after it (``ROUTE went down at T s`` when it
    stopped listening during the call); None for any other flow (the plain method)."""
    if is_tool_call(flow):
        outage = outage_label(flow)
        call = f"{tool_of(flow)}({arguments_summary(flow)})"
        return call if outage is None else f"{call}  ⋯ {outage}"
    refs = attribution_refs(flow)
    failed = connection_text(flow)
    if failed is not None and not refs:
        return failed  # opened outside any tool call
    method = failed if failed is not None else flow.method
    if not refs or method is None:
        return None
    return f"  {'↳' if len(refs) == 1 else '?'} {method}"


def cause_text(flow: Flow, rows: Mapping[tuple[int, int], int] = {}) -> Optional[str]:
    """What a GOLEM flow's frames say about the tool call behind it, in words (None when the
    recording has no MCP layer): each call by its row number, as `show` names it, where
    ``rows`` (call key → row) knows it, and its tool and MCP id."""
    refs = attribution_refs(flow)
    if refs is None:
        return None
    if not refs:
        return "sent outside any tool call"

    def named(ref: ToolCallRef) -> str:
        row = rows.get((ref.conn, ref.index))
        return f"{'' if row is None else f'#{row} '}{tool_call_name(ref)}"

    if len(refs) == 1:
        return f"caused by tool call {named(refs[0])}"
    return f"ambiguous: one of {candidates_text(refs, named, ', ')}"


def candidates_text(items: Sequence[T], name: Callable[[T], str], separator: str) -> str:
    """``#2|#3|#4 … and 297 more``: the first `SHOWN_CANDIDATES` of ``items`` (the tool calls
    a flow may belong to), each as ``name`` says it, joined by ``separator``, then how many
    more there are; all of them when that is one more. What every view of a flow's
    candidates says (`show`, the live log, the TUI)."""
    shown = len(items) if len(items) <= SHOWN_CANDIDATES + 1 else SHOWN_CANDIDATES
    named = separator.join(name(item) for item in items[:shown])
    return named if shown == len(items) else f"{named} … and {len(items) - shown} more"


def tool_call_name(ref: ToolCallRef) -> str:
    """A tool call named in words where no row number can name it (the live log), and after
    its row number where one can (`cause_text`): its tool and the id of its MCP request as the
    client sent it, in JSON, ``create_layer (MCP id 3)``: overlapping calls are often of one
    tool."""
    return f"{ref.tool} (MCP id {json_text(ref.id)})"


CallKey = tuple[int, int]
"""A tool call as GOLEM frames name it: the MCP connection and its request frame's index."""


def call_key(flow: Flow) -> Optional[CallKey]:
    """The key of an MCP ``tools/call`` flow (None for any other flow)."""
    if not is_tool_call(flow) or flow.request is None:
        return None
    return (flow.conn, flow.request.index)


def owner_key(flow: Flow) -> Optional[CallKey]:
    """The key of the one tool call a GOLEM flow belongs to (None: no call, or several)."""
    refs = attribution_refs(flow)
    if refs is None or len(refs) != 1:
        return None
    return (refs[0].conn, refs[0].index)


def caused_by(call: Flow, flows: Iterable[Flow]) -> list[Flow]:
    """The flows among ``flows`` whose frames name ``call`` (an MCP ``tools/call`` flow) as
    the one tool call that caused them, in order."""
    key = call_key(call)
    return [] if key is None else [flow for flow in flows if owner_key(flow) == key]


def shared_with(call: Flow, flows: Iterable[Flow]) -> list[Flow]:
    """The flows among ``flows`` whose frames name ``call`` among several tool calls that
    were in flight (ambiguous: it may have caused them), in order."""
    key = call_key(call)
    if key is None:
        return []
    found = []
    for flow in flows:
        refs = attribution_refs(flow)
        if refs and len(refs) > 1 and any((ref.conn, ref.index) == key for ref in refs):
            found.append(flow)
    return found


def layer_of(profile: Profile) -> str:
    """The layer of a flow on a route of ``profile``: ``mcp`` for the MCP layer, else the
    protocol's name (``golem``)."""
    return LAYER_MCP if profile.tool_layer else profile.name


class ToolCallIndex:
    """Follows a recording's flows in number order (as `FlowReader.flows` hands them on) and
    says, for each, its layer and, for a GOLEM flow, its tool call. Call `note` on every flow
    before asking about the flows after it."""

    def __init__(self, routes: Collection[str]) -> None:
        self.routes = frozenset(routes)
        self._numbers: dict[tuple[int, int], int] = {}
        # GOLEM flows on a connection since a late answer on it (`FrameSeen.late`), by route,
        # connection and request index: a tool call's ``answer_of`` names one. Bounded.
        self._held: set[tuple[str, int]] = set()
        self._golem: collections.OrderedDict[tuple[str, int, int], int] = collections.OrderedDict()

    @property
    def has_mcp_layer(self) -> bool:
        return bool(self.routes)

    def layer(self, flow: Flow) -> str:
        return LAYER_MCP if flow.route in self.routes else LAYER_GOLEM

    def note(self, flow: Flow) -> None:
        """Remember an MCP ``tools/call`` flow's number, for the GOLEM flows that name it."""
        if flow.route in self.routes:
            if is_tool_call(flow):
                assert flow.request is not None
                self._numbers[(flow.conn, flow.request.index)] = flow.number
        elif self._held or (flow.response is not None and flow.response.late):
            self._note_held(flow)

    def _note_held(self, flow: Flow) -> None:
        where = (flow.route, flow.conn)
        if flow.response is not None and flow.response.late:
            self._held.add(where)
        if where in self._held and flow.request is not None:
            self._golem[(*where, flow.request.index)] = flow.number
            if len(self._golem) > MAX_HELD_FLOWS:
                self._golem.popitem(last=False)

    def golem_number(self, found: AnswerOf) -> Optional[int]:
        """The number of the GOLEM flow a tool call's ``answer_of`` names (None: not noted)."""
        return self._golem.get((found.route, found.conn, found.index))

    def attribution(self, flow: Flow) -> Attribution:
        refs = attribution_refs(flow)
        if refs is None:
            # Frames of a two-layer recording always carry the decision; a flow without a
            # frame (a gap, a framing error) has none to carry, and is not known to be
            # outside every call: "unknown", like a recording without an MCP layer.
            return Attribution(None)
        return Attribution(refs, tuple(self._numbers.get((r.conn, r.index)) for r in refs))


def is_tool_call(flow: Flow) -> bool:
    """An MCP ``tools/call`` request's flow."""
    request = flow.request
    return (
        request is not None
        and isinstance(request.message, Request)
        and request.message.method == TOOLS_CALL
    )


def tool_call_error(flow: Flow) -> Optional[bool]:
    """Whether a ``tools/call`` failed as the model saw it: ``isError`` true in its result,
    an error response, or no answer; None while it is pending or for other flows."""
    if not is_tool_call(flow):
        return None
    response = flow.response
    if response is None:
        return True if flow.closed_unanswered or flow.frame_error is not None else None
    assert flow.request is not None
    return tool_call_failed(flow.request.message, response.message)


def tool_of(flow: Flow) -> Optional[str]:
    """The tool a ``tools/call`` flow names."""
    return tool_name(flow.request.message) if is_tool_call(flow) and flow.request else None


def arguments_of(flow: Flow) -> Any:
    if not is_tool_call(flow) or flow.request is None:
        return None
    message = flow.request.message
    params = message.params if isinstance(message, Request) else None
    return params.get("arguments") if isinstance(params, dict) else None


def arguments_summary(flow: Flow, width: int = 60) -> str:
    """``name=value, …`` of a tool call's arguments, values shortened, at most ``width``
    characters (a ``…`` says it was cut)."""
    arguments = arguments_of(flow)
    if not isinstance(arguments, dict):
        return "" if arguments is None else _short(arguments, width)
    text = ", ".join(f"{key}={_short(value, 24)}" for key, value in arguments.items())
    return text if len(text) <= width else text[: width - 1] + "…"


def _short(value: Any, width: int) -> str:
    text = json_text(value)
    return text if len(text) <= width else text[: width - 1] + "…"


_MOVED_TO_TWO_LAYERS = frozenset(
    {"ToolCall", "TwoLayerBuilder", "TwoLayers", "read_tool_calls", "read_two_layers"}
)


def __getattr__(name: str) -> Any:
    """The recording read whole (`read_two_layers`, `read_tool_calls`, `ToolCall`) lives in
    two_layers.py now; code that imports it from here, as docs/mcp.md once said, still works."""
    if name in _MOVED_TO_TWO_LAYERS:
        from . import two_layers

        return getattr(two_layers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
