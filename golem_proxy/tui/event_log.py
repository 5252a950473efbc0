"""Every event the TUI received, in order, kept so that a view can be written back out as a
recording (`w`), at 4 bytes an event for what a flow already holds.

A flow holds its request frame, its response frame and what its exchange says (the frames,
the outcome, the violations); those events are not kept a second time but noted by
position: their flow's number and which of the three they are. Every other event (a
connection opened or closed, a violation, a fault) is kept as it came. A frame names its
flow as it arrives (the tap paired it), so every event is placed once, when it is added.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Callable, Optional

from ..analysis.flows import Flow
from ..events import Event, ExchangeCompleted, FrameSeen

__all__ = ["CONNECTION", "EventLog"]

CONNECTION = -1
"""The owner of a connection's open and close events (flows own theirs by number)."""

# What a position holds, in the two low bits of its entry (the owner is the rest).
_KEPT = 0
"""The event itself, in ``_kept``."""
_REQUEST = 1
_RESPONSE = 2
_EXCHANGE = 3

FlowOf = Callable[[int], Flow]
"""The model's flow numbered so (`SessionModel.flow_numbered`)."""


class EventLog:
    """Events by position: who owns each (a flow's number, `CONNECTION`, or 0: no one)
    and the event, kept or taken from its flow."""

    def __init__(self) -> None:
        self._where: array[int] = array("i")
        """For each position, ``owner * 4 + what``, in 4 bytes (flows up to 2**29)."""
        self._kept: dict[int, Event] = {}
        self._answer_at: dict[int, int] = {}
        """An answer's position by its flow's number, while the exchange that gives the flow
        its response is still to come (only what is in flight)."""
        self._unowned_answers: dict[int, int] = {}
        """The position of an answer whose request was never seen (dropped from a live
        queue, or before a followed file's start), by the answer's id: the exchange that
        follows makes its row, which then holds it (and may release its payload)."""

    def __len__(self) -> int:
        return len(self._where)

    def add(self, event: Event, owner: int, flow: Optional[Flow] = None) -> int:
        """Note the next event, owned by ``owner``; when its ``flow`` holds it (the flow's
        request or response frame, or its exchange), only by position. Returns its position.

        An answer's frame names its flow as it arrives (the tap paired it), but the flow holds
        it only once the exchange that follows is added: until then it is kept here."""
        position = len(self._where)
        if flow is None:
            self._where.append(owner * 4 + _KEPT)
            self._kept[position] = event
            if isinstance(event, FrameSeen) and event.answers is not None:
                self._unowned_answers[id(event)] = position
        elif event is flow.request:
            self._where.append(owner * 4 + _REQUEST)
        elif event is flow.response:
            self._where.append(owner * 4 + _RESPONSE)
        elif isinstance(event, ExchangeCompleted) and event.response is flow.response:
            self._where.append(owner * 4 + _EXCHANGE)
            answer = self._answer_at.pop(flow.number, None)
            if answer is None:
                answer = self._unowned_answers.pop(id(event.response), None)
            if answer is not None and self._kept.get(answer) is flow.response:
                del self._kept[answer]
                self._where[answer] = flow.number * 4 + _RESPONSE
        else:
            self._where.append(owner * 4 + _KEPT)
            self._kept[position] = event
            if isinstance(event, FrameSeen) and event.answers is not None:
                self._answer_at[flow.number] = position
        return position

    def add_exchange(self, number: int) -> None:
        """Note the next three events: flow ``number``'s request, its answer and their
        exchange, which the flow holds (`golem_proxy.tui.settling`)."""
        where = number * 4
        self._where.extend((where + _REQUEST, where + _RESPONSE, where + _EXCHANGE))

    def owner(self, position: int) -> int:
        return self._where[position] >> 2

    def event(self, position: int, flow_of: FlowOf) -> Event:
        """The event at ``position``; ``flow_of`` gives the model's flow by its number."""
        where = self._where[position]
        what = where & 3
        if what == _KEPT:
            return self._kept[position]
        flow = flow_of(where >> 2)
        if what == _REQUEST and flow.request is not None:
            return flow.request
        if what == _RESPONSE and flow.response is not None:
            return flow.response
        if flow.request is None or flow.response is None or flow.outcome is None:
            raise LookupError(f"flow {flow.number} holds no event {what}")  # pragma: no cover
        return ExchangeCompleted(
            conn=flow.conn,
            route=flow.route,
            request=flow.request,
            response=flow.response,
            outcome=flow.outcome,
        )

    def events(self, flow_of: FlowOf) -> Iterator[Event]:
        """Every event, in order."""
        return (self.event(position, flow_of) for position in range(len(self._where)))

    def events_of(
        self,
        numbers: set[int],
        conns: set[int],
        flow_of: FlowOf,
        owners: Optional[list[int]] = None,
    ) -> list[Event]:
        """The events of the flows numbered ``numbers``, with the open and close events of
        the connections ``conns``, in order; each one's flow number appended to ``owners``
        when given (`CONNECTION` for an open or a close)."""
        found = []
        for position, where in enumerate(self._where):
            owner = where >> 2
            if owner in numbers or (
                owner == CONNECTION and getattr(self._kept[position], "conn", None) in conns
            ):
                found.append(self.event(position, flow_of))
                if owners is not None:
                    owners.append(owner)
        return found

    def forget(self, numbers: set[int]) -> None:
        """Let go of the events of the flows numbered ``numbers`` (the TUI let them go:
        `golem_proxy.tui.flow_bound`), and of the events no flow owns that came before the
        newest of them (a discarded run of bytes, a violation of a frame not seen); a
        connection's open and close stay, and so does an answer still waiting for its
        exchange."""
        if not numbers:
            return
        where = self._where
        horizon = -1
        above = (max(numbers) + 1) * 4  # an entry this large is a newer flow's
        for position in range(len(where) - 1, -1, -1):
            entry = where[position]
            if entry < above and entry >> 2 in numbers:
                horizon = position
                break
        # Only the positions up to the newest event let go are looked at one by one: the
        # flows let go are the oldest, and what comes after them is kept as it is.
        waiting = set(self._answer_at.values()) | set(self._unowned_answers.values())
        head: array[int] = array("i")
        moved: dict[int, int] = {}
        for position in range(horizon + 1):
            entry = where[position]
            owner = entry >> 2
            if owner in numbers or (owner == 0 and position not in waiting):
                continue
            moved[position] = len(head)
            head.append(entry)
        shift = horizon + 1 - len(head)
        self._where = head + where[horizon + 1 :]

        def new(position: int) -> int:
            return position - shift if position > horizon else moved.get(position, -1)

        self._kept = {
            new(position): event for position, event in self._kept.items() if new(position) >= 0
        }
        self._answer_at = {n: new(p) for n, p in self._answer_at.items() if new(p) >= 0}
        self._unowned_answers = {
            key: new(p) for key, p in self._unowned_answers.items() if new(p) >= 0
        }
