"""The question a live TUI asks before `q` stops the proxy it runs."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

__all__ = ["ConfirmQuit"]


class ConfirmQuit(ModalScreen[bool]):
    """Dismisses with True to stop and quit, False to keep running."""

    CSS_PATH = "confirm.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter,q", "answer(True)", "Stop and quit"),
        Binding("n,escape", "answer(False)", "Keep running"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Stop the proxy and quit?", style="bold"))
            yield Static(
                Text(
                    "Live connections get a moment to finish and the recording is flushed; "
                    "clients can no longer connect."
                )
            )
            yield Static(Text("y / enter: stop and quit    n / escape: keep running", style="dim"))

    def action_answer(self, stop: bool) -> None:
        self.dismiss(stop)
