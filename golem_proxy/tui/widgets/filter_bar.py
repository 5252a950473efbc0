"""The bar above the table: a filter expression (`/`) and a search text (`ctrl+f`, then
`n`/`N`). It only reports what was typed; the app applies it and hands back any error, shown
whole on lines of its own under the boxes (a refusal names every error code a registry has:
longer than any line)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Label, Static

__all__ = ["FilterBar"]


class FilterBar(Vertical):
    """One line of boxes, and under it the filter's error while there is one. Styled, like
    every widget here, in ``tui/app.tcss``."""

    @dataclass
    class FilterSubmitted(Message):
        text: str

    @dataclass
    class FindSubmitted(Message):
        text: str

    def __init__(self, filter_text: str = "") -> None:
        super().__init__()
        self.filter_text = filter_text

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Label("filter")
            placeholder = "/  ~e  ~m scene.  ? for more"
            yield Input(value=self.filter_text, placeholder=placeholder, id="filter")
            yield Label("find")
            yield Input(placeholder="ctrl+f, then n N", id="find")
        error = Static("", id="filter-error")
        error.display = False
        yield error

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "filter":
            self.post_message(self.FilterSubmitted(event.value))
        else:
            self.post_message(self.FindSubmitted(event.value))

    def give_up_edits(self, applied_filter: str, applied_find: str) -> None:
        """Put the texts in force back in both boxes (Escape gives up what was typed and not
        submitted): the bar never shows a filter other than the one the table applies."""
        self.filter_text = applied_filter
        self.query_one("#filter", Input).value = applied_filter
        self.query_one("#find", Input).value = applied_find
        self.show_error(None)

    def show_error(self, message: Optional[str]) -> None:
        """Show why the filter was refused (None clears it)."""
        error = self.query_one("#filter-error", Static)
        error.update(Text(message or ""))
        error.display = bool(message)

    @property
    def error(self) -> str:
        content = self.query_one("#filter-error", Static).content
        return str(content)
