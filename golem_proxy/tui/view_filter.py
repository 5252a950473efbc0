"""The TUI's view of the session (model.py's ``view``): the flows the filter selects, less the
GOLEM flows folded away under their tool call's row, as indexes into the flows; kept up to date
as the filter, a fold or a mark changes, and searched (`find`)."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING, Callable, Optional

from golem_core.profiles import Profile

from ..analysis.filters import Filter, parse_filter
from ..analysis.flows import Flow
from ..analysis.tool_calls import CallKey, call_key, owner_key
from .flow_search import find_in_view
from .skimmed import SkimmedBodies

__all__ = ["FilteredView"]


class FilteredView:
    """Mixed into `SessionModel`, whose flows and view these read and change."""

    view: array[int]
    filter_text: str
    _filter: Optional[Filter]
    folded: set[CallKey]
    skimmed: SkimmedBodies
    profile_for: Callable[[str], Profile]

    if TYPE_CHECKING:

        @property
        def flows(self) -> list[Flow]: ...

    def _matches(self, flow: Flow) -> bool:
        return self._selects(flow) and (not self.folded or owner_key(flow) not in self.folded)

    def _selects(self, flow: Flow) -> bool:
        # Each flow with its route's profile, as `show --filter` reads it: ``~layer mcp``
        # and a body written as that route's peers write it.
        return self._filter is None or self._filter.matches(flow, self.profile_for(flow.route))

    def selected(self) -> Sequence[int]:
        """The indexes of the flows the filter selects, ascending: ``view`` and the flows
        folded away under a tool call's row. A fold changes only the display: the
        statistics and a view written out cover these."""
        if not self.folded:
            return self.view
        return array("i", (i for i, flow in enumerate(self.flows) if self._selects(flow)))

    def toggle_fold(self, index: int) -> Optional[bool]:
        """Fold the GOLEM flows of the tool call at ``index`` away under its row, or open
        them again; returns whether it is now folded (None: not a tool call)."""
        key = call_key(self.flows[index])
        if key is None:
            return None
        folded = key not in self.folded
        if folded:
            self.folded.add(key)
        else:
            self.folded.discard(key)
        self.view = array("i", (i for i, flow in enumerate(self.flows) if self._matches(flow)))
        return folded

    def _refilter(self, index: int) -> None:
        """Re-check one old flow (a pending request answered, a mark toggled)."""
        position = bisect.bisect_left(self.view, index)
        shown = position < len(self.view) and self.view[position] == index
        wanted = self._matches(self.flows[index])
        if wanted and not shown:
            self.view.insert(position, index)
        elif shown and not wanted:
            del self.view[position]

    def set_filter(self, text: str) -> None:
        """Show only the flows matching ``text`` (all of them for an empty text).

        Raises ValueError (FilterError) for a bad expression; the view is then unchanged."""
        text = text.strip()
        new_filter = parse_filter(text) if text else None
        self._filter = new_filter
        self.filter_text = text
        self.skimmed.recount(new_filter, self.profile_for, self.flows)
        self.view = array("i", (i for i, flow in enumerate(self.flows) if self._matches(flow)))

    def toggle_mark(self, index: int) -> bool:
        """Mark or unmark the flow at ``index``; returns its new state."""
        flow = self.flows[index]
        flow.marked = not flow.marked
        self._refilter(index)
        return flow.marked

    def find(self, text: str, start: int, forward: bool = True) -> Optional[int]:
        """The view position of the next flow after ``start`` (wrapping around) whose method
        or request/response bytes contain ``text``, case-insensitively; None when none does
        (`flow_search.find_in_view`)."""
        return find_in_view(self.flows, self.view, text, start, forward, self.profile_for)
