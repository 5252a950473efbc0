"""Which recorded GOLEM answers the stand-in may hand out while one MCP tool call is played
again (`mcp-verify`): the recording attributes each GOLEM exchange to the tool call that
caused it (`FrameSeen.tool_calls`, read by `analysis.two_layers`), and a build's request
during call #7 is that call's, never the one recorded under #9 that happens to have the same
method and params. Taking #9's answer would make #7 read as a match and #9 differ: the call
that changed would never be named.

While a call is played, the engine (`ReplayEngine.scope`) answers from the exchanges recorded
under that call first, then from those recorded outside any tool call (a connection's opening
``ping`` the server sent on its own, or one sent while recorded calls overlapped, which is
no one call's); never from another call's. What it cannot answer so is
a miss of that call. Outside every tool call (``initialize``, ``tools/list``) only the
exchanges of no call are served. A recording made before the attribution existed has every
exchange outside any call: it is served as before, first come first served.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from ..analysis.two_layers import TwoLayers
from .index import ExchangeTrace, RecordedExchange

__all__ = ["CallRef", "CallScope", "CallScopes", "summary_of"]

SUMMARY_CHARS = 120
"""How much of a call's arguments or a request's params a miss quotes."""


def summary_of(value: Any) -> str:
    """``value`` as compact JSON, cut at `SUMMARY_CHARS` (…)."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), sort_keys=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


@dataclass(frozen=True)
class CallRef:
    """A recorded tool call, as a miss names it."""

    number: int
    """Its flow number, as `show` and the mcp-verify table number it."""
    tool: str
    arguments: Any
    index: int
    """Its request frame's index on the MCP hop (`ClientStep.index`)."""
    recorded: bool = True
    """False for a call made now that the recording does not have (the ``golem_mcp_session``
    fixture's: its test's client decides what it calls); its ``number`` and ``index`` mean
    nothing then."""

    @property
    def label(self) -> str:
        if not self.recorded:
            return f"{self.tool} (not in the recording)"
        return f"#{self.number} {self.tool}"

    def describe(self) -> str:
        """``#7 create_layer {"name": "x"}``."""
        if not self.recorded:
            return f"{self.tool} {summary_of(self.arguments)} (not in the recording)"
        return f"{self.label} {summary_of(self.arguments)}"

    def to_json(self) -> dict[str, Any]:
        number = self.number if self.recorded else None
        return {"number": number, "tool": self.tool, "arguments": self.arguments}


@dataclass(frozen=True)
class CallScope:
    """The exchanges the stand-in may serve while ``call`` is played (None: outside every
    tool call)."""

    call: Optional[CallRef]
    own: frozenset[int]
    """The numbers (`RecordedExchange.number`) of the exchanges recorded under ``call``."""
    owners: Mapping[int, CallRef]
    """Every exchange recorded under a tool call, by number: those are never another call's
    to take."""
    rows: frozenset[int] = frozenset()
    """The rows (as `show` numbers them) of every GOLEM request recorded under ``call``,
    answered or not: a request the recording holds with no answer is no exchange."""
    row_owners: Mapping[int, CallRef] = field(default_factory=dict)
    """Every such row recorded under a tool call, by row."""

    def choose(self, left: Sequence[RecordedExchange]) -> Optional[RecordedExchange]:
        """The first of ``left`` recorded under the call, else the first recorded outside any
        call, else None."""
        return next(iter(self.ordered(left)), None)

    def ordered(self, left: Sequence[RecordedExchange]) -> list[RecordedExchange]:
        """Those of ``left`` this scope may serve, the call's first, then those of no call
        (each part in its order): what the scope takes first where several would do."""
        return [e for e in left if e.number in self.own] + [
            e for e in left if e.number not in self.owners
        ]

    def holds_row(self, row: int) -> bool:
        """Whether the request recorded at ``row`` is the call's, or no call's."""
        return row in self.rows or row not in self.row_owners

    def mine(self, exchanges: Sequence[RecordedExchange]) -> list[RecordedExchange]:
        """Those of ``exchanges`` this scope may serve (the call's and no call's)."""
        return [e for e in exchanges if e.number in self.own or e.number not in self.owners]

    def recorded_under(self, exchanges: Sequence[RecordedExchange]) -> list[CallRef]:
        """The other calls ``exchanges`` were recorded under, each once, in order."""
        found: dict[int, CallRef] = {}
        for exchange in exchanges:
            call = self.owners.get(exchange.number)
            if call is not None and exchange.number not in self.own:
                found.setdefault(call.number, call)
        return list(found.values())


class CallScopes:
    """The scope of each step of an MCP script, by the step's request frame index."""

    def __init__(
        self,
        calls: Mapping[int, CallRef],
        own: Mapping[int, frozenset[int]],
        rows: Optional[Mapping[int, frozenset[int]]] = None,
    ) -> None:
        """``own``: the exchange numbers recorded under each call, by its request frame's
        index; ``rows``: the rows of every GOLEM request recorded under it, the same way."""
        self.calls = dict(calls)
        rows = rows or {}
        owners = {number: calls[index] for index, numbers in own.items() for number in numbers}
        row_owners = {row: calls[index] for index, found in rows.items() for row in found}
        self._scopes = {
            index: CallScope(
                call,
                own.get(index, frozenset()),
                owners,
                rows.get(index, frozenset()),
                row_owners,
            )
            for index, call in calls.items()
        }
        self.outside = CallScope(None, frozenset(), owners, frozenset(), row_owners)

    def unrecorded(self, call: CallRef) -> CallScope:
        """The scope of ``call``, made now and not in the recording: only the exchanges of
        no call are its to take."""
        return dataclasses.replace(self.outside, call=call)

    def for_index(self, index: Optional[int]) -> CallScope:
        """The scope of the tool call whose request frame is ``index``; the scope outside any
        call for any other step."""
        scope = self._scopes.get(index) if index is not None else None
        return scope if scope is not None else self.outside

    @classmethod
    def of(cls, layers: TwoLayers, trace: ExchangeTrace) -> CallScopes:
        """The scopes of the recording read as ``layers`` (its tool calls and the GOLEM flows
        each caused) and loaded as ``trace``: a flow's number is the row its exchange has."""
        calls: dict[int, CallRef] = {}
        rows: dict[int, int] = {}
        for call in layers.tool_calls:
            request = call.flow.request
            if request is None:
                continue
            calls[request.index] = CallRef(call.number, call.tool, call.arguments, request.index)
            for flow in call.golem:
                rows[flow.number] = request.index
        own: dict[int, set[int]] = {}
        under: dict[int, set[int]] = {}
        for number, at in rows.items():
            under.setdefault(at, set()).add(number)
        if trace.numbering is not None:
            trace.numbering.rows()  # every exchange's row, read now, before any is served
        for exchange in trace.exchanges:
            row = exchange.row
            index = rows.get(row) if row is not None else None
            if index is not None:
                own.setdefault(index, set()).add(exchange.number)
        return cls(
            calls,
            {index: frozenset(numbers) for index, numbers in own.items()},
            {index: frozenset(found) for index, found in under.items()},
        )
