"""The TUI's keys that act on the view: find (`n`/`N`), mark, fold a tool call's GOLEM flows,
expand long strings, and the statistics, connections and help screens."""

from __future__ import annotations

import bisect

from golem_core.profiles import Profile

from ..terminal import safe_text
from .app_mixin import AppMixin
from .model import SessionModel
from .screens.connections import ConnectionsScreen
from .screens.help import HelpScreen
from .screens.stats import StatsScreen
from .skimmed import skimmed_note, skims
from .widgets.detail import FlowDetail
from .widgets.flows_table import FlowsTable

__all__ = ["ViewActions"]


class ViewActions(AppMixin):
    """Mixed into `GolemProxyApp`, which sets ``model``, ``table``, ``detail``, ``profile``
    and ``find_text``."""

    model: SessionModel
    table: FlowsTable
    detail: FlowDetail
    profile: Profile
    find_text: str

    def action_focus_find(self) -> None:  # pragma: no cover - PaneActions defines it
        raise NotImplementedError

    def _show_selected(self) -> None:  # pragma: no cover - PaneActions defines it
        raise NotImplementedError

    def _show_status(self) -> None:  # pragma: no cover - the app defines it
        raise NotImplementedError

    def action_find(self, forward: bool) -> None:
        if not self.find_text:
            self.action_focus_find()
            return
        position = self.model.find(self.find_text, self.table.cursor, forward)
        if position is None:
            found = safe_text(repr(self.find_text))
            flows = self.model.flows  # those find read, as they are now
            skimmed = sum(skims(flows[i], self.find_text) for i in self.model.view)
            said = f" ({skimmed_note(skimmed)})" if skimmed else ""
            self.notify(f"No flow contains {found}{said}", severity="warning", markup=False)
            return
        self.table.select_position(position)

    def action_mark(self) -> None:
        index = self.table.selected
        if index is None:
            return
        self.model.toggle_mark(index)
        self.table.view_changed()
        self._show_selected()
        self._show_status()

    def action_fold(self) -> None:
        index = self.table.selected
        if index is None:
            return
        folded = self.model.toggle_fold(index)
        if folded is None:
            self.notify("o folds the GOLEM flows of a tool call: select an MCP tool call")
            return
        self.table.cursor = bisect.bisect_left(self.model.view, index)
        self.table.view_changed()
        self._show_selected()
        self._show_status()
        hidden = len(self.model.caused_by(self.model.flows[index]))
        self.notify(f"{hidden} GOLEM flow(s) folded" if folded else "GOLEM flows shown")

    def action_expand(self) -> None:
        expanded = self.detail.toggle_strings()
        self.notify("Long strings expanded" if expanded else "Long strings shortened")

    def action_stats(self) -> None:
        # A fold changes only the table: the statistics hold the flows folded away too.
        flows = [self.model.flows[i] for i in self.model.selected()]
        scope = (
            f"the flows matching {self.model.filter_text!r}"
            if self.model.filter_text
            else "all flows"
        )
        bound = self.model.flow_bound
        if bound is not None and bound.let_go:
            scope += f" kept; {bound.note()}"
        self.push_screen(StatsScreen(flows, self.profile, scope))

    def action_connections(self) -> None:
        self.push_screen(ConnectionsScreen(self.model.tracker.connections.values()))

    def action_help(self) -> None:
        self.push_screen(HelpScreen())
