"""What the live log says on a ``tools/call`` line of `golem-proxy mcp` about the proxy's own
steps (``--fault``, ``--intercept``) on the GOLEM exchanges under that call, as `show` says
them on the call's row: placed by the flow tracker, the one place steps find their rows
(`FlowTracker`, analysis/fault_rows.py), which the log feeds every event of a session that
has a tool layer. The log numbers no rows, and its numbers could differ from the
recording's (events it skipped when behind, a restarted observing process): each GOLEM
exchange is named by its method instead, ``scene.create_layer: --fault error``."""

from __future__ import annotations

from collections import Counter, OrderedDict
from typing import Optional

from golem_core.profiles import Profile

from ..analysis.flows import Flow, FlowTracker
from ..analysis.proxy_notes import proxy_words
from ..events import Event, ExchangeCompleted, FaultInjected, InterceptStep

__all__ = ["GROUPS_SAID", "METHODS_KEPT", "StepsUnderCalls"]

METHODS_KEPT = 1024
"""GOLEM rows the proxy acted on whose method is kept to name them (the oldest let go)."""
GROUPS_SAID = 4
"""Kinds of step (a method and what was done to it) a tools/call line names at most; each
is said once with its count, the rest counted."""


class StepsUnderCalls:
    """Follows a session's rows (a `FlowTracker` handing each on once settled, so that what
    it holds is what is in flight) to say, on a tool call's line, what the proxy did under it
    before it returned."""

    def __init__(self, profile: Profile) -> None:
        self._rows = FlowTracker(profile, keep=False)
        self._methods: OrderedDict[int, str] = OrderedDict()
        self._call: Optional[Flow] = None

    def apply(self, event: Event) -> None:
        """Fold ``event`` in (every event, before its line is made)."""
        flow = self._rows.apply(event)
        self._rows.take_settled(flow)
        if isinstance(event, (FaultInjected, InterceptStep)) and flow is not None:
            self._methods[flow.number] = flow.method or "?"
            if len(self._methods) > METHODS_KEPT:
                self._methods.popitem(last=False)
        self._call = flow if isinstance(event, ExchangeCompleted) else None

    def words(self) -> str:
        """Of the exchange just folded in, a tool call: what the proxy did to the GOLEM
        exchanges under it (``scene.create_layer: --fault error``, joined with ``; ``);
        empty when it did nothing or the exchange is no tool call's."""
        call = self._call
        if call is None or not call.proxy_under:
            return ""
        # A tool making thousands of GOLEM calls under one rule: said once, counted.
        grouped: Counter[tuple[str, str]] = Counter()
        for row, steps in call.proxy_under:
            words = proxy_words(steps)
            if words:
                grouped[(self._methods.get(row, "?"), words)] += 1
        said = [
            f"{method}: {words}" + (f" ({count:,} times)" if count > 1 else "")
            for (method, words), count in list(grouped.items())[:GROUPS_SAID]
        ]
        if len(grouped) > GROUPS_SAID:
            said.append(f"… {len(grouped) - GROUPS_SAID:,} more (show lists them)")
        return "; ".join(said)
