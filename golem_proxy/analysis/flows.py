"""Flows: the rows every view shows. A flow is one request and its response (or a request
still pending, a notification, an orphan response, a framing error, a gap in what was
observed, a GOLEM connection of `golem-proxy mcp` that ended before a byte crossed it),
built incrementally from the event stream. Either peer may ask: a JSON-RPC server's request
travels s2c and its answer c2s; the frame's message, not its direction, says which it is
(`FrameSeen.is_request`).

`FlowTracker.apply()` is the single place where events become rows, used alike by the live
log, `show`, `stats`, the TUI and the recording readers, so live and offline views agree. A
row and how views read it (`Flow`) is in `golem_proxy.analysis.flow`, re-exported here.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import Callable, Optional

from golem_core.pairing import R_ORPHAN_RESPONSE
from golem_core.profiles import Profile

from ..events import (
    BytesDiscarded,
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    ExchangeCompleted,
    FaultInjected,
    FrameSeen,
    FramingErrorSeen,
    GapReason,
    InterceptStep,
    ObservationLost,
    ProcessOutput,
    StreamEnded,
    ViolationSeen,
)
from ..frame_runs import numbers_in
from ..recording.held_frames import add_in_order, forget_in_group
from .connection_counts import ConnectionCounts
from .fault_rows import FaultRows, Step
from .flow import Flow
from .placeholder_calls import recorded_falsely
from .proxy_closes import closed_by_proxy
from .server_stderr import ServerStderrs
from .settled_rows import SettledRows

__all__ = ["ORPHAN_RULE", "Flow", "FlowTracker"]

Key = tuple[int, Direction, int]
"""A frame's connection, direction and number."""

ORPHAN_RULE = R_ORPHAN_RESPONSE.id
"""Rule id the tap uses for a response that answers no outstanding request."""


