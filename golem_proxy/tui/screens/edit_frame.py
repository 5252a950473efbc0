"""The in-app editor (when ``$EDITOR`` is not set): a held frame (`e`), the answer to a held
request (`n`) or a recorded request to send again (`E`), as JSON in a text area, checked
before it is sent. What is sent follows `frame_editor.sent_bytes`: the original's encoding
unless the user changed the layout."""

from __future__ import annotations

from typing import ClassVar, Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea

from ...live.frame_editor import frame_text, sent_bytes
from ...terminal import safe_text
from .error_line import show_refusal

__all__ = ["EditFrame"]


class EditFrame(ModalScreen[Optional[bytes]]):
    """Dismisses with the edited JSON as bytes, or None when cancelled. Text that is not JSON
    is never sent: the error shows under the editor and the screen stays."""

    CSS_PATH = "edit_frame.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "send", "Send", priority=True),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, title: str, payload: bytes) -> None:
        super().__init__()
        self.heading = title
        self.payload = payload
        self.initial = frame_text(payload)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(safe_text(self.heading, 200), style="bold"))
            yield TextArea(self.initial, id="frame-json", soft_wrap=True, show_line_numbers=True)
            yield Static("", id="frame-error")
            yield Static(Text("ctrl+s: check and send   escape: cancel", style="dim"))

    def on_mount(self) -> None:
        self.query_one("#frame-json", TextArea).focus()

    @property
    def text(self) -> str:
        return self.query_one("#frame-json", TextArea).text

    def action_send(self) -> None:
        try:
            payload = sent_bytes(self.payload, self.initial, self.text)
        except ValueError as exc:
            show_refusal(self.query_one("#frame-error", Static), "not JSON", exc)
            return
        self.dismiss(payload)

    def action_cancel(self) -> None:
        self.dismiss(None)
