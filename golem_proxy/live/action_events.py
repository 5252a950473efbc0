"""The events of what the proxy did to one connection's frames on a faulted or intercepted route
(`golem_proxy.proxy_actions`): each fault that hit a frame and each step of a frame held by
``--intercept``, stamped with the connection's direction and the time, and published in order
after what was observed before them (`Connection.publish_in_order`), so that each lands on the
flow of the frame it acted on.

Apart from fault_relay.py, which decides when each is said, because building and placing the
events is the same for every decision.
"""

from __future__ import annotations

from typing import Callable, Optional

from golem_core.messages import JsonId

from ..events import Direction, Event, FaultInjected, InterceptKind, InterceptStep, Where
from .connection import Connection
from .faults import FrameAction
from .intercept import Ruling

__all__ = ["ActionEvents"]


class ActionEvents:
    """Publishes, through ``publish``, what the proxy did to ``conn``'s frames, each at
    ``now()``."""

    def __init__(
        self, conn: Connection, now: Callable[[], float], publish: Callable[[Event], None]
    ) -> None:
        self.conn = conn
        self.now = now
        self.publish = publish

    def where(self, direction: Direction) -> Where:
        """This connection's ``direction``, now."""
        return Where(
            conn=self.conn.conn, route=self.conn.route.name, direction=direction, t=self.now()
        )

    def faults(self, direction: Direction, action: FrameAction) -> None:
        """Publish the events of the faults that hit a frame, in order after what was observed
        so far: called once the frame was (or, withheld, was recorded as) sent, so they land
        on its flow, not on the connection's flow before it. A delay of a frame then withheld
        or cut short says it was not forwarded either (``withheld``): its frame is not
        recorded as sent, and its step is placed with the one that decided it, not on the
        connection's last frame (analysis/fault_rows.py)."""
        unsent = action.withhold is not None or action.truncate_at is not None
        delays = iter(action.delays)
        rule = action.withhold
        for fault, detail in action.events:
            withheld = (fault == "delay" and unsent) or (
                rule is not None and fault == rule.kind.value
            )
            held = None
            if fault == "delay":  # its share of the hold the relay measured
                held = self._share(action, next(delays))
            self._publish(direction, action, fault, detail, held, withheld)

    def delays_ended(self, direction: Direction, action: FrameAction) -> None:
        """Publish the delays of a frame whose connection ended while they held it, after the
        frame, recorded undelivered (`Unsent.lost`): ``action.held`` is the hold until then.
        The proxy held it, which every view says on its row (the frame's receiver is not the
        one that kept it); each detail says the connection ended during the hold. Nothing
        decided the frame after them (a drop, a cut, a corruption never came to be), so they
        are not marked ``withheld``: they land on the frame's row as the delay of a frame sent
        does, and the faults that were to follow them are not said."""
        ended = f"; the connection ended {action.held * 1000:,.0f} ms into it: never sent"
        delays = iter(action.delays)
        for fault, detail in action.events:
            if fault == "delay":
                held = self._share(action, next(delays))
                self._publish(direction, action, fault, detail + ended, held, False)

    @staticmethod
    def _share(action: FrameAction, delay: float) -> float:
        """The share of the hold the relay measured (``action.held``) of one ``delay`` of
        ``action`` (several delays of one frame share it by their amounts)."""
        share = delay / action.delay if action.delay else 1.0
        return round(action.held * share, 6)

    def _publish(
        self,
        direction: Direction,
        action: FrameAction,
        fault: str,
        detail: str,
        held: Optional[float],
        withheld: bool,
    ) -> None:
        self.conn.publish_in_order(
            self.publish,
            FaultInjected(
                **self.where(direction),
                fault=fault,
                detail=detail,
                held_s=held,
                # Of an answer whose id several requests waited with, the method is a
                # guess (the oldest's): not said.
                method=action.method if action.among <= 1 else None,
                message_id=action.ident,
                among=action.among,
                server_request=action.server_request,
                withheld=withheld,
            ),
        )

    def step(
        self,
        direction: Direction,
        kind: InterceptKind,
        detail: str,
        method: Optional[str],
        withheld: bool = False,
        ruling: Optional[Ruling] = None,
        message_id: JsonId = None,
    ) -> None:
        """Publish an intercept step (``ruling``: the decision it carried out, whose
        ``original`` and ``redacted`` it takes; ``message_id``: the held message's id)."""
        event = InterceptStep(
            **self.where(direction),
            kind=kind,
            detail=detail,
            method=method,
            withheld=withheld,
            message_id=message_id,
            original=ruling.original if ruling is not None else b"",
            redacted=ruling.redacted if ruling is not None else (),
        )
        self.conn.publish_in_order(self.publish, event)
