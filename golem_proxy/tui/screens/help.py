"""The `?` screen: every key, grouped."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

__all__ = ["KEYS", "HelpScreen"]

KEYS: tuple[tuple[str, str], ...] = (
    ("↑ ↓ j k, PgUp PgDn, Home", "move in the flows table (moving up pauses follow)"),
    ("f, End", "follow: keep the newest flow selected"),
    ("tab", "switch between the table and the detail pane"),
    ("/", "filter (e.g. ~e, ~v, ~pending, ~marked, ~m scene., ! ~m ping); enter applies"),
    ("ctrl+f, n, N", "find text in methods and bodies; next / previous match"),
    ("e", "expand or shorten long strings in the detail pane"),
    ("m", "mark or unmark the selected flow (~marked filters them)"),
    ("y", "copy the selected request as JSON (clipboard and a file)"),
    ("w", "write the flows in view to a new recording"),
    ("s", "statistics: per-method counts, errors, latency percentiles"),
    ("c", "connections: open and closed, bytes and frames"),
    ("?", "this help"),
    ("escape", "back to the table / close a screen"),
    ("q", "quit"),
)


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "help.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "app.pop_screen", "Close"),
    ]

    def compose(self) -> ComposeResult:
        table = Table(title="golem-proxy TUI — keys", box=None, expand=True)
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("action")
        for key, action in KEYS:
            table.add_row(key, action)
        with VerticalScroll():
            yield Static(table)
