"""The `D` screen: a flow's recorded answer next to the answer to the same request sent again
(`r`), and where they differ."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ...replay.diffing import Comparator, envelope_body
from ...terminal import safe_text

__all__ = ["ResendDiff", "diff_lines"]


def diff_lines(old: bytes, new: bytes, method: str) -> list[str]:
    """Where two answers differ (ids left out: a resent request has a fresh one), one line
    each, ``path (old vs new)``; empty when they are the same."""
    try:
        before: Any = envelope_body(json.loads(old))
        after: Any = envelope_body(json.loads(new))
    except ValueError:
        return [] if old == new else ["the answers differ (not JSON)"]
    return [d.describe() for d in Comparator(learn=False).compare(before, after, method)]


class ResendDiff(ModalScreen[None]):
    CSS_PATH = "resend_diff.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,D", "close", "Close")]

    def __init__(self, flow: int, method: str, old: bytes, new: bytes, summary: str) -> None:
        super().__init__()
        self.flow = flow
        self.method = method
        self.old = old
        self.new = new
        self.summary = summary

    @property
    def text(self) -> str:
        """What the screen shows, as plain text."""
        return "\n".join(part.plain for part in self._body())

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Group(*self._body()))
            yield Static(Text("escape: close", style="dim"))

    def _body(self) -> list[Text]:
        lines = diff_lines(self.old, self.new, self.method)
        head = Text(f"flow {self.flow} sent again: {safe_text(self.summary, 200)}", style="bold")
        if lines:
            verdict = Text(f"{len(lines)} differences (recorded vs now):", style="bold red")
        else:
            verdict = Text("same answer as recorded (ids aside)", style="green")
        body = [head, verdict, *(Text("  " + safe_text(line, 300)) for line in lines)]
        body += [Text(""), Text("recorded:", style="dim"), Text(_pretty(self.old))]
        body += [Text("now:", style="dim"), Text(_pretty(self.new))]
        return body

    def action_close(self) -> None:
        self.dismiss(None)


def _pretty(payload: bytes, limit: int = 4000) -> str:
    try:
        text = json.dumps(json.loads(payload), indent=2, ensure_ascii=False)
    except ValueError:
        text = payload.decode("utf-8", "replace")
    return "\n".join(safe_text(line) for line in text[:limit].split("\n"))
