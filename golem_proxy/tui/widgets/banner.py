"""The lines above the table that a live session needs in view: where the proxy really
listens, the client environment that points at it, and an error that stopped the source."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from rich.text import Text
from textual.widgets import Static

from ...terminal import safe_text

__all__ = ["Banner"]


class Banner(Static):
    """Hidden while there is nothing to say (hidden from the start by its CSS, so the first
    layout already gives the table its height); styled in ``tui/app.tcss``."""

    def __init__(self, *, id: Optional[str] = None) -> None:
        super().__init__(id=id)
        self._notes: tuple[str, ...] = ()
        self._error = ""
        self._let_go = ""

    def show_notes(self, notes: Sequence[str]) -> None:
        """Show these lines (bound addresses, the client environment)."""
        self._notes = tuple(notes)
        self._redraw()

    def show_let_go(self, note: str) -> None:
        """Say, under the notes, how many older flows the TUI let go from memory
        (`golem_proxy.tui.flow_bound`) and where they are."""
        self._let_go = note
        self._redraw()

    def show_error(self, error: str) -> None:
        """Show why the source stopped, in red, under the notes."""
        self._error = error
        self._redraw()

    def _redraw(self) -> None:
        text = Text()
        for note in self._notes:
            text.append(safe_text(note) + "\n")
        if self._let_go:
            text.append(safe_text(self._let_go) + "\n", style="yellow")
        if self._error:
            text.append("✖ " + safe_text(self._error), style="bold red")
        text.rstrip()
        self.update(text)
        self.set_class(bool(self._notes or self._error or self._let_go), "-shown")

    @property
    def text(self) -> str:
        return str(self.content)
