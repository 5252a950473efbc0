"""The TUI's debugging keys, kept apart from the app's browsing: `i` sets or clears the live
session's intercept filter, the held frames are decided in their panel (`HeldPanel`: `a`,
`A`, `e`, `d`, `n`), `r` sends the selected flow's request again, `E` edits it first, and
`D` shows how the new answer differs from the recorded one.

Editing opens ``$EDITOR`` when it is set (the app is suspended meanwhile), the in-app editor
otherwise; both keep the frame's encoding unless the user changes its layout
(`golem_proxy.live.frame_editor`).

Everything that reaches the session (or a plugin, for `tui FILE --target`) runs in worker
threads: the UI thread never waits on a socket.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from typing import Callable, Optional

import trio
from textual import work
from textual.app import SuspendNotSupported

from golem_core.profiles import Profile

from ..analysis.flows import Flow
from ..live.control import LiveControl, NotLive
from ..live.frame_editor import EditorError, EditorResult, edit_in_editor, editor_command
from ..live.intercept import Answer, Edit
from ..live.resend import ResendError, Resent, resend
from ..released_payload import ReleasedPayload
from ..terminal import safe_text
from .app_mixin import AppMixin
from .model import SessionModel
from .payloads import PayloadReleased, payload_of
from .resend_targets import ResendTargets, other_layer_note
from .resent_rows import AnswerNotice, ResentRows
from .screens.edit_frame import EditFrame
from .screens.intercept_prompt import InterceptPrompt
from .screens.resend_diff import ResendDiff
from .widgets.held import HeldPanel

__all__ = ["DebugActions", "LastResend"]

NOTICE_WAIT = 1.0
"""Seconds the notice of an answer sent again waits for its row to come, to name it."""


@dataclass(frozen=True)
class LastResend:
    flow: int
    recorded: Optional[bytes]
    """The answer's payload as the flow holds it (a `ReleasedPayload` once the TUI let it
    go: then ``recorded_note`` says so)."""
    resent: Resent
    recorded_note: str = ""


class DebugActions(AppMixin):
    """Mixed into `GolemProxyApp`, which sets ``control`` (a live session), ``resend_targets``
    (a plugin for `tui FILE --target`, or a live proxy's routes), ``profile`` and
    ``selected_flow()``."""

    control: Optional[LiveControl]
    resend_targets: ResendTargets
    profile: Profile
    model: SessionModel
    resent_rows: ResentRows
    last_resend: Optional[LastResend] = None

    def selected_flow(self) -> Optional[Flow]:  # pragma: no cover - the app defines it
        raise NotImplementedError

    def _show_selected(self) -> None:  # pragma: no cover - PaneActions defines it
        raise NotImplementedError

    def action_intercept(self) -> None:
        if self.control is None:
            self.notify(
                "intercepting needs a live proxy in this process: golem-proxy proxy --tui "
                "(--observer in-process)",
                severity="warning",
            )
            return
        self._ask_intercept_filter()

    @work(thread=True, group="intercept")
    def _ask_intercept_filter(self) -> None:
        assert self.control is not None
        try:
            current = self.control.intercept_filter()
        except NotLive as exc:
            self.call_from_thread(self.notify, str(exc), severity="error")
            return
        self.call_from_thread(self.push_screen, InterceptPrompt(current), self._set_intercept)

    def _set_intercept(self, text: Optional[str]) -> None:
        if text is not None:
            self._apply_intercept(text)

    @work(thread=True, group="intercept")
    def _apply_intercept(self, text: str) -> None:
        assert self.control is not None
        try:
            shown = self.control.set_filter(text)
        except (NotLive, ValueError) as exc:
            self.call_from_thread(self.notify, str(exc), severity="error")
            return
        message = f"intercepting {shown}" if shown else "intercept off (held frames stay held)"
        self.call_from_thread(self.notify, safe_text(message, 200))

    def on_held_panel_edit_requested(self, message: HeldPanel.EditRequested) -> None:
        held = message.held
        panel = message.panel
        name = held.method or "?"
        if message.answer:
            template = self.profile.answer_by_hand(held.message_id)
            title = f"Answer held request #{held.id} ({name}) with:"
            payload = self.profile.encode_payload(template)
        else:
            title = f"Edit held #{held.id} ({name}), then send it:"
            payload = held.payload

        def chosen(data: Optional[bytes]) -> None:
            if data is not None:
                panel.decide(held.id, Answer(data) if message.answer else Edit(data))

        self.edit_frame(title, payload, f"held-{held.id}", chosen)

    def edit_frame(
        self, title: str, payload: bytes, name: str, chosen: Callable[[Optional[bytes]], None]
    ) -> None:
        """Let the user edit ``payload``: in ``$EDITOR`` when it is set, else in the in-app
        editor titled ``title``. ``chosen`` gets the bytes to send; it is not called when
        the user cancels or leaves ``$EDITOR`` without a change (nothing is sent)."""
        command = editor_command()
        if command is None:

            def edited(data: Optional[bytes]) -> None:
                if data is not None:
                    chosen(data)

            self.push_screen(EditFrame(title, payload), edited)
            return
        try:
            result = self._run_editor(payload, command, name)
        except EditorError as exc:
            self.notify(safe_text(str(exc), 300), severity="error", markup=False)
            return
        if result.payload is None:
            self.notify("the editor exited with an error: nothing sent", severity="warning")
        elif not result.changed:
            self.notify("left as it was: nothing sent", severity="warning")
        else:
            chosen(result.payload)

    def _run_editor(self, payload: bytes, command: list[str], name: str) -> EditorResult:
        try:
            with self.suspend():
                return edit_in_editor(payload, command, name=name)
        except SuspendNotSupported:
            # No terminal to hand over (a headless run): the editor runs without one.
            return edit_in_editor(payload, command, name=name)

    def on_held_panel_emptied(self, message: HeldPanel.Emptied) -> None:
        if not message.panel.held:
            self.action_focus_table()

    def action_focus_table(self) -> None:  # pragma: no cover - PaneActions defines it
        raise NotImplementedError

    def _flow_to_resend(self, purpose: str) -> Optional[tuple[Flow, bytes]]:
        """The selected flow and its request's exact bytes when it has a request and there
        is somewhere to send it; else None, after saying why (``purpose`` words what the
        request was selected for)."""
        flow = self.selected_flow()
        if flow is None or flow.request is None:
            self.notify(f"select a flow with a request to {purpose}", severity="warning")
            return None
        if self.model.profile_for(flow.route) is not self.profile:
            self.notify(other_layer_note(flow), severity="warning", markup=False)
            return None
        if self.control is None and self.resend_targets.for_route(flow.route) is None:
            if self.resend_targets:  # the live proxy has no such route
                message = f"flow {flow.number} came by route {flow.route}: no address to send to"
            else:
                message = "sending again needs a live proxy, or tui FILE --target HOST:PORT"
            self.notify(safe_text(message), severity="warning", markup=False)
            return None
        try:
            payload = payload_of(flow.request)
        except PayloadReleased as exc:
            # Sending again sends the exact bytes: the row's message is not them.
            message = f"request #{flow.number} cannot be sent again: its {exc}"
            self.notify(safe_text(message), severity="warning", markup=False)
            return None
        return flow, payload

    def action_resend(self) -> None:
        chosen = self._flow_to_resend("send it again")
        if chosen is None:
            return
        flow, payload = chosen
        self.notify(f"sending flow {flow.number} again…")
        self._resend(flow, payload, self._newest_number())

    def action_edit_resend(self) -> None:
        """Edit the selected request, then send it again (mitmproxy's "replay modified")."""
        selected = self._flow_to_resend("edit and send it")
        if selected is None:
            return
        flow, request = selected

        def chosen(payload: Optional[bytes]) -> None:
            if payload is not None:
                self.notify(f"sending flow {flow.number} again, edited…")
                self._resend(flow, payload, self._newest_number(), "E")

        title = f"Edit request #{flow.number} ({flow.method or '?'}), then send it:"
        self.edit_frame(title, request, f"request-{flow.number}", chosen)

    def _newest_number(self) -> int:
        """The newest flow's number (0: none yet): a request sent now comes back newer."""
        flows = self.model.flows
        return flows[-1].number if flows else 0

    @work(thread=True, group="resend")
    def _resend(self, flow: Flow, payload: bytes, after: int, key: str = "r") -> None:
        """Send ``flow``'s request again as ``payload`` (by ``key``: ``r``, or ``E`` edited);
        the newest flow was numbered ``after`` when it was sent."""
        try:
            if self.control is not None:
                resent = self.control.resend(flow.route, payload)
            else:
                target = self.resend_targets.for_route(flow.route)
                assert target is not None  # `_flow_to_resend` checked
                resent = trio.run(partial(resend, payload, target, self.profile))
        except (ResendError, NotLive) as exc:
            self.call_from_thread(self.notify, safe_text(str(exc), 300), severity="error")
            return
        recorded: Optional[bytes] = None
        note = ""
        if flow.response is not None:
            try:
                recorded = payload_of(flow.response)
            except PayloadReleased as exc:  # the marker stays, and says why
                recorded, note = flow.response.payload, str(exc)
        self.last_resend = LastResend(flow.number, recorded, resent, note)
        notice = AnswerNotice(safe_text(resent.outcome.text, 200), resent.latency)
        if self.control is None and flow.route not in self.resend_targets.by_route:
            # Sent to the plugin itself (tui FILE --target): no row comes of it, the
            # sender's latency is the only one.
            text = f"flow {flow.number} sent again{notice.text()}"
            self.call_from_thread(self.notify, text, markup=False)
            return
        self.call_from_thread(self._sent_again, flow, after, resent, notice, key)

    def _sent_again(
        self, flow: Flow, after: int, resent: Resent, notice: AnswerNotice, key: str = "r"
    ) -> None:
        """The answer came: look for the new row, which the notice names once it is found
        and answered, with its latency (`resent_rows`). Its events may still be on their
        way: a batch that brings them finds it, and the notice is said without it if it is
        long in coming."""
        rows = self.resent_rows
        rows.expect(
            flow.number,
            after,
            flow.route,
            resent.method,
            resent.request,
            resent.request_id,
            notice,
            key,
        )
        self.rows_sent_again(rows.link(self.model.flows))
        self.set_timer(NOTICE_WAIT, partial(self._say_unlinked, flow.number))

    def _say_unlinked(self, origin: int) -> None:
        tail = self.resent_rows.waiting_notice(origin)
        if tail is not None:
            self.notify(f"flow {origin} sent again{tail}", markup=False)

    def rows_sent_again(self, found: list[tuple[int, int, str]]) -> None:
        """Say the links ``found`` (`ResentRows.link`): the notice of each answer not said yet
        names its row, and a detail that shows either row is drawn again."""
        for origin, row, tail in found:
            if tail:
                self.notify(f"flow {origin} sent again as #{row}{tail}", markup=False)
        shown = self.selected_flow()
        if shown is not None and any(shown.number in pair[:2] for pair in found):
            self._show_selected()

    def action_resend_diff(self) -> None:
        last = self.last_resend
        if last is None:
            self.notify("nothing sent again yet: r sends the selected flow", severity="warning")
            return
        resent = last.resent
        if isinstance(last.recorded, ReleasedPayload):
            message = f"flow {last.flow}'s answer cannot be compared: {last.recorded_note}"
            self.notify(safe_text(message), severity="warning", markup=False)
            return
        summary = f"{resent.method} id {resent.request_id} → {resent.outcome.text}"
        recorded = last.recorded if last.recorded is not None else json.dumps(None).encode()
        self.push_screen(ResendDiff(last.flow, resent.method, recorded, resent.response, summary))
