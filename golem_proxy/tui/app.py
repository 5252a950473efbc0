"""The Textual app: wires the event source, the model and the widgets together.

Data flows one way: a source (file reader or the trio proxy, in a worker thread) pushes
events into an `EventBuffer`; the buffer nudges the app with one `EventsReady` at a time; the
app drains a batch, folds it into the `SessionModel` and tells the widgets what changed. The
widgets read the model and post messages up (cursor moved, follow changed, filter typed).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import ClassVar, Optional

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container
from textual.message import Message
from textual.widgets import Footer, Header

from golem_core.profiles import Profile

from ..analysis.flows import Flow
from ..live.control import LiveControl
from ..net.addresses import Address
from ..recording.format import Header as RecordingHeader
from .bridge import Batch, EventBuffer, EventSource, Progress
from .collector import FlowsHold
from .compact import compactor_for
from .copying import CopyActions
from .debugging import DebugActions
from .flow_bound import FlowBound
from .model import SessionModel
from .pace import REFRESH_INTERVAL, STREAM_INTERVAL, StreamPace
from .panes import PaneActions
from .payloads import PayloadBudget
from .resend_targets import ResendTargets
from .resent_rows import ResentRows
from .saving import SaveActions
from .screens.confirm import ConfirmQuit
from .view_actions import ViewActions
from .widgets.banner import Banner
from .widgets.detail import FlowDetail
from .widgets.filter_bar import FilterBar
from .widgets.flows_table import FlowsTable
from .widgets.held import HeldPanel
from .widgets.status_bar import Status, StatusBar

__all__ = ["GolemProxyApp", "run_tui"]

MAX_BATCH = 20_000
"""Events folded in per drain, so loading a large file leaves room to draw and take keys."""
LOADING_INTERVAL = 0.2
"""While a file loads, at most one batch (and redraw) per this many seconds."""
LOADING_BATCH = 60_000
"""Events folded in per drain while a file loads: its exchanges come compact from the reader
(a few hundred bytes each), and every drain is followed by a redraw that costs as much as
folding thousands of them in."""
BACKLOG = LOADING_BATCH
"""Events a file source may read ahead of the screen before it waits for a drain."""


@dataclass
class EventsReady(Message):
    """Posted (from any thread) by the event buffer: there is something to drain."""


class GolemProxyApp(PaneActions, CopyActions, SaveActions, DebugActions, ViewActions, App[None]):
    CSS_PATH = "app.tcss"
    # The footer names what an 80-column terminal has room for; `?` lists every key.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus_filter", "Filter"),
        Binding("ctrl+f", "focus_find", "Find", show=False),
        Binding("n", "find(True)", "Next", show=False),
        Binding("N", "find(False)", "Prev", show=False),
        Binding("f", "follow", "Follow"),
        Binding("enter", "open_detail", "Detail"),
        # Priority: Tab must not walk into the filter boxes (a later `q` would be typed there).
        Binding("tab,shift+tab", "switch_pane", "Switch pane", show=False, priority=True),
        Binding("m", "mark", "Mark", show=False),
        Binding("o", "fold", "Fold", show=False),
        Binding("e", "expand", "Expand", show=False),
        Binding("y", "copy_request", "Copy", show=False),
        Binding("Y", "copy_call", "Copy call", show=False),
        Binding("w", "save_view", "Write", show=False),
        Binding("s", "stats", "Stats"),
        Binding("c", "connections", "Conns", show=False),
        # The debugging keys (debugging.py); a held frame's own keys are its panel's.
        Binding("i", "intercept", "Intercept", show=False),
        Binding("r", "resend", "Resend", show=False),
        Binding("E", "edit_resend", "Edit, resend", show=False),
        Binding("D", "resend_diff", "Diff", show=False),
        Binding("question_mark", "help", "Help"),
        Binding("escape", "focus_table", "Table", show=False),
        Binding("q", "request_quit", "Quit"),
        # Ctrl-C quits, even from a filter box; a live proxy still drains and flushes.
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]
    ENABLE_COMMAND_PALETTE = False

    def __init__(
        self,
        source: EventSource,
        profile: Profile,
        title: str,
        *,
        header: Optional[RecordingHeader] = None,
        refresh_interval: float = REFRESH_INTERVAL,
        stream_interval: float = STREAM_INTERVAL,
        filter_text: str = "",
        control: Optional[LiveControl] = None,
        resend_target: Optional[Address] = None,
        route_targets: Optional[Mapping[str, Address]] = None,
        payload_budget: Optional[PayloadBudget] = None,
        buffer: Optional[EventBuffer] = None,
        flow_bound: Optional[FlowBound] = None,
    ) -> None:
        """``filter_text`` is applied from the start (a valid expression: the caller has
        checked it). ``resend_target`` is where `r` sends any flow's request again without a
        live session in this process; ``route_targets`` (by route name) where it sends a
        flow of that route (a live proxy's listen addresses). ``payload_budget`` bounds the
        payload bytes a live session's flows keep (`golem_proxy.tui.payloads`; None: every
        payload is kept, as a file's are); ``flow_bound`` the flows it keeps
        (`golem_proxy.tui.flow_bound`; None: every flow). ``buffer``: the one the source
        already feeds (a session started before the app)."""
        super().__init__()
        self.control = control
        """The live session behind the source (intercept, resend), when there is one."""
        self.resend_targets = ResendTargets(dict(route_targets or {}), resend_target)
        """Where `r` sends a request again when there is no live session in this process."""
        self.source = source
        self.source_description = source.description
        self.profile = profile
        self.title = title
        self.recording_header = header or RecordingHeader.new(profile.name, ())
        self.pace = StreamPace(refresh_interval, stream_interval)
        release_over = payload_budget.release_over if payload_budget is not None else None
        compactor = compactor_for(source, profile, release_over)
        self.model = SessionModel(profile, compactor, payload_budget, flow_bound)
        if filter_text:
            self.model.set_filter(filter_text)
        # A source that is never dropped from (a file) waits for the screen instead.
        wait_over = BACKLOG if source.buffer_limit is None else None
        self.buffer = buffer or EventBuffer(source.buffer_limit, wait_over=wait_over)
        self.finished_reason: Optional[str] = None
        self.failed = False
        self.progress: Optional[Progress] = None
        """How far the source has read its file (None: it does not read one)."""
        self.find_text = ""
        self.resent_rows = ResentRows()
        """The rows requests sent again (`r`, `E`) came back as, and their originals."""
        self._collector = FlowsHold()

    def compose(self) -> ComposeResult:
        # Kept as attributes, not queried: queries search the active screen, and events keep
        # arriving while the stats or help screen is on top.
        self.filter_bar = FilterBar(self.model.filter_text)
        self.banner = Banner(id="banner")
        self.table = FlowsTable(self.model, id="flows")
        self.detail = FlowDetail(id="detail")
        self.status_bar = StatusBar()
        yield Header()
        yield self.filter_bar
        yield self.banner
        if self.control is not None:
            self.held_panel = HeldPanel(self.control, id="held")
            yield self.held_panel
        # The table and the detail pane share this box: stacked, or side by side when wide.
        self.panes = Container(self.table, self.detail, id="panes")
        yield self.panes
        yield self.status_bar
        yield Footer()

    @property
    def source_done(self) -> bool:
        """The source has finished and every event it delivered is on screen."""
        return self.finished_reason is not None

    def on_mount(self) -> None:
        self.table.focus()
        self._show_status()
        self.buffer.attach(self._nudge)
        self.run_worker(
            partial(self.source.run, self.buffer), thread=True, name="source", exit_on_error=False
        )

    def on_unmount(self) -> None:
        if self._detail_timer is not None:
            self._detail_timer.stop()
        self.source.stop()
        self.buffer.close()
        self._collector.release()

    def _nudge(self) -> None:
        """Called by the buffer, from any thread (`post_message` is thread-safe)."""
        self.post_message(EventsReady())

    def on_events_ready(self, message: EventsReady) -> None:
        self._drain()

    def _drain(self) -> None:
        if not self.table.is_attached:  # shutting down: the widgets are gone
            return
        batch = self.buffer.drain(MAX_BATCH if self.loading is None else LOADING_BATCH)
        wait = self.pace.taken(len(batch.events))
        self._fold(batch)
        # Wait before taking the next batch: a flood becomes a few batches a second, each
        # drawn once, instead of one redraw per event (pace.py). A file being loaded waits
        # longer: fewer, larger batches, each drawn once, load it faster.
        if self.loading is not None:
            wait = LOADING_INTERVAL
        self.set_timer(0.001 if batch.more else wait, self._rearm)

    def take_received(self) -> None:
        """Fold in every event received, whatever the pace (while events stream, the next
        batch waits up to `STREAM_INTERVAL`): a view written holds all that reached the app."""
        self._fold(self.buffer.drain())

    def _fold(self, batch: Batch) -> None:
        """Fold ``batch`` into the model and show what it changed."""
        on = self.selected_flow() if self.model.flow_bound is not None else None
        result = self.model.apply(batch.events)
        if result.let_go:
            self._flows_let_go(on)
        if self.resent_rows.pending and result.changed:
            self.rows_sent_again(self.resent_rows.link(self.model.flows))
        if batch.finished and not batch.more:
            if self.finished_reason is None:  # nothing more comes: as `show` at a file's end
                ended = "session" if self.source.serving else "recording"
                result.changed.update(self.model.end_input(ended))
            self.finished_reason = batch.reason or "finished"
            if batch.failed:
                self.failed = True
                self.banner.show_error(self.finished_reason)
        if result.changed or batch.missed:
            self.table.view_changed()
            selected = self.table.selected
            if selected is not None and selected in result.changed:
                self._show_selected_soon()
        if batch.info is not None:
            self.source_description = batch.info.description
            self.banner.show_notes(batch.info.notes)
        if batch.progress is not None:
            self.progress = batch.progress
        loading = self.loading is not None
        if loading:
            self._collector.hold(pause=True)
        elif self.source.live and result.changed:
            # Live, the flows are kept off the collector's walks as they come (collector.py):
            # its full passes over them held the session this app shares an interpreter with.
            self._collector.hold()
        if loading != self.model.loading:
            # Requests still waiting once the whole file is read are not loading any more.
            self.model.loading = loading
            self.table.refresh()
            self._show_selected()  # its detail says what the table says of it
            if not loading:
                self._collector.release()
        self._show_status()

    @property
    def loading(self) -> Optional[Progress]:
        """How far the file is read while the source is still reading it, else None."""
        progress = self.progress
        if progress is None or progress.complete or self.source_done:
            return None
        return progress

    def _rearm(self) -> None:
        if self.buffer.rearm():
            self._drain()

    def _show_status(self) -> None:
        budget = self.model.payload_budget
        self.status_bar.show(
            Status(
                source=self.source_description,
                live=self.source.live,
                follow=self.table.follow,
                flows=len(self.model.flows),
                shown=len(self.model.view),
                filter_text=self.model.filter_text,
                missed=self.model.events_missed + self.buffer.total_missed,
                finished=self.finished_reason or "",
                failed=self.failed,
                loading=self.loading,
                released=budget.released if budget is not None else 0,
                let_go=self.model.flow_bound.let_go if self.model.flow_bound else 0,
                skimmed=len(self.model.skimmed.numbers),
                routes_down=dict(self.model.routes_down),
            )
        )

    def _flows_let_go(self, selected: Optional[Flow]) -> None:
        """Older flows were let go: the cursor stays on the flow it was on (or goes to the
        oldest one left), and the banner says how many went and where they are."""
        index = self.model.index_of(selected) if selected is not None else None
        if not self.table.follow:
            self.table.cursor = 0 if index is None else bisect.bisect_left(self.model.view, index)
        bound = self.model.flow_bound
        if bound is not None:
            self.banner.show_let_go(bound.note())
        self.table.view_changed()
        self._show_selected_soon()

    def on_flows_table_follow_changed(self, message: FlowsTable.FollowChanged) -> None:
        self._show_status()

    def on_filter_bar_filter_submitted(self, message: FilterBar.FilterSubmitted) -> None:
        bar = self.filter_bar
        previous = self.table.selected
        try:
            self.model.set_filter(message.text)
        except ValueError as exc:  # FilterError: say why; the table keeps its rows
            bar.show_error(str(exc) or "invalid filter")
            return
        bar.show_error(None)
        if previous is not None and not self.table.follow:
            self.table.cursor = bisect.bisect_left(self.model.view, previous)
        self.table.view_changed()
        self._show_status()
        self.table.focus()

    def on_filter_bar_find_submitted(self, message: FilterBar.FindSubmitted) -> None:
        self.find_text = message.text
        self.table.focus()
        if self.find_text:
            self.action_find(True)

    def selected_flow(self) -> Optional[Flow]:
        index = self.table.selected
        return self.model.flows[index] if index is not None else None

    def action_request_quit(self) -> None:
        """Quit; first ask when quitting would stop the proxy this app runs."""
        if self.source.serving and not self.source_done:
            self.push_screen(ConfirmQuit(), self._quit_if)
        else:
            self.exit()

    def _quit_if(self, stop: Optional[bool]) -> None:
        if stop:
            self.exit()

    def action_follow(self) -> None:
        self.table.action_follow()


def run_tui(
    source: EventSource,
    profile: Profile,
    title: str,
    *,
    header: Optional[RecordingHeader] = None,
    filter_text: str = "",
    control: Optional[LiveControl] = None,
    resend_target: Optional[Address] = None,
    payload_budget: Optional[PayloadBudget] = None,
    flow_bound: Optional[FlowBound] = None,
) -> None:
    """Run the TUI in this thread until the user quits, showing the events ``source``
    delivers (it runs in a worker thread); stops the source on the way out. ``header`` (the
    profile and routes of the session) goes into recordings written with `w`;
    ``filter_text`` (a valid filter) is applied from the start. ``control`` reaches the live
    session (intercepting, sending again); ``resend_target`` is the plugin `r` sends to
    without one; ``payload_budget`` bounds a live session's payloads, ``flow_bound`` its
    flows."""
    app = GolemProxyApp(
        source,
        profile,
        title,
        header=header,
        filter_text=filter_text,
        control=control,
        resend_target=resend_target,
        payload_budget=payload_budget,
        flow_bound=flow_bound,
    )
    try:
        app.run()
    finally:
        source.stop()
