"""The `w` prompt: where to write the flows in view as a new recording."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

__all__ = ["SavePrompt"]


class SavePrompt(ModalScreen[str]):
    """Dismisses with the path typed (an empty string when cancelled)."""

    CSS_PATH = "save.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, flows: int, default_path: str, folded: int = 0) -> None:
        """``flows`` to write, ``folded`` of them folded away under a tool call's row."""
        super().__init__()
        self.flows = flows
        self.folded = folded
        self.default_path = default_path

    def compose(self) -> ComposeResult:
        with Vertical():
            folded = f" ({self.folded:,} of them folded)" if self.folded else ""
            flows = f"{self.flows:,} flows in view{folded}"
            yield Static(Text(f"Write the {flows} to a new recording:"))
            yield Input(value=self.default_path, id="save-path")
            yield Static(Text("enter: write   escape: cancel", style="dim"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss("")
