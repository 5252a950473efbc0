"""The TUI's `w` key: write the flows in view (with their connections' open and close
events) as a new recording, in a worker thread so a large view does not stop the screen."""

from __future__ import annotations

import os
from functools import partial
from typing import Optional

from ..events import Event
from ..recording.format import Header as RecordingHeader
from ..terminal import counted, safe_text
from .app_mixin import AppMixin
from .export import save_events
from .model import SessionModel
from .screens.save import SavePrompt

__all__ = ["SaveActions"]


class SaveActions(AppMixin):
    """Mixed into `GolemProxyApp`, which sets ``model`` and ``recording_header``."""

    model: SessionModel
    recording_header: RecordingHeader

    def action_save_view(self) -> None:
        default = os.path.join(os.getcwd(), "view.jsonl")
        self.push_screen(SavePrompt(len(self.model.view), default), self._save_view_to)

    def _save_view_to(self, path: Optional[str]) -> None:
        if not path:
            return
        events = self.model.events_for_view()
        flows = len(self.model.view)
        header, filter_text = self.recording_header, self.model.filter_text
        self.run_worker(
            partial(self._write_view, path, header, events, filter_text, flows),
            thread=True,
            name="save",
            exit_on_error=False,
        )

    def _write_view(
        self,
        path: str,
        header: RecordingHeader,
        events: list[Event],
        filter_text: str,
        flows: int,
    ) -> None:
        try:
            count = save_events(path, header, events, filter_text)
        except OSError as exc:
            message = safe_text(f"Not written: {exc}")
            self.call_from_thread(self.notify, message, severity="error", markup=False)
            return
        wrote = f"{counted(flows, 'flow', grouped=True)} ({counted(count, 'event', grouped=True)})"
        message = safe_text(f"Wrote {wrote} to {path}")
        self.call_from_thread(self.notify, message, markup=False)
