"""The TUI's `w` key: write the flows in view, those folded under a tool call's row too (with
their connections' open and close events) as a new recording, in a worker thread so a large
view does not stop the screen."""

from __future__ import annotations

import os
from functools import partial
from typing import Callable, Literal, Optional

from ..recording.format import Header as RecordingHeader
from ..terminal import counted, safe_text
from .app_mixin import AppMixin
from .export import save_events
from .model import SessionModel
from .payloads import PayloadReleased
from .saved_view import SavedView
from .screens.save import SavePrompt

__all__ = ["SaveActions"]


class SaveActions(AppMixin):
    """Mixed into `GolemProxyApp`, which sets ``model`` and ``recording_header``."""

    model: SessionModel
    recording_header: RecordingHeader
    take_received: Callable[[], None]

    def action_save_view(self) -> None:
        default = os.path.join(os.getcwd(), "view.jsonl")
        count = len(self.model.selected())
        folded = count - len(self.model.view)
        self.push_screen(SavePrompt(count, default, folded), self._save_view_to)

    def _save_view_to(self, path: Optional[str]) -> None:
        if not path:
            return
        # The answers already received belong in it, also those the pace has not drawn yet.
        self.take_received()
        saved = self.model.view_to_save()
        header, filter_text = self.recording_header, self.model.filter_text
        self.run_worker(
            partial(self._write_view, path, header, saved, filter_text),
            thread=True,
            name="save",
            exit_on_error=False,
        )

    def _write_view(
        self, path: str, header: RecordingHeader, saved: SavedView, filter_text: str
    ) -> None:
        # The payloads the recording holds are checked here, off the screen's thread.
        saved = saved.checked()
        # Said in the file's header too: a recording written from memory that lacks flows.
        left_out = left_out_line(saved, self.model)
        try:
            count = save_events(path, header, saved.events, filter_text, left_out)
        except (OSError, PayloadReleased) as exc:  # the recording changed while it was read
            message = safe_text(f"Not written: {exc}")
            self.call_from_thread(self.notify, message, severity="error", markup=False)
            return
        flows = counted(saved.flows, "flow", grouped=True)
        message = f"Wrote {flows} ({counted(count, 'event', grouped=True)}) to {path}"
        if left_out:
            message += "; " + left_out
        severity: Literal["information", "warning"] = "warning" if left_out else "information"
        self.call_from_thread(self.notify, safe_text(message), severity=severity, markup=False)


def left_out_line(saved: SavedView, model: SessionModel) -> str:
    """What a written view is missing (empty: nothing): the flows whose payloads were
    released, and the older flows let go from memory, and where they are."""
    parts = []
    if saved.left_out:
        budget = model.payload_budget
        recording = budget.marker.recording if budget is not None else None
        where = f"the recording {recording} holds them" if recording else "they were not recorded"
        flows = counted(saved.left_out, "flow", grouped=True)
        parts.append(f"{flows} left out: payloads released from memory ({where})")
    if saved.lost:
        flows = counted(saved.lost, "flow", grouped=True)
        parts.append(f"{flows} left out, payloads not read back: {saved.lost_why}")
    bound = model.flow_bound
    if saved.let_go and bound is not None:
        older = counted(saved.let_go, "older flow", grouped=True)
        parts.append(f"{older} let go from memory before it, not in it {bound.where()}")
    return "; ".join(parts)
