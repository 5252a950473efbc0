"""The `c` screen: every connection per route, open or closed, with bytes, frames and the
close reason."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from ...analysis.flows import ConnectionInfo
from ...terminal import format_size, safe_text
from ..render import fmt_time

__all__ = ["ConnectionsScreen"]


class ConnectionsScreen(Screen[None]):
    CSS_PATH = "connections.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,c,q", "app.pop_screen", "Back"),
    ]

    def __init__(self, connections: Iterable[ConnectionInfo]) -> None:
        super().__init__()
        self.connections = sorted(connections, key=lambda info: (info.route, info.conn))

    def compose(self) -> ComposeResult:
        open_count = sum(info.is_open for info in self.connections)
        yield Static(
            Text(f"Connections: {len(self.connections)} ({open_count} open)"),
            id="connections-title",
        )
        yield DataTable(cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table: DataTable[Text] = self.query_one(DataTable)
        for title in ("route", "conn", "state", "client", "upstream", "opened", "closed"):
            table.add_column(title)
        for title in ("bytes →", "bytes ←", "frames →", "frames ←", "close reason"):
            table.add_column(title)
        for info in self.connections:
            if info.is_open:
                state = Text("open", style="green")
            else:
                state = Text(
                    "reset" if info.abnormal else "closed", style="red" if info.abnormal else ""
                )
            table.add_row(
                Text(safe_text(info.route)),
                Text(str(info.conn), justify="right"),
                state,
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
