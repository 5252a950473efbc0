"""The `?` screen: every key, and the filter expressions most often typed.

`KEYS` names the Textual keys behind each line, so a test checks that the help and the
bindings agree; every example in `FILTERS` is checked to parse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

__all__ = ["FILTERS", "KEYS", "HelpScreen", "Key"]


@dataclass(frozen=True)
class Key:
    keys: tuple[str, ...]
    """The Textual key names bound to the action."""
    label: str
    action: str


KEYS: tuple[Key, ...] = (
    Key(("up", "down", "k", "j"), "↑ ↓ j k", "move in the flows table (up pauses follow)"),
    Key(("pageup", "pagedown", "home"), "PgUp PgDn Home", "a page up or down; the first flow"),
    Key(("f", "end"), "f End", "follow: keep the newest flow selected"),
    Key(("enter",), "enter", "open the selected flow's detail full size (escape closes it)"),
    Key(("tab", "shift+tab"), "tab", "switch between the table and the detail pane"),
    Key(("slash",), "/", "filter the flows (examples below); enter applies, empty shows all"),
    Key(("ctrl+f", "n", "N"), "ctrl+f n N", "find text in methods and bodies; next, previous"),
    Key(("e",), "e", "expand or shorten long strings in the detail pane"),
    Key(("m",), "m", "mark or unmark the selected flow"),
    Key(("o",), "o", "fold or open the GOLEM flows under an MCP tool call (golem-proxy mcp)"),
    Key(("y",), "y", "copy the selected request as JSON (clipboard and a file)"),
    Key(("Y",), "Y", "copy the golem-proxy call command that sends the request again"),
    Key(("w",), "w", "write the flows in view to a new recording"),
    Key(("s",), "s", "statistics: per-method counts, errors, latency percentiles"),
    Key(("c",), "c", "connections: open and closed, bytes and frames"),
    Key(("i",), "i", "live proxy: hold the frames a filter selects (empty: hold nothing)"),
    Key(
        ("r",),
        "r",
        "send the selected request again, fresh id (live: it comes as the newest row, and "
        "each row's detail names the other; or tui FILE --target HOST:PORT)",
    ),
    Key(("E",), "E", "edit the selected request ($EDITOR when set), then send it again"),
    Key(("D",), "D", "the last request sent again: its answer against the recorded one"),
    Key(
        (),
        "a A e d n",
        "held frames (their panel takes the focus): accept, all, edit ($EDITOR when set), "
        "drop, answer",
    ),
    Key(("question_mark",), "?", "this help"),
    Key(("escape",), "escape", "back to the table; close a screen"),
    Key(("q",), "q", "quit (a live proxy asks first)"),
    Key(("ctrl+c",), "ctrl+c", "quit now; a live proxy still drains and flushes its recording"),
)

FILTERS: tuple[tuple[str, str], ...] = (
    ("~m scene.", "method matches a regular expression"),
    ("~e", "errors, malformed frames, unanswered requests"),
    ("~c INVALID_PARAMS", "an error code"),
    ("~slow 100", "latency of at least 100 ms"),
    ("~violation", "a contract violation (~rule REGEX: by rule id)"),
    ("~pending", "still waiting for its response"),
    ("~marked", "marked with m"),
    ("~route gh", "one route (~conn 2: one connection)"),
    ("~q & ~m create_layer", "with i: hold those requests (~s: responses)"),
    ("box", "text in the method or either body"),
    ("! ~m ping", "not; & and | combine, ( ) group"),
)


def _table(title: str, rows: tuple[tuple[str, str], ...]) -> Table:
    table = Table(title=title, title_justify="left", box=None, expand=True, show_header=False)
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(ratio=1)
    for left, right in rows:
        table.add_row(Text(left), Text(right))
    return table


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "help.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "app.pop_screen", "Close"),
    ]

    def compose(self) -> ComposeResult:
        keys = _table("Keys", tuple((key.label, key.action) for key in KEYS))
        filters = _table("Filters (docs/filters.md)", FILTERS)
        with VerticalScroll():
            yield Static(Group(keys, Text(), filters))
