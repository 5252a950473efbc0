"""The line under a prompt that says why what was typed is refused."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ...terminal import safe_text

__all__ = ["show_refusal"]


def show_refusal(line: Static, what: str, error: Exception) -> None:
    """Show ``what: error`` in ``line`` (the error's text made safe, at most 200
    characters): the prompt stays open for the user to correct it."""
    line.update(Text(f"{what}: {safe_text(str(error), 200)}", style="bold red"))
