"""The status line: source, follow state, counts (and how far a file is read while it
loads), filter, payloads released, missed events, source state."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional

from rich.text import Text
from textual.widgets import Static

from ...terminal import counted, safe_text
from ..bridge import Progress
from ..skimmed import skimmed_note
from ..sources import FOLLOWING

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
    loading: Optional[Progress] = None
    """The source is still reading its file, this far."""
    released: int = 0
    """Payloads let go to stay within the live TUI's budget (`golem_proxy.tui.payloads`)."""
    let_go: int = 0
    """Older flows let go to stay within the live TUI's bound (`golem_proxy.tui.flow_bound`)."""
    skimmed: int = 0
    """Flows a body filter read without the numbers or blobs elided from their message, where
    these could change its answer (`golem_proxy.tui.skimmed`)."""
    routes_down: Mapping[str, float] = field(default_factory=dict)
    """Routes whose plugin is not answering (the proxy does not listen on them until it
    does), since when (session seconds)."""


class StatusBar(Static):
    """One line of text; styled, like every widget here, in ``tui/app.tcss``."""

    def show(self, status: Status) -> None:
        """Redraw from ``status``."""
        text = Text()
        # A live source or a followed file that failed or finished is live no more: it says
        # so, rather than go on claiming to follow what no longer moves.
        ended = status.failed or bool(status.finished)
        if status.live and not ended:
            text.append("● LIVE ", style="bold green")
        else:
            text.append("ENDED " if status.live else "FILE ", style="bold")
        source = status.source
        if ended:
            source = source.removesuffix(FOLLOWING)
        text.append(safe_text(source), style="dim")
        for route, since in status.routes_down.items():
            text.append("  │  ")
            text.append(
                safe_text(f"⚠ {route}: plugin down since t={since:.3f} s, not listening"),
                style="bold red",
            )
        text.append("  │  ")
        if status.follow:
            text.append("▶ following", style="bold green")
        else:
            text.append("⏸ paused (f: follow)", style="bold yellow")
        text.append("  │  ")
        if status.filter_text:
            shown = f"{status.shown:,} of {counted(status.flows, 'flow', grouped=True)}"
            text.append(f"{shown}  filter: {safe_text(status.filter_text)}")
            if status.skimmed:
                text.append(f" ({skimmed_note(status.skimmed)})", style="yellow")
        elif status.loading is not None:
            text.append(
                f"loading {counted(status.flows, 'flow', grouped=True)} · "
                f"{status.loading.percent}% of the file"
            )
        else:
            text.append(counted(status.flows, "flow", grouped=True))
        if status.let_go:
            let_go = counted(status.let_go, "older flow", grouped=True)
            text.append(f"  │  {let_go} let go from memory", style="yellow")
        if status.released:
            released = counted(status.released, "payload", grouped=True)
            text.append(f"  │  {released} released from memory", style="yellow")
        if status.missed:
            missed = counted(status.missed, "event", grouped=True)
            text.append(f"  │  {missed} missed", style="bold red")
        if status.failed:
            text.append("  │  failed (see above)", style="bold red")
        elif status.finished:
            text.append(f"  │  {safe_text(status.finished)}", style="dim")
        if text == self.content:
            return  # a drain that changed nothing shown: no redraw
        # A new layout only when the line count may change (the text wraps on a narrow
        # terminal): while a file loads the count changes on every batch, its length not.
        width = self.content_region.width
        lines = -(-text.cell_len // width) if width > 0 else 0
        self.update(text, layout=lines != self._lines or width <= 0)
        self._lines = lines

    _lines = -1
    """Lines the text took when last drawn (-1: never drawn)."""

    @property
    def text(self) -> str:
        return str(self.content)
