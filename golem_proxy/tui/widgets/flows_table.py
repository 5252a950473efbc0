"""The flows table: one row per flow in the model's view, drawn with Textual's Line API.

Why a `ScrollView` and not `DataTable`: the table must stay smooth at 100,000 flows with rows
arriving live. A Line API widget renders only the rows on screen, straight from the model's
list, so a row costs nothing until it is visible; a batch of new flows is one virtual-size
change; an answered pending request is simply drawn again from its (mutated) `Flow`.
`DataTable` keeps its own copy of every cell: measured with bench/bench_tui.py, filling one
with 100,000 rows took 74 s before its first paint (and ~250 ms per page down under the
pilot), while this widget shows the first rows of the same recording in under a second;
updating a pending row in a DataTable would also mean a keyed cell lookup and copy.

Follow mode keeps the cursor on the newest flow; moving the cursor up or scrolling up
pauses it, `f` or End resumes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...analysis.flows import Flow
from ...status_tone import Tone
from ...terminal import format_latency, format_size, safe_text
from ..model import SessionModel
from ..render import fmt_time
from .columns import COLUMNS, MAX_METHOD_WIDTH, fit_columns

__all__ = ["FlowsTable", "natural_widths", "row_cells"]

FIT_ROWS = 500
"""Below this many flows in view the table is no taller than its rows (taller than a screen:
the limit only keeps the relayouts few)."""


def row_cells(flow: Flow, model: SessionModel) -> tuple[str, ...]:
    """The text of each column of `COLUMNS` for ``flow``, made safe to show."""
    marker = ("●" if flow.marked else " ") + ("▲" if flow.has_violation else " ")
    return (
        marker,
        str(flow.number),
        fmt_time(flow.t),
        safe_text(flow.route),
        str(flow.conn),
        model.label(flow),
        model.status(flow),
        format_latency(flow.latency, compact=True) if flow.latency is not None else "",
        format_size(flow.request_size, compact=True) if flow.request_size is not None else "",
        format_size(flow.response_size, compact=True) if flow.response_size is not None else "",
    )


def natural_widths(model: SessionModel) -> dict[str, int]:
    """The width each column asks for, in terminal cells: its title or its widest value so
    far."""
    last = model.flows[model.view[-1]] if model.view else None
    widths = model.widths
    return {
        "mark": 2,
        "number": len(str(len(model.flows))),
        "time": max(len(fmt_time(last.t)) if last is not None else 0, 4),
        "route": max(max((cell_len(route) for route in widths.routes), default=0), 5),
        "conn": max(len(str(widths.largest_conn)), 4),
        "method": min(max(widths.method, 12), MAX_METHOD_WIDTH),
        "status": max(widths.status, 6),
        "latency": 7,
        "req": 5,
        "resp": 5,
    }


def _fit(text: str, width: int, right: bool, keep_end: bool = False) -> str:
    """``text`` in exactly ``width`` terminal cells: padded, or cut with an ellipsis at its
    end (with ``keep_end``, in its middle: its start and its end kept). Cells, not
    characters: a wide character (CJK) takes two, and a column measured in characters would
    push the rest of its row out of line."""
    size = cell_len(text)
    if size > width:
        if width <= 1:
            return set_cell_size(text, width)
        if not keep_end:
            # set_cell_size cuts by cells (a wide character it would split becomes a space).
            return set_cell_size(text, width - 1) + "…"
        head = (width - 1) // 2  # the end gets the larger half: alike statuses differ there
        text = _cells_from(text, head) + "…" + _cells_from(text[::-1], width - 1 - head)[::-1]
        size = cell_len(text)
    padding = " " * (width - size)
    return padding + text if right else text + padding


def _cells_from(text: str, cells: int) -> str:
    """The longest start of ``text`` that takes at most ``cells`` terminal cells."""
    taken = 0
    for end, character in enumerate(text):
        taken += cell_len(character)
        if taken > cells:
            return text[:end]
    return text


class FlowsTable(ScrollView, can_focus=True):
    """Reads ``model.view`` (set by the app) and posts `CursorMoved` and `FollowChanged`."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "flows-table--header",
        "flows-table--cursor",
        "flows-table--violation",
        "flows-table--marked",
        *(tone.component for tone in Tone if tone is not Tone.OK),
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "follow", "Follow", show=False),
    ]

    follow: reactive[bool] = reactive(True, repaint=False, init=False)
    """Keep the cursor on the newest flow. Moving up, scrolling up or clicking a row pauses
    it; every change is announced with `FollowChanged`."""

    @dataclass
    class CursorMoved(Message):
        """The cursor is on another flow; ``index`` into ``model.flows`` (None: no rows)."""

        index: Optional[int]

    @dataclass
    class FollowChanged(Message):
        follow: bool

    def __init__(self, model: SessionModel, *, id: Optional[str] = None) -> None:
        super().__init__(id=id)
        self.model = model
        self.cursor = 0
        self._shown: Optional[int] = None
        self._widths: list[int] = []
        self._fit: Optional[int] = None
        # Resolved styles, reused by every line of every frame (looking them up per line
        # dominated the cost of drawing a page); dropped when the CSS or theme changes.
        self._styles: dict[str, Style] = {}

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            base = self.rich_style
            style = base if name == "base" else base + self.get_component_rich_style(name)
            self._styles[name] = style
        return style

    def view_changed(self) -> None:
        """The model's view grew, shrank or was replaced: resize, follow, redraw."""
        count = len(self.model.view)
        self.virtual_size = Size(self.scrollable_content_region.width, count + 1)
        # A short session takes only the lines it needs; the detail pane gets the rest.
        fit = count + 1 if count < FIT_ROWS else None
        if self._fit != fit:
            self._fit = fit
            self.styles.max_height = fit
        if self.follow:
            self._move_to(count - 1)
        else:
            self._move_to(min(self.cursor, count - 1))
        # Scrolling is clamped to the size known now; a new virtual size or the first layout
        # may not be applied yet, so the cursor is brought into view again after the refresh.
        self.call_after_refresh(self._scroll_to_cursor)
        self.refresh()

    @property
    def selected(self) -> Optional[int]:
        """Index into ``model.flows`` of the flow under the cursor."""
        view = self.model.view
        return view[self.cursor] if 0 <= self.cursor < len(view) else None

    def select_position(self, position: int) -> None:
        """Put the cursor on view ``position`` (pausing follow unless it is the last)."""
        self.follow = position >= len(self.model.view) - 1 and self.follow
        self._move_to(position)

    def action_cursor(self, delta: int) -> None:
        if delta < 0:
            self.follow = False
        self._move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(self.scrollable_content_region.height - 2, 1))

    def action_first(self) -> None:
        self.follow = False
        self._move_to(0)

    def action_follow(self) -> None:
        self.follow = True
        self._move_to(len(self.model.view) - 1)

    def _on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.follow = False

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return
        row = int(self.scroll_y) + offset.y - 1
        if row < len(self.model.view):
            self.follow = False
            self._move_to(row)

    def watch_follow(self, follow: bool) -> None:
        self.post_message(self.FollowChanged(follow))

    def _move_to(self, position: int) -> None:
        count = len(self.model.view)
        self.cursor = max(0, min(position, count - 1))
        self._scroll_to_cursor()
        self.refresh()
        if self.selected != self._shown:
            self._shown = self.selected
            self.post_message(self.CursorMoved(self._shown))

    def _scroll_to_cursor(self) -> None:
        visible = max(self.scrollable_content_region.height - 1, 1)
        top = int(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + visible:
            self.scroll_to(y=self.cursor - visible + 1, animate=False, immediate=True)

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, len(self.model.view) + 1)
        self._scroll_to_cursor()
        self.call_after_refresh(self._scroll_to_cursor)

    def column_widths(self) -> list[int]:
        """The width of each of `COLUMNS` at the table's current width (0: hidden)."""
        width = self.scrollable_content_region.width
        fitted = fit_columns(natural_widths(self.model), width)
        return [fitted[column.key] for column in COLUMNS]

    def render_lines(self, crop: Region) -> list[Strip]:
        # Columns are fitted once per paint, not once per line.
        self._widths = self.column_widths()
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        widths = self._widths or self.column_widths()
        base = self._style("base")
        if y == 0:
            style = self._style("flows-table--header")
            text = " ".join(
                _fit(column.title, w, column.right) for column, w in zip(COLUMNS, widths) if w
            )
            return Strip([Segment(text, style)]).adjust_cell_length(width, style)
        row = int(self.scroll_y) + y - 1
        view = self.model.view
        if row >= len(view):
            return Strip.blank(width, base)
        flow = self.model.flows[view[row]]
        return self._row_strip(flow, widths, width, base, row == self.cursor)

    def _row_strip(
        self, flow: Flow, widths: list[int], width: int, base: Style, is_cursor: bool
    ) -> Strip:
        tone = flow.tone
        key = ("m" if flow.marked else "") + ("c" if is_cursor else "") + tone.value
        style = self._styles.get(key)
        if style is None:
            style = base
            if flow.marked:
                style += self._style("flows-table--marked")
            if is_cursor:
                style += self._style("flows-table--cursor")
            if tone is not Tone.OK:  # an ok row keeps the table's own colour
                style += self._style(tone.component)
            self._styles[key] = style
        marker_style = style + self._style("flows-table--violation")
        cells = row_cells(flow, self.model)
        segments = []
        for index, (text, column, cell_width) in enumerate(zip(cells, COLUMNS, widths)):
            if cell_width:
                cell = _fit(text, cell_width, column.right, column.keeps_end) + " "
                segments.append(Segment(cell, marker_style if index == 0 else style))
        return Strip(segments).adjust_cell_length(width, style)
