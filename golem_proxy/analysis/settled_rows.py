"""Which of `FlowTracker`'s rows (flows.py) are settled, and handing them on: for a reader
streaming a trace (no ``keep``), each row once it is settled and no older row still in flight
holds it back, in number order within a bound (`HOLD_BACK`); at the end, what is left, with the
requests still waiting saying that the input ended (`end_input`, the decision every view shares)."""

from __future__ import annotations

import heapq
from collections import OrderedDict
from typing import TYPE_CHECKING, Optional

from ..events import Direction, FrameSeen
from .flow import Flow

if TYPE_CHECKING:
    from .flows import Key

__all__ = ["HOLD_BACK", "SettledRows", "call_of"]

HOLD_BACK = 1024
"""Settled rows a streaming reader keeps behind the oldest row still in flight, to hand rows on
in number order; past that they go on ahead of it (`FlowTracker.take_settled`)."""


class SettledRows:
    """Mixed into `FlowTracker`, whose rows in flight and settled these read."""

    keep: bool
    created: int
    _ready: list[tuple[int, Flow]]
    _ready_numbers: set[int]
    _by_request: OrderedDict[Key, Flow]
    _requests_of: dict[tuple[int, Direction], dict[Key, None]]
    _asked_under: dict[Key, dict[Key, None]]
    _held_under: set[Key]

    def take_settled(self, touched: Optional[Flow]) -> list[Flow]:
        """Remove and return, in number order, the settled flows (answered, never to be
        answered, a framing error, a gap) that no older flow still in flight holds back,
        except ``touched``: the flow of the last event, which the events right after it may
        still add to (a notification's violations, a framing error's). Rows keep their order
        (a tool call before the GOLEM flows it caused) as long as at most `HOLD_BACK` settled
        rows wait behind one in flight; past that the oldest settled go on ahead of it, so
        what is held is bounded whatever the trace. Without ``keep`` only."""
        ready = self._ready
        oldest = next(iter(self._by_request.values()), None)
        limit = oldest.number if oldest is not None else self.created + 1
        taken: list[Flow] = []
        while ready and (ready[0][0] < limit or len(ready) > HOLD_BACK):
            flow = ready[0][1]
            if flow is touched or (len(ready) <= HOLD_BACK and self._steps_may_come(flow, touched)):
                break
            heapq.heappop(ready)
            self._ready_numbers.discard(flow.number)
            self._forget_call(flow)
            taken.append(flow)
        return taken

    def asked_under(self, frame: FrameSeen, key: Key) -> None:
        """A request (frame ``key``) waits for its answer under the one tool call it names,
        which waits too, or returned while the proxy held this request on its way
        (`returned_holding`): until it is answered, a step of the proxy's on it may land on
        the call's row after the call returned (`FaultRows._under_call`), which is held till
        then (`take_settled`). Without ``keep`` only."""
        if self.keep:
            return
        call = call_of(frame)
        held = self._held_under and self._held_read(frame)
        if call is not None and (call in self._by_request or (held and call in held)):
            self._asked_under.setdefault(call, {})[key] = None

    def returned_holding(self, call: Key, answer: FrameSeen) -> None:
        """Tool call ``call`` returned with ``answer``: when the proxy still held a GOLEM
        request of the call's on its way (`FrameSeen.held_under`, the session's decision),
        that request is read after this answer, and the call's row is held until it is
        (`asked_under`), then while it waits for its answer, as a request asked before the
        call returned. Without ``keep`` only."""
        if answer.held_under and not self.keep:
            self._held_under.add(call)

    def _held_read(self, frame: FrameSeen) -> set[Key]:
        """The calls that returned holding a request (`returned_holding`) that ``frame``, a
        request read now, names: it is theirs, held no more."""
        found = set()
        for ref in frame.tool_calls or ():
            call = (ref.conn, Direction.C2S, ref.index)
            if call in self._held_under:
                self._held_under.discard(call)
                found.add(call)
        return found

    def _steps_may_come(self, flow: Flow, touched: Optional[Flow]) -> bool:
        """Whether a step of the proxy's may still land on tool call ``flow``: a request
        under it waits still, or is ``touched`` (answered by the last event, a step on its
        answer follows it)."""
        request = flow.request
        if request is None:
            return False
        call = (flow.conn, request.direction, request.index)
        if call in self._held_under:
            return True  # its request held on its way is not read yet
        under = self._asked_under.get(call)
        if not under:
            return False
        while under:  # those answered let go from the oldest: each looked at once
            oldest = next(iter(under))
            if oldest in self._by_request:
                return True
            del under[oldest]
        asked = touched.request if touched is not None else None
        return asked is not None and call == call_of(asked)

    def _forget_call(self, flow: Flow) -> None:
        request = flow.request
        if request is not None and (self._asked_under or self._held_under):
            self._asked_under.pop((flow.conn, request.direction, request.index), None)
            self._held_under.discard((flow.conn, request.direction, request.index))

    def holds(self, flow: Flow) -> bool:
        """Whether ``flow`` is still here, not handed on by `take_settled` (without ``keep``)."""
        return flow.pending or flow.number in self._ready_numbers

    def take_rest(self, ended: bool = True) -> list[Flow]:
        """Every flow not handed on yet, settled or still waiting for an answer, in number
        order (what a trace read to its end leaves: those waiting say the recording ended,
        `end_input`, unless not ``ended``: its writer is still writing it, and their answers
        may come yet), and forget them."""
        waiting = self.end_input() if ended else sorted(self._by_request.values(), key=_number)
        rest = [flow for _, flow in self._ready] + waiting
        self._ready.clear()
        self._ready_numbers.clear()
        self._by_request.clear()
        self._requests_of.clear()
        self._asked_under.clear()
        self._held_under.clear()
        rest.sort(key=_number)
        return rest

    def end_input(self, what: str = "recording") -> list[Flow]:
        """Nothing more will be read: ``what`` ended (``recording``: it was read to its end,
        or is read no more; ``session``: a live view's session). Each request still waiting
        for its answer stays pending as it was left and says so (`Flow.ended_waiting`): the
        one decision every view shares, `show` at the end of a file as the TUI when it stops
        reading. Returns those flows, in number order."""
        waiting = sorted(self._by_request.values(), key=_number)
        for flow in waiting:
            flow.ended_waiting = what
        return waiting

    def _settled(self, flow: Flow) -> Flow:
        if not self.keep:
            heapq.heappush(self._ready, (flow.number, flow))
            self._ready_numbers.add(flow.number)
        return flow


def _number(flow: Flow) -> int:
    return flow.number


def call_of(frame: FrameSeen) -> Optional[Key]:
    """The frame key of the one tool call ``frame`` names (`FrameSeen.tool_calls`), if it
    names one alone."""
    calls = frame.tool_calls
    if calls is None or len(calls) != 1:
        return None
    return (calls[0].conn, Direction.C2S, calls[0].index)
