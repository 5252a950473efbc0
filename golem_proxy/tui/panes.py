"""The TUI's two panes, the flows table and the detail of the selected flow: the keys that move
the focus between them and the filter and find boxes (``/``, ``ctrl+f``, ``escape``,
``enter``, ``tab``), the layout that sets the detail beside the table on a wide terminal, and
the detail kept on the selected flow: its summary and small payloads at once, what costs
more (a large payload, an image) at the pace's interval (pace.py).

Apart from app.py, as the other keys are (copying, saving, debugging, the view's), because
what the panes show and where the focus goes is a job of its own: nothing here changes the
model.
"""

from __future__ import annotations

import time
from typing import Optional

from textual import events
from textual.containers import Container
from textual.timer import Timer
from textual.widgets import Input

from golem_core.profiles import Profile

from .app_mixin import AppMixin
from .model import SessionModel
from .pace import StreamPace
from .resent_rows import ResentRows
from .widgets.detail import FlowDetail
from .widgets.filter_bar import FilterBar
from .widgets.flows_table import FlowsTable

__all__ = ["WIDE", "PaneActions"]

WIDE = 140
"""From this many columns on, the detail pane sits beside the table instead of under it."""


class PaneActions(AppMixin):
    """Mixed into `GolemProxyApp` (first, so that these win over the other mixins' stubs),
    which sets ``model``, ``profile``, ``pace``, ``filter_bar``, ``table``, ``detail``,
    ``panes``, ``find_text``, ``finished_reason`` and ``resent_rows``."""

    model: SessionModel
    resent_rows: ResentRows
    profile: Profile
    pace: StreamPace
    filter_bar: FilterBar
    table: FlowsTable
    detail: FlowDetail
    panes: Container
    find_text: str
    finished_reason: Optional[str]
    _detail_shown_at = 0.0
    _detail_timer: Optional[Timer] = None
    _detail_due = 0.0
    """When the pending detail redraw is due (monotonic seconds)."""

    def on_resize(self, event: events.Resize) -> None:
        self.panes.set_class(event.size.width >= WIDE, "-wide")

    def _show_selected(self, whole: bool = True) -> None:
        """Show the selected flow in the detail pane; without ``whole``, only what is cheap
        to draw (`FlowDetail.show`)."""
        if whole and self._detail_timer is not None:
            self._detail_timer.stop()
            self._detail_timer = None
        if not self.detail.is_attached:
            return
        if whole:
            self._detail_shown_at = time.monotonic()
        index = self.table.selected
        flow = self.model.flows[index] if index is not None else None
        under = self.model.caused_by(flow) if flow is not None else []
        shared = self.model.shared_with(flow) if flow is not None else []
        bound = self.model.flow_bound
        let_go = self.model.caused_let_go(flow) if flow is not None else 0
        under_let_go = bound.under_note(let_go) if bound is not None else ""
        calls = self.model.call_rows(flow) if flow is not None else {}
        self.detail.show(
            flow,
            self.profile,
            under,
            under_let_go,
            self.finished_reason or "",
            calls,
            self.model.loading,
            shared,
            self.resent_rows.note(flow.number) if flow is not None else "",
            self.model.answer_row(flow) if flow is not None else None,
            whole,
        )

    def on_flows_table_cursor_moved(self, message: FlowsTable.CursorMoved) -> None:
        index = message.index
        if index is not None and self.detail.flow is self.model.flows[index]:
            # Already shown (the drain that added the flow drew it; what it left loading, a
            # timer draws): drawing it again would rebuild its tree and collapse what the
            # user expanded.
            return
        self._show_selected_soon()

    def _show_selected_soon(self) -> None:
        # The first change is drawn whole at once; within the pace's interval after it, what
        # is cheap is drawn at once and the rest (a large payload read back or decoded, an
        # image) is folded into one redraw of whatever is selected then, so holding PgDn
        # stays smooth and a stream of captures followed by the cursor decodes one a second.
        # Never later: a pane left on the previous row until then was read as the new one's.
        now = time.monotonic()
        due = self._detail_shown_at + self.pace.detail_interval(self.table.follow)
        if due <= now:
            self._show_selected()
            return
        self._show_selected(whole=False)
        if self.detail.complete:
            if self._detail_timer is not None:  # nothing left for it to draw
                self._detail_timer.stop()
                self._detail_timer = None
            return
        if self._detail_timer is not None:
            if due >= self._detail_due:
                return
            self._detail_timer.stop()  # the cursor left the stream: sooner
        self._detail_due = due
        self._detail_timer = self.set_timer(due - now, self._show_selected)

    def action_focus_filter(self) -> None:
        self.filter_bar.query_one("#filter", Input).focus()

    def action_focus_find(self) -> None:
        self.filter_bar.query_one("#find", Input).focus()

    def action_focus_table(self) -> None:
        self.filter_bar.give_up_edits(self.model.filter_text, self.find_text)
        self.screen.remove_class("detail-open")
        self.table.focus()

    def action_open_detail(self) -> None:
        """The detail pane takes the table's place (escape gives it back)."""
        self.screen.add_class("detail-open")
        self.detail.focus()

    def action_switch_pane(self) -> None:
        focused = self.focused
        in_detail = focused is not None and (
            focused is self.detail or self.detail in focused.ancestors
        )
        if in_detail:
            self.action_focus_table()
        else:
            self.detail.focus()
