"""Which of `FlowTracker`'s rows (flows.py) a step of the proxy's own (``--fault``,
``--intercept``: `FaultInjected`, `InterceptStep`) belongs to: the frame it acted on, as the
order of the events places it (a step is published right after the frame it went with)."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Optional, Union

from ..events import Direction, FaultInjected, InterceptKind, InterceptStep
from .flow import Flow

if TYPE_CHECKING:
    from .flows import Key

__all__ = ["FaultRows"]


class FaultRows:
    """Mixed into `FlowTracker`, whose rows these place the proxy's steps on."""

    _latest: dict[int, Flow]
    _framed: dict[tuple[int, Direction], Flow]
    _cut: dict[tuple[int, Direction], FaultInjected]
    _by_request: OrderedDict[Key, Flow]
    _requests_of: dict[tuple[int, Direction], dict[Key, None]]

    def _flow_for_fault(self, event: Union[FaultInjected, InterceptStep]) -> Optional[Flow]:
        """The row of the frame the proxy acted on, as the step's event places it: it is
        published right after that frame when the frame was sent or recorded as sent (a
        delay, a corruption, an error's withheld request, an edit, an acceptance), so it is
        the row of the connection's last frame that way; a frame not recorded (an answer
        withheld, held, or cut short) is the answer of the oldest request of its method still
        waiting on the connection whose answer the proxy has not decided on yet (none: no
        row); a request cut short is the framing error it becomes."""
        held = isinstance(event, InterceptStep) and event.kind is InterceptKind.HELD
        if held and event.direction is Direction.C2S:
            return None  # an intercepted request not recorded yet: its decision follows it
        side = (event.conn, event.direction)
        cut = isinstance(event, FaultInjected) and event.fault == "truncate"
        unrecorded = cut or (
            event.direction is Direction.S2C
            and (
                event.withheld
                or (
                    isinstance(event, InterceptStep)
                    and event.kind in (InterceptKind.HELD, InterceptKind.LOST)
                )
            )
        )
        if cut:
            assert isinstance(event, FaultInjected)
            self._cut[side] = event
            if event.direction is Direction.C2S:
                return None  # the request is the framing error it becomes
        if not unrecorded:
            return self._framed.get(side) or self._latest.get(event.conn)
        asked = (event.conn, event.direction.reverse)
        for key in self._requests_of.get(asked, {}):
            flow = self._by_request[key]
            if flow.method == event.method and not _answer_decided(flow):
                return flow
        # Its request is not waiting here (let go, or before this view): no row is its.
        return None


def _answer_decided(flow: Flow) -> bool:
    """Whether the proxy already decided the fate of ``flow``'s answer (a step on it other
    than holding it: the decision that follows a hold lands on the same row)."""
    return any(
        step.direction is Direction.S2C
        and not (isinstance(step, InterceptStep) and step.kind is InterceptKind.HELD)
        for step in flow.faults
    )
