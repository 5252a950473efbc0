"""The frames an intercepting session holds, with their age, and the keys that decide them.

Shown above the flows table while anything is held; it takes the focus whenever a frame it
had not shown comes first, so its keys work at once (escape goes back to the table). The list
comes from the session's trio thread through `LiveControl` (polled in a worker thread, twice a
second, which also keeps the ages current); decisions go back the same way. Editing and
answering open an editor, which the app shows (`EditRequested`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from rich.text import Text
from textual import work
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable

from ...live.control import HeldView, LiveControl, NotLive
from ...live.intercept import Accept, Decision, Drop, InterceptError
from ...terminal import safe_text

__all__ = ["POLL_INTERVAL", "HeldPanel"]

POLL_INTERVAL = 0.5


class HeldPanel(DataTable[Text]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "accept", "Accept"),
        Binding("A", "accept_all", "Accept all"),
        Binding("e", "edit", "Edit"),
        Binding("d", "drop", "Drop"),
        Binding("n", "answer", "Answer"),
    ]

    @dataclass
    class EditRequested(Message):
        """Open the editor on ``held``: its own JSON (an edit), or a response to write
        (``answer``)."""

        panel: HeldPanel
        held: HeldView
        answer: bool

    @dataclass
    class Emptied(Message):
        """Nothing was held any more and the panel had the focus: give it back, unless
        ``panel`` holds a frame again by the time this is handled (the next poll's frame
        took the focus, and keeps it)."""

        panel: HeldPanel

    def __init__(self, control: LiveControl, *, id: Optional[str] = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.control = control
        self.held: list[HeldView] = []

    def on_mount(self) -> None:
        self.add_columns("held", "age", "route", "conn", "", "method", "id")
        self.display = False
        self.set_interval(POLL_INTERVAL, self.poll)

    @work(thread=True, exclusive=True, group="held-poll")
    def poll(self) -> None:
        try:
            held = self.control.held()
        except NotLive:
            held = []
        self.app.call_from_thread(self._show, held)

    def _show(self, held: list[HeldView]) -> None:
        chosen = self.selected
        # A frame not seen before heads the list: it waits for someone, so its keys must work
        # at once, even when the list never emptied between two (or an editor was open).
        new_head = bool(held) and all(view.id != held[0].id for view in self.held)
        self.held = held
        self.clear()
        for view in held:
            self.add_row(
                Text(f"#{view.id} intercepted", style="bold magenta"),
                Text(f"{view.age:.1f} s"),
                Text(safe_text(view.route, 20)),
                Text(str(view.conn)),
                Text(view.direction.arrow),
                Text(safe_text(view.method or "?", 60)),
                Text(safe_text("" if view.shown_id is None else str(view.shown_id), 40)),
            )
        shown = bool(held)
        if new_head:
            self.focus()
        elif not shown and self.has_focus:
            self.post_message(self.Emptied(self))
        self.display = shown
        if chosen is not None:
            for row, view in enumerate(held):
                if view.id == chosen.id:
                    self.move_cursor(row=row)

    @property
    def selected(self) -> Optional[HeldView]:
        if not self.held or not 0 <= self.cursor_row < len(self.held):
            return None
        return self.held[self.cursor_row]

    def action_accept(self) -> None:
        self._decide_selected(Accept())

    def action_drop(self) -> None:
        self._decide_selected(Drop())

    def action_edit(self) -> None:
        if self.selected is not None:
            self.post_message(self.EditRequested(self, self.selected, answer=False))

    def action_answer(self) -> None:
        view = self.selected
        if view is None:
            return
        if view.direction.value != "c2s":
            self.app.notify("only a held request can be answered", severity="warning")
            return
        self.post_message(self.EditRequested(self, view, answer=True))

    def _decide_selected(self, decision: Decision) -> None:
        if self.selected is not None:
            self.decide(self.selected.id, decision)

    @work(thread=True, group="held-decide")
    def decide(self, held_id: int, decision: Decision) -> None:
        """Carry out a decision on the session's thread; say why when it cannot be."""
        try:
            self.control.decide(held_id, decision)
        except (InterceptError, NotLive) as exc:
            self.app.call_from_thread(self.app.notify, str(exc), severity="error")
        self.app.call_from_thread(self.poll)

    @work(thread=True, group="held-decide")
    def action_accept_all(self) -> None:
        try:
            count = self.control.accept_all()
        except NotLive as exc:
            self.app.call_from_thread(self.app.notify, str(exc), severity="error")
            return
        self.app.call_from_thread(self.app.notify, f"accepted {count} held frames")
        self.app.call_from_thread(self.poll)
