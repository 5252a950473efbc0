"""The `c` screen: every connection per route, open or closed, with bytes, frames and the
close reason.

On a terminal too narrow for one line per connection (80 columns), each connection takes two
lines: client over upstream, opened over closed, each direction's bytes and frames over the
other's, and the close reason wrapped in what is left, so no column is lost off the edge.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from ...analysis.connection_counts import ConnectionInfo
from ...terminal import format_size, safe_text
from ..render import fmt_time

__all__ = ["ConnectionsScreen", "connection_cells"]

WIDE_TITLES = (
    "route",
    "conn",
    "state",
    "client",
    "upstream",
    "opened",
    "closed",
    "bytes →",
    "bytes ←",
    "frames →",
    "frames ←",
    "close reason",
)
NARROW_TITLES = (
    "route",
    "conn",
    "state",
    "client\nupstream",
    "opened\nclosed",
    "bytes →\nbytes ←",
    "frames →\nframes ←",
    "close reason",
)
PADDING = 2
"""The cells a DataTable adds around each column (one each side)."""
MIN_REASON = 12


def _state(info: ConnectionInfo) -> Text:
    if info.is_open:
        return Text("open", style="green")
    return Text("reset" if info.abnormal else "closed", style="red" if info.abnormal else "")


def connection_cells(info: ConnectionInfo) -> tuple[Text, ...]:
    """One connection's cells under `WIDE_TITLES`, made safe to show."""
    return (
        Text(safe_text(info.route)),
        Text(str(info.conn), justify="right"),
        _state(info),
        Text(safe_text(info.client)),
        Text(safe_text(info.upstream)),
        Text(fmt_time(info.opened), justify="right"),
        Text(fmt_time(info.closed) if info.closed is not None else "", justify="right"),
        Text(format_size(info.bytes_c2s), justify="right"),
        Text(format_size(info.bytes_s2c), justify="right"),
        Text(f"{info.frames_c2s:,}", justify="right"),
        Text(f"{info.frames_s2c:,}", justify="right"),
        Text(safe_text(info.reason)),
    )


def _stacked(top: Text, bottom: Text) -> Text:
    return Text("\n", justify=top.justify).join((top, bottom))


def _narrow(cells: tuple[Text, ...]) -> tuple[Text, ...]:
    """The cells of `WIDE_TITLES` folded two to a cell, under `NARROW_TITLES`."""
    route, conn, state, client, upstream, opened, closed = cells[:7]
    sent, received, frames_sent, frames_received, reason = cells[7:]
    return (
        route,
        conn,
        state,
        _stacked(client, upstream),
        _stacked(opened, closed),
        _stacked(sent, received),
        _stacked(frames_sent, frames_received),
        reason,
    )


def _widths(rows: list[tuple[Text, ...]], titles: tuple[str, ...]) -> list[int]:
    widths = [max(len(line) for line in title.split("\n")) for title in titles]
    for row in rows:
        for column, cell in enumerate(row):
            longest = max((len(line) for line in cell.plain.split("\n")), default=0)
            widths[column] = max(widths[column], longest)
    return widths


class ConnectionsScreen(Screen[None]):
    CSS_PATH = "connections.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,c,q", "app.pop_screen", "Back"),
    ]

    def __init__(self, connections: Iterable[ConnectionInfo]) -> None:
        super().__init__()
        self.connections = sorted(connections, key=lambda info: (info.route, info.conn))
        self._cells = [connection_cells(info) for info in self.connections]
        self._laid_out_for = -1

    def compose(self) -> ComposeResult:
        open_count = sum(info.is_open for info in self.connections)
        yield Static(
            Text(f"Connections: {len(self.connections)} ({open_count} open)"),
            id="connections-title",
        )
        yield DataTable(cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self._lay_out(self.app.size.width)

    def on_resize(self, event: events.Resize) -> None:
        self._lay_out(event.size.width)

    def _lay_out(self, width: int) -> None:
        """Fill the table with one line per connection when that fits ``width``, two
        otherwise (the close reason then wraps in the width left)."""
        widths = _widths(self._cells, WIDE_TITLES)
        wide = sum(widths) + PADDING * len(widths) <= width
        if self._laid_out_for == wide:
            return
        self._laid_out_for = wide
        table: DataTable[Text] = self.query_one(DataTable)
        table.clear(columns=True)
        if wide:
            table.header_height = 1
            for title in WIDE_TITLES:
                table.add_column(title)
            for cells in self._cells:
                table.add_row(*cells)
            return
        rows = [_narrow(cells) for cells in self._cells]
        widths = _widths(rows, NARROW_TITLES)
        # The scrollbar may take two columns; the reason gets what the others leave.
        used = sum(widths[:-1]) + PADDING * len(widths) + 2
        reason_width = max(width - used, MIN_REASON)
        table.header_height = 2
        for title in NARROW_TITLES[:-1]:
            table.add_column(title)
        table.add_column(NARROW_TITLES[-1], width=reason_width)
        for cells in rows:
            table.add_row(*cells, height=None)
