"""The status line: source, follow state, counts, filter, missed events, source state."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static

from ...terminal import counted, safe_text

__all__ = ["Status", "StatusBar"]


@dataclass(frozen=True)
class Status:
    source: str
    live: bool
    follow: bool
    flows: int
    shown: int
    filter_text: str = ""
    missed: int = 0
    finished: str = ""
    failed: bool = False


class StatusBar(Static):
    """One line of text; styled, like every widget here, in ``tui/app.tcss``."""

    def show(self, status: Status) -> None:
        """Redraw from ``status``."""
        text = Text()
        text.append(
            "● LIVE " if status.live else "FILE ", style="bold green" if status.live else "bold"
        )
        text.append(safe_text(status.source), style="dim")
        text.append("  │  ")
        if status.follow:
            text.append("▶ following", style="bold green")
        else:
            text.append("⏸ paused (f: follow)", style="bold yellow")
        text.append("  │  ")
        if status.filter_text:
            shown = f"{status.shown:,} of {counted(status.flows, 'flow', grouped=True)}"
            text.append(f"{shown}  filter: {safe_text(status.filter_text)}")
        else:
            text.append(counted(status.flows, "flow", grouped=True))
        if status.missed:
            missed = counted(status.missed, "event", grouped=True)
            text.append(f"  │  {missed} missed", style="bold red")
        if status.failed:
            text.append("  │  failed (see above)", style="bold red")
        elif status.finished:
            text.append(f"  │  {safe_text(status.finished)}", style="dim")
        self.update(text)

    @property
    def text(self) -> str:
        return str(self.content)