class FlowTracker(SettledRows, FaultRows):
    """Builds flows and per-connection counters (`ConnectionCounts`) from events, in arrival
    order.

    It pairs nothing: a frame says what the tap decided (`FrameSeen.expects_answer`,
    ``answers``, ``orphan``), and the tracker only looks up the row a frame belongs to. What it
    holds besides the rows is what is in flight: requests waiting for their answer, answers
    waiting for their exchange event, the last unpaired row of each connection and direction
    (its violations follow it); all of a connection's is let go when it closes.

    With ``keep`` (the TUI), every flow stays in ``flows``. Without it (a reader streaming a
    trace), ``flows`` stays empty: `take_settled` hands each row on once it is settled and
    `in_flight` gives what is still waiting, so memory is what is in flight, not the trace."""

    def __init__(self, profile: Profile, *, keep: bool = True) -> None:
        self.profile = profile
        self.keep = keep
        self.flows: list[Flow] = []
        """Every flow in the order it was created (with ``keep``; else empty)."""
        self.created = 0
        self._counts = ConnectionCounts()
        self.connections = self._counts.known
        """The connections known (without ``keep``: those not closed yet)."""
        self.events_missed = 0
        self.observer = 0
        """The observing process recording now: how many restarts were read so far."""
        # Settled rows not handed on yet (without ``keep``): a heap by number.
        self._ready: list[tuple[int, Flow]] = []
        self._ready_numbers: set[int] = set()
        # Keyed by (conn, direction, frame index): a client's frame 3 and a server's frame 3
        # may both be requests (or both answers) on a JSON-RPC connection. An ordered dict:
        # `take_settled` looks for the oldest in flight at each row read, and a dict's first
        # key is found past every key deleted before it.
        self._by_request: OrderedDict[Key, Flow] = OrderedDict()
        # The keys of `_by_request` (by connection and direction, in the order asked: ordered
        # sets, `add_in_order`) and of `_answers` (by connection), so that a close looks at
        # its own (scanning every request in flight at each close made a trace of many
        # connections, each closed with a request unanswered, quadratic: 20,000 took 19 s),
        # and a gap of `GapReason.EVICTED` lets the oldest go.
        self._requests_of: dict[tuple[int, Direction], dict[Key, None]] = {}
        self._answers_of: dict[int, set[Key]] = {}
        # An answer the tap paired, until its exchange event: the row it belongs to (None when
        # its request came before this view started, a tailed file).
        self._answers: dict[tuple[int, Direction, int], Optional[Flow]] = {}
        # The last row made of one frame (a notification, an orphan, an answer to a request
        # too large to observe), until the violations that follow its frame are attached.
        self._last_unpaired: dict[tuple[int, Direction], tuple[int, Flow]] = {}
        # The tap follows a framing error with its violation (no frame index): keep the row.
        self._frame_errors: dict[tuple[int, Direction], Flow] = {}
        # Each connection's newest row: where a fault the proxy injected is told when no
        # frame of its places it (`_flow_for_fault`).
        self._latest: dict[int, Flow] = {}
        # The row of each connection's and direction's last frame (an answer's is its
        # request's): the proxy's step on a frame it sent (or recorded as sent) follows it.
        self._framed: dict[tuple[int, Direction], Flow] = {}
        # A frame the proxy cut (``--fault truncate``) before it was read: its framing error
        # row, when it comes, is the proxy's doing.
        self._cut: dict[tuple[int, Direction], tuple[Step, ...]] = {}
        # The delays of a frame then withheld or cut short, until the step that decided it.
        self._undecided: dict[tuple[int, Direction], tuple[Step, ...]] = {}
        # The tool calls answered last, for a step of the proxy's under one that comes after.
        self._returned: OrderedDict[Key, Flow] = OrderedDict()
        # Without ``keep``: the requests asked under each tool call waiting (`asked_under`).
        self._asked_under: dict[Key, dict[Key, None]] = {}
        # Without ``keep``: the tool calls answered while the proxy held a GOLEM request of
        # theirs on its way (`FrameSeen.held_under`), until that request is read.
        self._held_under: set[Key] = set()
        self._stderr = ServerStderrs()
        self.on_output: Optional[Callable[[ProcessOutput], None]] = None
        """Told every chunk a wrapped server wrote to its stderr, as it is read (the
        ``server_stderr`` table of `query` and `export --format parquet`)."""
        self.also_changed: list[Flow] = []
        """With ``keep``: rows an event settled besides the one `apply` returns (the requests
        a gap or a close let go), for a view that shows its rows to show them again; its
        reader clears it."""

    @property
    def connections_seen(self) -> int:
        """Connections known so far, closed ones included."""
        return self._counts.seen

    def apply(self, event: Event) -> Optional[Flow]:
        """Fold one event in; return the flow it created, changed or belongs to, if any."""
        if isinstance(event, FrameSeen):
            return self._frame(event)
        if isinstance(event, ExchangeCompleted):
            return self._exchange(event)
        if isinstance(event, ViolationSeen):
            return self._violation(event)
        if isinstance(event, FramingErrorSeen):
            flow = self._new_flow(event.conn, event.route)
            flow.frame_error = event
            cut = self._cut.pop((event.conn, event.direction), None)
            if cut is not None:
                flow.faults += cut
            self._frame_errors[(event.conn, event.direction)] = flow
            self._counts.count_bytes(event.conn, event.direction, len(event.raw), self.observer)
            return self._settled(flow)
        if isinstance(event, BytesDiscarded):
            self._counts.count_bytes(event.conn, event.direction, len(event.raw), self.observer)
            return None
        if isinstance(event, ConnectionOpened):
            self._counts.opened(event, self.observer)
            return None
        if isinstance(event, ConnectionClosed):
            return self._closed(event)
        if isinstance(event, StreamEnded):
            return self._ended(event)
        if isinstance(event, ObservationLost):
            if event.conn == 0 and event.reason is GapReason.RESTARTED:
                self.observer += 1  # the session's line: a new observing process records on
            evicted = event.reason is GapReason.EVICTED  # its size counts requests
            if evicted:
                self._let_go(event)
            elif event.answers is not None:
                self._answered_in(event)
            flow = self._new_flow(event.conn, event.route)
            flow.gap = event
            size = 0 if evicted else event.size
            self._counts.count_bytes(event.conn, event.direction, size, self.observer)
            return self._settled(flow)
        if isinstance(event, ProcessOutput):
            self._stderr.add(event)
            if self.on_output is not None:
                self.on_output(event)
            return None
        if isinstance(event, (FaultInjected, InterceptStep)):
            return self._place_step(event)
        self.events_missed += getattr(event, "count", 0)
        return None

    def let_go(self, count: int, keep: Callable[[Flow], bool] = lambda flow: False) -> list[Flow]:
        """Remove from ``flows`` (with ``keep``: a live TUI's bound) the ``count`` oldest
        flows that are settled and that ``keep`` does not keep, and forget the rows it holds
        for what may follow them (a connection's newest row, the last unpaired row, a framing
        error's row): what comes for them later is placed in no row. A pending flow stays,
        so that its answer still finds it. Returns the flows let go, oldest first; ``flows``
        is a new list."""
        gone: list[Flow] = []
        kept: list[Flow] = []
        flows = self.flows
        at = 0
        while at < len(flows) and len(gone) < count:
            flow = flows[at]
            at += 1
            (kept if flow.pending or keep(flow) else gone).append(flow)
        if not gone:
            return gone
        kept.extend(flows[at:])
        self.flows = kept
        ids = {id(flow) for flow in gone}
        for conn in [conn for conn, flow in self._latest.items() if id(flow) in ids]:
            del self._latest[conn]
        for side in [side for side, flow in self._framed.items() if id(flow) in ids]:
            del self._framed[side]
        for key in [key for key, (_, flow) in self._last_unpaired.items() if id(flow) in ids]:
            del self._last_unpaired[key]
        for key in [key for key, flow in self._frame_errors.items() if id(flow) in ids]:
            del self._frame_errors[key]
        return gone

    def _let_go(self, gap: ObservationLost) -> None:
        """Requests of the gap's connection and direction were let go (`GapReason.EVICTED`):
        those the gap names (the reader's decoder names those it let go, and the live tap
        those it did), else the ``gap.size`` oldest. No answer will be paired with them, and
        none was found missing; each row is settled as it is (`Flow.let_go`)."""
        keys = self._requests_of.get((gap.conn, gap.direction), {})
        if gap.frames is None:
            named = list(itertools.islice(keys, max(gap.size, 0)))
        else:
            named = [
                key
                for key in ((gap.conn, gap.direction, n) for n in numbers_in(gap.frames))
                if key in keys
            ]
        for key in named:
            flow = self._by_request.pop(key)
            forget_in_group(self._requests_of, key[:2], key)
            self._release(flow)

    def _answered_in(self, gap: ObservationLost) -> None:
        """The gap is a frame too large to observe that answers the request it names (the
        tap's decision, `ObservationLost.answers`): that request waits no more, answered."""
        if gap.answers is None:
            return
        key = (gap.conn, gap.direction.reverse, gap.answers)
        if key not in self._requests_of.get(key[:2], ()):
            return  # not in this trace (a tailed file), or settled already (a damaged file)
        flow = self._by_request.pop(key)
        forget_in_group(self._requests_of, key[:2], key)
        flow.answered_in = gap
        self._settled(flow)
        if self.keep:
            self.also_changed.append(flow)

    def _release(self, flow: Flow) -> None:
        """``flow``'s request waits no more, unanswered and not in error (`Flow.let_go`)."""
        flow.let_go = True
        self._settled(flow)
        if self.keep:
            self.also_changed.append(flow)

    def _request_number(self, key: Key) -> int:
        return self._by_request[key].number

    def _new_flow(self, conn: int, route: str) -> Flow:
        self.created += 1
        flow = Flow(self.created, conn, route)
        self._latest[conn] = flow
        if self.keep:
            self.flows.append(flow)
        return flow

    def _frame(self, frame: FrameSeen) -> Optional[Flow]:
        self._counts.count_frame(frame, self.observer)
        key = (frame.conn, frame.direction, frame.index)
        if frame.answers is not None:
            # Its row is the request's; it is filled in by the exchange event that follows.
            asked = (frame.conn, frame.direction.reverse, frame.answers)
            flow = self._by_request.get(asked)
            self._answers[key] = flow
            self._answers_of.setdefault(frame.conn, set()).add(key)
            if flow is not None:  # answered: no gap of the proxy's lets it go any more
                forget_in_group(self._requests_of, asked[:2], asked)
                self._framed[(frame.conn, frame.direction)] = flow
            return flow
        flow = self._new_flow(frame.conn, frame.route)
        self._framed[(frame.conn, frame.direction)] = flow
        if frame.is_request:
            flow.request = frame
            if frame.expects_answer:
                older = self._by_request.pop(key, None)
                if older is not None:
                    # A number read again (a damaged file): the newer is the newest asked, as
                    # for the recording's readers (`HeldFrames`); no answer can name the older
                    # any more, which is a row let go as it is, not dropped.
                    forget_in_group(self._requests_of, key[:2], key)
                    self._release(older)
                self._by_request[key] = flow
                add_in_order(self._requests_of, (frame.conn, frame.direction), key)
                self.asked_under(frame, key)
                return flow
            flow.unanswerable = True  # complete as it is: never waits for an answer
        else:
            # An orphan, or the answer to a request too large to observe: a row of its own,
            # whose outcome is read against no request by the profile function the tap uses.
            flow.response = frame
            flow.outcome = self.profile.outcome(None, frame.message)
        self._last_unpaired[(frame.conn, frame.direction)] = (frame.index, flow)
        return self._settled(flow)

    def _exchange(self, exchange: ExchangeCompleted) -> Flow:
        request, response = exchange.request, exchange.response
        asked = (exchange.conn, request.direction, request.index)
        answered = (exchange.conn, response.direction, response.index)
        flow = self._by_request.pop(asked, None)
        pointed = self._answers.pop(answered, None)
        if pointed is not None and pointed is not flow and pointed.request is not None:
            # The answer named another request (a damaged file): that one waits again, as
            # it did before its answer came (a close finds it unanswered).
            other = (exchange.conn, pointed.request.direction, pointed.request.index)
            if self._by_request.get(other) is pointed:
                add_in_order(self._requests_of, (other[0], other[1]), other)
        forget_in_group(self._requests_of, asked[:2], asked)
        forget_in_group(self._answers_of, answered[0], answered)
        if flow is None:  # the request came before this view started (a tailed file)
            flow = self._new_flow(exchange.conn, exchange.route)
            flow.request = request
        flow.response = response
        flow.outcome = exchange.outcome
        flow.closed_unanswered = False
        flow.ended_waiting = ""
        self._stderr.answered(flow)
        self._call_returned(asked, flow)
        self.returned_holding(asked, response)
        return self._settled(flow)

    def _violation(self, event: ViolationSeen) -> Optional[Flow]:
        if event.direction is None:
            return None
        if event.frame_index is None:
            errored = self._frame_errors.get((event.conn, event.direction))
            if errored is None or errored.frame_error is None or errored.frame_error.t != event.t:
                return None
            errored.violations += (event.violation,)
            return errored
        key = (event.conn, event.direction, event.frame_index)
        # A request's, or its answer's (the pair's own checks name the answer).
        flow = self._by_request.get(key) or self._answers.get(key)
        if flow is not None:
            if not recorded_falsely(flow, event.violation.rule):
                flow.violations += (event.violation,)
            return flow
        index, noted = self._last_unpaired.get((event.conn, event.direction), (-1, None))
        if noted is not None and index == event.frame_index:
            noted.violations += (event.violation,)
            return noted
        return None  # a frame this view never saw (a tailed file)

    def _ended(self, event: StreamEnded) -> Optional[Flow]:
        """A side ended its stream: the requests the event names will have no answer (the
        tap's decision, `StreamEnded`), settled now rather than at the connection's close."""
        changed = None
        for index in event.unanswered:
            key = (event.conn, event.direction.reverse, index)
            if key not in self._requests_of.get(key[:2], ()):
                # Not waiting here: not in this trace (a file cut, a view's bound), let go, or
                # answered already (a damaged line names it): nothing to settle.
                continue
            flow = self._by_request.pop(key)
            forget_in_group(self._requests_of, key[:2], key)
            flow.closed_unanswered = True
            flow.unanswered_at = event.t
            flow.stream_ended = event
            self._stderr.unanswered(flow, "the server closed its output")
            if self.keep and changed is not None:
                self.also_changed.append(changed)
            changed = self._settled(flow)
        return changed

    def _closed(self, event: ConnectionClosed) -> Optional[Flow]:
        self._counts.closed(event)
        changed = None
        conn = event.conn
        asked = [key for sent in Direction for key in self._requests_of.pop((conn, sent), ())]
        for key in self._answers_of.pop(conn, ()):
            answered = self._answers.pop(key, None)
            request = answered.request if answered is not None else None
            if request is not None:
                # Its answer came, its exchange did not (a file cut or damaged between them).
                rkey = (conn, request.direction, request.index)
                if self._by_request.get(rkey) is answered:
                    asked.append(rkey)
        # In the order they were asked, as the rows are numbered.
        for key in sorted(set(asked), key=self._request_number):
            flow = self._by_request.pop(key)
            flow.closed_unanswered = True
            flow.unanswered_at = event.t
            self._stderr.unanswered(flow, f"the hop closed ({event.reason})")
            if self.keep and changed is not None:
                self.also_changed.append(changed)
            changed = self._settled(flow)
        self._stderr.forget(conn)
        for direction in Direction:
            self._last_unpaired.pop((conn, direction), None)
            self._frame_errors.pop((conn, direction), None)
        if event.tool_calls is not None:
            # Nothing crossed it, and the close says which tool calls it failed: a row.
            failed = self._new_flow(conn, event.route)
            failed.connection_failed = event
            changed = self._settled(failed)
        elif closed_by_proxy(event):
            cut = self._new_flow(conn, event.route)
            cut.closed_by_proxy = event
            changed = self._settled(cut)
        if not self.keep:
            # A streaming view keeps what is in flight, not every connection of the trace
            # (a million connections opened and closed held 298 MiB): of a closed one, its
            # number only (`ConnectionCounts.forget`).
            self._counts.forget(conn)
            self._latest.pop(conn, None)
            for direction in Direction:
                self._framed.pop((conn, direction), None)
        for direction in Direction:
            self._cut.pop((conn, direction), None)
            self._undecided.pop((conn, direction), None)
        return changed
