"""The `i` prompt: the intercept filter of a live session (empty: hold nothing)."""

from __future__ import annotations

from typing import ClassVar, Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ...analysis.filters import FilterError, parse_filter
from .error_line import show_refusal

__all__ = ["InterceptPrompt"]


class InterceptPrompt(ModalScreen[Optional[str]]):
    """Dismisses with the filter typed ("" to stop intercepting), or None when cancelled. A
    filter that does not parse is not accepted: the error shows and the prompt stays."""

    CSS_PATH = "intercept_prompt.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, current: str) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(
                Text(
                    "Hold the frames this filter selects (~q requests, ~s responses; "
                    "empty: hold nothing):"
                )
            )
            yield Input(value=self.current, placeholder=r"~q & ~m ^scene\.", id="intercept")
            yield Static("", id="intercept-error")
            yield Static(Text("enter: set   escape: cancel", style="dim"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if text:
            try:
                parse_filter(text)
            except FilterError as exc:
                show_refusal(self.query_one("#intercept-error", Static), "bad filter", exc)
                return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)
