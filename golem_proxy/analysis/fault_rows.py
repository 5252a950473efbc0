"""Which of `FlowTracker`'s rows (flows.py) a step of the proxy's own (``--fault``,
``--intercept``: `FaultInjected`, `InterceptStep`) belongs to: the frame it acted on, as the
order of the events places it (a step is published right after the frame it went with)."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Optional, Union

from golem_core.messages import JsonId
from golem_core.profiles.mcp import TOOLS_CALL

from ..events import Direction, FaultInjected, InterceptKind, InterceptStep
from .flow import Flow
from .settled_rows import call_of

if TYPE_CHECKING:
    from .flows import Key

__all__ = ["FaultRows"]

Step = Union[FaultInjected, InterceptStep]

RETURNED_KEPT = 1024
"""Tool calls answered kept in mind at most, for a step of the proxy's under one that lands
after it returned (the oldest let go: such a step is then said on its GOLEM row only)."""

_CHANGES_ANSWER = frozenset(("corrupt", InterceptKind.EDITED.label))
"""Steps that sent other bytes in an answer's place, which may then pair with no request."""


class FaultRows:
    """Mixed into `FlowTracker`, whose rows these place the proxy's steps on."""

    keep: bool
    _latest: dict[int, Flow]
    _framed: dict[tuple[int, Direction], Flow]
    _cut: dict[tuple[int, Direction], tuple[Step, ...]]
    _undecided: dict[tuple[int, Direction], tuple[Step, ...]]
    _by_request: OrderedDict[Key, Flow]
    _requests_of: dict[tuple[int, Direction], dict[Key, None]]
    _ready_numbers: set[int]
    _returned: OrderedDict[Key, Flow]
    also_changed: list[Flow]

    def _place_step(self, event: Step) -> Optional[Flow]:
        """Put ``event`` on its row (`_flow_for_fault`), and return that row. A delay of a
        frame then withheld or cut short (``withheld``) waits for the step that decided the
        frame, which follows it, and goes where that one goes: its frame was never recorded,
        so the connection's last frame is not its."""
        side = (event.conn, event.direction)
        if isinstance(event, FaultInjected) and event.fault == "delay" and event.withheld:
            self._undecided[side] = (*self._undecided.get(side, ()), event)
            return None
        steps = (*self._undecided.pop(side, ()), event)
        if isinstance(event, FaultInjected) and event.fault == "truncate":
            self._cut[side] = steps  # its framing error, when it comes, is the proxy's doing
        flow = self._flow_for_fault(event)
        if flow is None:
            return None
        for row in (flow, *self._sharing_its_id(event, flow)):
            row.faults += steps
            self._under_call(row, steps)
        if event.direction is Direction.S2C and event.fault in _CHANGES_ANSWER:
            self._answer_changed(flow, event, steps)
        return flow

    def _flow_for_fault(self, event: Step) -> Optional[Flow]:
        """The row of the frame the proxy acted on, as the step's event places it: it is
        published right after that frame when the frame was sent or recorded as sent (a
        delay, a corruption, an error's withheld request, an edit, an acceptance), so it is
        the row of the connection's last frame that way, while that row is still held (a
        row a streaming reader handed on was not the frame just before: placed there, the
        step would show in a view that reads the rows at the end, not in one that showed
        them as they came); a frame not recorded (an answer withheld, held, or cut short) is
        the answer of the oldest request of its method still waiting on the connection whose
        answer the proxy has not decided on yet (none: no row); a request cut short is the
        framing error it becomes."""
        held = isinstance(event, InterceptStep) and event.kind is InterceptKind.HELD
        if held and event.direction is Direction.C2S:
            return None  # an intercepted request not recorded yet: its decision follows it
        cut = isinstance(event, FaultInjected) and event.fault == "truncate"
        if cut and event.direction is Direction.C2S:
            return None  # the request is the framing error it becomes
        if not _unrecorded(event):
            flow = self._framed.get((event.conn, event.direction)) or self._latest.get(event.conn)
            held_here = flow is not None and (
                self.keep or flow.pending or flow.number in self._ready_numbers
            )
            return flow if held_here else None
        return self._waiting_answer(event)

    def _waiting_answer(self, event: Step) -> Optional[Flow]:
        """The request still waiting on its connection for the answer ``event`` acted on,
        whose answer the proxy has not decided on yet: the one of the id the answer carried
        (`ProxyAction.message_id`: a server may answer out of order), or, for an answer
        without one (or a step recorded before steps carried it), the oldest of its method."""
        found = self._waiting_answers(event)
        return found[0] if found else None

    def _waiting_answers(self, event: Step) -> list[Flow]:
        """`_waiting_answer`, and where the answer's id was pipelined more than once
        (`ProxyAction.among`), the others waiting with it: which of them it answers, the
        wire does not say (the method the proxy named is the oldest's, a guess), so each
        is a candidate, oldest first, as many as waited with it."""
        asked = (event.conn, event.direction.reverse)
        ident = event.message_id
        shared = ident is not None and event.among > 1
        found: list[Flow] = []
        for key in self._requests_of.get(asked, {}):
            flow = self._by_request[key]
            if _answer_decided(flow):
                continue
            if ident is None and flow.method == event.method:
                return [flow]
            if ident is None or not _same_id(flow, ident):
                continue
            if shared:
                found.append(flow)
                if len(found) == event.among:
                    break
            elif _same_method(flow, event):
                # (A request the server sent with the same id, withheld, is not its answer.)
                return [flow]
        # None: its request is not waiting here (let go, or before this view): no row is its.
        return found

    def _sharing_its_id(self, event: Step, flow: Flow) -> list[Flow]:
        """The rows other than ``flow`` that the answer ``event`` withheld may have been for,
        as ``flow`` may (`_waiting_answers`): the step is said on each, and its words say it
        may be another's (proxy_notes.py)."""
        if event.among <= 1 or not _unrecorded(event):
            return []
        return [row for row in self._waiting_answers(event) if row is not flow]

    def _answer_changed(self, flow: Flow, event: Step, steps: tuple[Step, ...]) -> None:
        """An answer the proxy changed (``flow``: its row) that pairs with no request any
        more (an orphan): the request it answered waits on, unanswered though its receiver
        answered it. Its row says so (`Flow.answer_changed_in`), the proxy's doing."""
        if flow.request is not None:
            return  # it answers its request still
        asked = self._waiting_answer(event)
        if asked is not None:
            asked.faults += steps
            asked.answer_changed_in = flow.number
            self._under_call(asked, steps)

    def _under_call(self, flow: Flow, steps: tuple[Step, ...]) -> None:
        """Say ``steps``, which landed on GOLEM row ``flow``, on the row of the tool call its
        frames name (`FrameSeen.tool_calls`, decided as its request reached the proxy), when
        they name one call alone: what its result says may be the proxy's doing. A call that
        returned already (one of the last `RETURNED_KEPT`) gets them too, after the time it
        returned, which its words say (`under_words`)."""
        frame = flow.request if flow.request is not None else flow.response
        key = call_of(frame) if frame is not None else None
        if key is None:
            return
        call = self._by_request.get(key)
        if call is None:
            call = self._returned.get(key)
            if call is None:
                return
            if self.keep:
                self.also_changed.append(call)  # a view showing it shows it again
        under = dict(call.proxy_under)
        under[flow.number] = (*under.get(flow.number, ()), *steps)
        call.proxy_under = tuple(under.items())

    def _call_returned(self, key: Key, flow: Flow) -> None:
        """``flow``, asked as frame ``key``, has its answer: when it is a tool call, a step
        of the proxy's under it may land still (`_under_call`)."""
        request = flow.request
        if request is not None and request.method == TOOLS_CALL:
            self._returned[key] = flow
            if len(self._returned) > RETURNED_KEPT:
                self._returned.popitem(last=False)


