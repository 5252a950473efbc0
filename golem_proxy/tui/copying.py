"""The TUI's copy keys: `y` copies the selected request as JSON, `Y` the `golem-proxy call`
command line that sends it again. Each goes to the clipboard (OSC 52) and to a private file,
since many terminals drop the clipboard silently."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from ..analysis.flows import Flow
from ..terminal import safe_text
from .app_mixin import AppMixin
from .export import call_command, request_json, write_copy
from .model import SessionModel
from .payloads import PayloadReleased
from .render import escape_surrogates
from .resend_targets import ResendTargets, other_layer_note

if TYPE_CHECKING:
    from golem_core.profiles import Profile

__all__ = ["CopyActions"]


class CopyActions(AppMixin):
    """Mixed into `GolemProxyApp`, which sets ``model``, ``profile``, ``resend_targets`` and
    ``selected_flow()``."""

    model: SessionModel
    profile: Profile
    resend_targets: ResendTargets

    def selected_flow(self) -> Optional[Flow]:  # pragma: no cover - the app defines it
        raise NotImplementedError

    def action_copy_request(self) -> None:
        flow = self.selected_flow()
        if flow is None:
            return
        try:
            # Lone surrogates (legal in JSON) become escapes: UTF-8 cannot carry them as such.
            text = escape_surrogates(request_json(flow))
        except PayloadReleased as exc:
            self._not_copied(flow, exc)
            return
        if not text:
            self.notify("This flow has no request", severity="warning")
            return
        self._copy(text, flow.number, f"Request #{flow.number}", ".json")

    def action_copy_call(self) -> None:
        """Copy the `golem-proxy call` command line that sends the selected request again,
        to where `r` sends it (the --target given, or the live proxy's route), else to the
        plugin the flow's connection went to."""
        flow = self.selected_flow()
        if flow is None:
            return
        if self.model.profile_for(flow.route) is not self.profile:
            self.notify(other_layer_note(flow), severity="warning", markup=False)
            return
        info = self.model.tracker.connections.get(flow.conn)
        address = self.resend_targets.for_route(flow.route)
        target = str(address) if address is not None else None
        if target is None and info is not None and info.upstream:
            target = info.upstream
        try:
            command = call_command(flow, self.profile, target)
        except PayloadReleased as exc:
            self._not_copied(flow, exc)
            return
        if command is None:
            self.notify("This flow has no well-formed request to call", severity="warning")
            return
        self._copy(escape_surrogates(command), flow.number, f"The call for #{flow.number}", ".sh")

    def _not_copied(self, flow: Flow, released: PayloadReleased) -> None:
        message = f"Request #{flow.number} not copied: its {released}"
        self.notify(safe_text(message), severity="warning", markup=False)

    def _copy(self, text: str, number: int, what: str, suffix: str) -> None:
        self.copy_to_clipboard(text)
        # Terminals without OSC 52 drop the clipboard silently, so the text also goes to a file.
        try:
            # A new file with an unpredictable name in a directory only the user can enter.
            path = write_copy(text + "\n", number, suffix)
        except OSError as exc:
            message = f"Copied to the clipboard; could not write the copy: {exc}"
            self.notify(safe_text(message), severity="warning", markup=False)
            return
        # Where it went, not what it says: the text is in the file and on the clipboard.
        self.notify(
            safe_text(f"{what} copied to the clipboard and written to {path}"), markup=False
        )
