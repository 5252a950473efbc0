"""The session the TUI shows: every event received, the flows built from them, and the view
(the flows that pass the current filter: view_filter.py), updated incrementally batch by
batch.

The model is plain Python and knows nothing of Textual: the app feeds it batches and tells
the widgets what changed; the widgets read it (attributes down).
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Optional

from golem_core.profiles import Profile

from ..analysis.call_rows import call_number, head_above, indented, of_call
from ..analysis.filters import Filter
from ..analysis.flows import Flow
from ..analysis.late_answers import noted_status, status_note
from ..analysis.tool_calls import (
    CallKey,
    attribution_refs,
    call_key,
    caused_by,
    is_tool_call,
    owner_key,
    shared_with,
)
from ..events import (
    ConnectionClosed,
    ConnectionOpened,
    Event,
    Outcome,
    StreamEnded,
    UpstreamStatus,
)
from ..terminal import safe_text
from .column_widths import ColumnWidths
from .compact import Compactor
from .event_log import CONNECTION, EventLog
from .flow_bound import FlowBound, forget_calls, index_remap
from .payloads import PayloadBudget
from .render import flow_label
from .saved_view import SavedView, view_of
from .settling import ExchangeTracker, whole_exchange
from .skimmed import SkimmedBodies
from .view_filter import FilteredView

__all__ = ["BatchResult", "SavedView", "SessionModel"]


@dataclass
class BatchResult:
    """What one batch changed: flows added to the view, rows whose content changed."""

    added: int = 0
    changed: set[int] = field(default_factory=set)
    """Indexes (into ``flows``) of flows created or updated by the batch."""
    events: int = 0
    let_go: int = 0
    """Older flows let go from memory once the batch was in (`golem_proxy.tui.flow_bound`):
    the indexes into ``flows`` and ``view`` changed."""


class SessionModel(FilteredView):
    """Flows and their events. ``view`` holds indexes into ``flows``, ascending. A flow's
    index is its number less one until older flows are let go (`flow_bound`): then
    `index_of` says where it is."""

    def __init__(
        self,
        profile: Profile,
        compactor: Optional[Compactor] = None,
        payload_budget: Optional[PayloadBudget] = None,
        flow_bound: Optional[FlowBound] = None,
    ) -> None:
        """With a ``compactor``, flows keep compact frames (`golem_proxy.tui.compact`) and
        the event list refers to them instead of holding a second copy. With a
        ``payload_budget`` (a live session), the payloads of the oldest large frames are
        released once the flows hold more than it keeps; with a ``flow_bound`` (a live
        session), the oldest settled flows are let go once there are more than it keeps."""
        self.profile = profile
        self.payload_budget = payload_budget
        self.flow_bound = flow_bound
        self._let_go = 0
        """Flows let go so far: a flow newer than all of them is at its number less one
        less this."""
        self._retry_at = 0
        """Flows there must be before letting go is tried again, when it last found fewer
        settled flows than it wanted (the rest pending or marked)."""
        self._let_go_under: dict[CallKey, int] = {}
        """By tool call still kept: how many of the GOLEM flows it caused were let go."""
        self.tracker = ExchangeTracker(profile)
        self.compactor = compactor
        self._log = EventLog()
        self._outcomes: dict[Outcome, Outcome] = {}
        self._interned: set[int] = set()
        """The ids of the outcomes kept in ``_outcomes`` (an outcome's own hash is computed
        in Python; a reader hands most flows the same "ok" object)."""
        self.view: array[int] = array("i")
        """Indexes into ``flows``, ascending: an array, 4 bytes a flow, where a list of
        ints cost 36."""
        self.filter_text = ""
        self._filter: Optional[Filter] = None
        self.skimmed = SkimmedBodies()
        """The flows the filter could not decide for numbers or blobs elided from their
        message: the status line counts them."""
        self.folded: set[CallKey] = set()
        """Tool calls whose GOLEM flows are folded away under their row (`toggle_fold`)."""
        self.widths = ColumnWidths()
        """The widest values so far, for the table's columns."""
        self.routes_down: dict[str, float] = {}
        """The routes whose upstream is down (not listening until it answers), since when."""
        self.loading = False
        """The source is still reading its file: a request whose answer is further on in
        it shows as ``loading``, not ``pending``."""

    @property
    def flows(self) -> list[Flow]:
        return self.tracker.flows

    def caused_by(self, flow: Flow) -> list[Flow]:
        """The GOLEM flows a tool call caused that are still kept (empty for any other
        flow; `caused_let_go` counts the others)."""
        return caused_by(flow, self.flows) if is_tool_call(flow) else []

    def call_rows(self, flow: Flow, reach: int = 10_000) -> dict[CallKey, int]:
        """The row numbers of the tool calls a GOLEM flow's frames name, as `show` names them
        (`cause_text`), found among the ``reach`` flows kept before it (a call comes before
        the GOLEM flows it causes); a call let go, or further back, is not named."""
        refs = attribution_refs(flow)
        index = self.index_of(flow)
        if not refs or index is None:
            return {}
        wanted = {(ref.conn, ref.index) for ref in refs}
        rows: dict[CallKey, int] = {}
        for earlier in reversed(self.flows[max(0, index - reach) : index]):
            key = call_key(earlier)
            if key in wanted:
                rows[key] = earlier.number
                if len(rows) == len(wanted):
                    break
        return rows

    def answer_row(self, flow: Flow, reach: int = 10_000) -> Optional[int]:
        """The row of the GOLEM exchange whose answer a tool call's result is, not its own
        (`FrameSeen.answer_of`), found among the ``reach`` flows kept before it; None: none
        named, or let go."""
        found = flow.response.answer_of if flow.response is not None else None
        index = self.index_of(flow) if found is not None else None
        if found is None or index is None:
            return None
        for earlier in reversed(self.flows[max(0, index - reach) : index]):
            request = earlier.request
            if (
                request is not None
                and earlier.conn == found.conn
                and earlier.route == found.route
                and request.index == found.index
            ):
                return earlier.number
        return None

    def shared_with(self, flow: Flow) -> list[Flow]:
        """The GOLEM flows still kept that a tool call may have caused, with other calls in
        flight (ambiguous: `tool_calls.shared_with`); empty for any other flow."""
        return shared_with(flow, self.flows) if is_tool_call(flow) else []

    def caused_let_go(self, flow: Flow) -> int:
        """How many GOLEM flows the tool call ``flow`` caused were let go from memory."""
        key = call_key(flow) if self._let_go_under else None
        return 0 if key is None else self._let_go_under.get(key, 0)

    def index_of(self, flow: Flow) -> Optional[int]:
        """Where ``flow`` is in ``flows`` (None: it was let go)."""
        index = self._index_of_number(flow.number)
        return index if index is not None and self.flows[index] is flow else None

    def flow_numbered(self, number: int) -> Flow:
        """The flow numbered ``number``. Raises LookupError when it was let go."""
        index = self._index_of_number(number)
        if index is None:
            raise LookupError(f"flow {number} was let go from memory")
        return self.flows[index]

    def _index_of_number(self, number: int) -> Optional[int]:
        flows = self.flows
        at = number - 1 - self._let_go
        if 0 <= at < len(flows) and flows[at].number == number:
            return at  # every flow newer than those let go
        # One kept while older ones went (pending, marked): the flows are in number order.
        low, high = 0, len(flows)
        while low < high:
            middle = (low + high) // 2
            if flows[middle].number < number:
                low = middle + 1
            else:
                high = middle
        return low if low < len(flows) and flows[low].number == number else None

    @property
    def events_missed(self) -> int:
        return self.tracker.events_missed

    def apply(self, events: Iterable[Event]) -> BatchResult:
        """Fold a batch of events in. Returns what changed."""
        result = BatchResult()
        first_new = len(self.flows)
        batch = events if isinstance(events, list) else list(events)
        result.events = len(batch)
        settle = self.tracker.settle
        at = 0
        while at < len(batch):
            # A request, its answer and their exchange in a row: one settled flow at once.
            exchange = whole_exchange(batch, at)
            flow = None if exchange is None else settle(exchange)
            if flow is not None:
                self._log.add_exchange(flow.number)
                at += 3
            else:
                flow = self._apply_one(batch[at], result)
                at += 1
                if flow is None:
                    continue
            index = flow.number - 1 if not self._let_go else self.index_of(flow)
            if index is None:
                continue  # a flow let go: what follows it is in no row
            if self.compactor is not None and not flow.pending:
                # Settled: its reader is done with its frames (a pending request's message
                # is still read when its answer comes).
                self.compactor.compact_flow(flow.request, flow.response)
            outcome = flow.outcome
            if outcome is not None and id(outcome) not in self._interned:
                # Most outcomes are one of a few ("ok", a handful of error codes): one object
                # of each, not one per exchange.
                kept = flow.outcome = self._outcomes.setdefault(outcome, outcome)
                self._interned.add(id(kept))
            result.changed.add(index)
        budget = self.payload_budget
        for index in sorted(result.changed):
            flow = self.flows[index]
            if budget is not None:
                budget.note(flow, self.profile_for)
            self.skimmed.note(flow)
            self._widen(flow)
            if index >= first_new:
                if self._matches(self.flows[index]):
                    self.view.append(index)
                    result.added += 1
            else:
                self._refilter(index)
        if budget is not None:
            # Once the batch is in: the flows it added are counted, the oldest go first.
            budget.enforce(self.profile_for)
        if self.flow_bound is not None:
            self._enforce_bound(self.flow_bound, result)
        return result

    def _enforce_bound(self, bound: FlowBound, result: BatchResult) -> None:
        """Let the oldest settled flows go while there are more than ``bound`` keeps, a
        chunk at a time, and bring every index the model and ``result`` hold up to date."""
        excess = bound.excess(len(self.flows))
        if not excess or len(self.flows) < self._retry_at:
            return
        before = self.flows
        gone = self.tracker.let_go(excess, keep=_marked)
        # Fewer than wanted: the rest are pending or marked; scan again a chunk later.
        self._retry_at = len(self.flows) + bound.chunk if len(gone) < excess else 0
        if not gone:
            return
        self._let_go += len(gone)
        bound.let_go += len(gone)
        result.let_go = len(gone)
        gone_ids = {id(flow) for flow in gone}
        remap = index_remap(before, gone, gone_ids)
        self._log.forget({flow.number for flow in gone})
        self.skimmed.forget(gone)
        if self.payload_budget is not None:
            self.payload_budget.let_go(gone_ids)
        calls_gone = forget_calls(self._let_go_under, gone, self.flows)
        if calls_gone & self.folded:  # the GOLEM flows of a folded call let go show again
            self.folded -= calls_gone
            self.view = array("i", (i for i, flow in enumerate(self.flows) if self._matches(flow)))
        else:
            self.view = array("i", (j for j in map(remap, self.view) if j >= 0))
        result.changed = {j for j in map(remap, result.changed) if j >= 0}

    def _widen(self, flow: Flow) -> None:
        """Widen the columns to ``flow``'s label and status (`ColumnWidths.widen`)."""
        outcome = flow.outcome
        interned = outcome is not None and id(outcome) in self._interned
        self.widths.widen(flow, self.status, interned)

    def _apply_one(self, event: Event, result: BatchResult) -> Optional[Flow]:
        """Fold one event in and note it; returns the flow it placed itself in, if any."""
        if isinstance(event, UpstreamStatus):
            # A route whose plugin stopped answering listens no more until it answers again:
            # the status line says so while it lasts (`routes_down`).
            if event.up:
                self.routes_down.pop(event.route, None)
            else:
                self.routes_down.setdefault(event.route, event.t)
        flow = self.tracker.apply(event)
        if self.tracker.also_changed:  # requests a gap or a close let go: shown again
            for other in self.tracker.also_changed:
                index = self.index_of(other)
                if index is not None:
                    result.changed.add(index)
            self.tracker.also_changed.clear()
        if flow is not None and self._let_go and self.index_of(flow) is None:
            flow = None  # let go (`flow_bound`): what follows it belongs to no row kept
        if isinstance(event, (ConnectionOpened, ConnectionClosed, StreamEnded)):
            # A connection's, not one row's: an end may settle several requests.
            self._log.add(event, CONNECTION)
            self.widths.connection(event.route, event.conn)
            if flow is not None:  # a close or an end leaves a request unanswered
                index = self.index_of(flow)
                if index is not None:
                    result.changed.add(index)
            return None
        # An answer's frame names its request's flow (the tap paired them): every event is
        # placed as it arrives.
        if flow is None:
            self._log.add(event, 0)
            return None
        self._log.add(event, flow.number, flow)
        return flow

    def end_input(self, what: str) -> set[int]:
        """Nothing more will come: ``what`` ended (`FlowTracker.end_input`), and the rows
        still waiting say so. Returns their indexes (the filter selects them as before)."""
        ended = set()
        for flow in self.tracker.end_input(what):
            index = self.index_of(flow)
            if index is not None:
                self._widen(flow)
                ended.add(index)
        return ended

    def status(self, flow: Flow) -> str:
        """The flow's status as shown (error codes come from the peer: made safe), with
        `status_note` after it for an answer out of turn."""
        if self.loading and flow.pending:
            return "loading"
        status = safe_text(flow.status(self.profile))
        if not flow.out_of_turn:
            return status
        # Decided as the frames were decoded (`Flow.out_of_turn`), said as `show` says it.
        note = status_note(flow, self.call_rows(flow), self.answer_row(flow))
        return noted_status(status, safe_text(note) if note is not None else None)

    def label(self, flow: Flow) -> str:
        """The method column: `flow_label`, with ``▸`` before a tool call folded shut, and
        after a GOLEM row shown away from its tool call's row the call it belongs to."""
        folded = bool(self.folded) and call_key(flow) in self.folded
        text = ("▸ " if folded else "") + flow_label(flow) + self._of_call(flow)
        self.widths.label(text)  # drawn wider next time
        return text

    def _of_call(self, flow: Flow) -> str:
        """`of_call` when the row above ``flow`` in the view stands under another call."""
        owner = owner_key(flow)
        if owner is None or not indented(flow):
            return ""
        index = self.index_of(flow)
        if index is None:  # let go from memory: no row to label
            return ""
        view, flows = self.view, self.flows
        position = bisect.bisect_left(view, index)
        if head_above(lambda row: flows[view[row]], position) == owner:
            return ""
        return of_call(flow, call_number(flows, index, owner))

    def profile_for(self, route: str) -> Profile:
        """The profile ``route``'s frames were typed with."""
        if self.compactor is None:
            return self.profile
        return self.compactor.route_profiles.get(route, self.profile)

    @property
    def events(self) -> list[Event]:
        """Every event received, in order (frames and exchanges are taken from the flows
        that hold them)."""
        return list(self._log.events(self.flow_numbered))

    def events_for_view(self) -> list[Event]:
        """The events behind the flows the filter selects (`selected`), with their
        connections' open and close events, in their original order: what a recording of
        just this view holds (but for the flows whose payloads were released:
        `view_to_save`)."""
        return self.view_to_save().events

    def view_to_save(self) -> SavedView:
        """The events of the flows the filter selects (`selected`: those folded away too)
        that can be written as they came, with their connections' open and close events, in
        order; a flow with a released payload is left out (and counted): its bytes are no
        longer here to write; so is one whose payload never reached the recording (a disk
        error). A payload the recording holds is checked against the file before the view is
        written (`SavedView.checked`, off the screen's thread) and read back as it is written
        (`payloads.with_payload`)."""
        flows = self.flows
        let_go = self.flow_bound.let_go if self.flow_bound is not None else 0
        return view_of((flows[i] for i in self.selected()), self._log, self.flow_numbered, let_go)


def _marked(flow: Flow) -> bool:
    """A marked flow is kept whatever the bound: the user asked to keep an eye on it."""
    return flow.marked