def _same_id(flow: Flow, ident: JsonId) -> bool:
    """Whether ``flow``'s request carries ``ident`` (of its type: ``1`` is no ``"1"``)."""
    request = flow.request
    if request is None:
        return False
    found = request.message.id
    return type(found) is type(ident) and found == ident


def _answer_decided(flow: Flow) -> bool:
    """Whether the proxy already decided the fate of ``flow``'s answer (a step on it other
    than holding it: the decision that follows a hold lands on the same row). A step on
    an answer that may have been another's (`ProxyAction.among`) decides no row's."""
    return any(
        step.direction is Direction.S2C
        and step.among <= 1
        and not (isinstance(step, InterceptStep) and step.kind is InterceptKind.HELD)
        for step in flow.faults
    )


def _unrecorded(event: Step) -> bool:
    """Whether the frame ``event`` acted on was never recorded as it came: an answer
    withheld, held or lost, or a frame cut short."""
    if isinstance(event, FaultInjected) and event.fault == "truncate":
        return True
    if event.server_request:
        return False  # recorded as it came, as a client's request withheld is
    return event.direction is Direction.S2C and (
        event.withheld
        or (
            isinstance(event, InterceptStep)
            and event.kind in (InterceptKind.HELD, InterceptKind.LOST)
        )
    )


def _same_method(flow: Flow, event: Step) -> bool:
    """Whether the frame ``event`` acted on may answer ``flow``'s request: of its method, as
    the proxy paired it live, when it said one."""
    return event.method is None or flow.method == event.method
