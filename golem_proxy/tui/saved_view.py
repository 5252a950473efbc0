"""What the TUI's `w` writes (`SessionModel.view_to_save`, `view_of`): the events of the flows
in view, and what is left out of them and why. The flows whose payloads the recording holds
are checked against the file (`SavedView.checked`) on the thread that writes the view, never
on the screen's: a view of thousands of captures is thousands of reads of a file that may be
on a slow disk."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Optional

from ..analysis.flows import Flow
from ..events import Event, FrameSeen
from ..recording.payload_places import PayloadPlace, not_held
from .event_log import CONNECTION, EventLog, FlowOf
from .payloads import in_recording, released

__all__ = ["SavedView", "view_of"]


@dataclass
class SavedView:
    """The events to write, the flows they are of, and the flows left out because a payload
    of theirs was released (`golem_proxy.tui.payloads`): a recording written from memory holds
    only the bytes still in it."""

    events: list[Event]
    flows: int
    left_out: int
    let_go: int = 0
    """Older flows let go from memory before the view was saved, which it cannot hold."""
    lost: int = 0
    """Flows left out because the recording does not hold a payload left to it: a disk error
    kept it out, or the file was cut or changed since."""
    lost_why: str = ""
    """Why (the first such payload's reason)."""
    owners: list[int] = field(default_factory=list)
    """The flow number of each event (an open or a close: `event_log.CONNECTION`)."""
    in_recording: list[tuple[int, PayloadPlace]] = field(default_factory=list)
    """The payloads to read back from the recording, by the number of their flow."""

    def checked(self) -> SavedView:
        """This view without the flows whose payloads the recording no longer holds as they
        were written (`payload_places.not_held`: each line's ends read, no payload), counted
        as ``lost`` with the first reason. Reads the file: not on the screen's thread."""
        gone: set[int] = set()
        why = self.lost_why
        for number, place in self.in_recording:
            if number in gone:
                continue
            reason = not_held(place)
            if reason:
                gone.add(number)
                why = why or reason
        if not gone:
            return self
        owned = list(zip(self.events, self.owners))
        # A connection whose flows in view are all gone goes too: its open and close alone
        # would be a row of nothing in the file written.
        emptied = {_conn(e) for e, owner in owned if owner in gone} - {
            _conn(e) for e, owner in owned if owner not in gone and owner != CONNECTION
        }
        kept = [
            (event, owner)
            for event, owner in owned
            if owner not in gone and not (owner == CONNECTION and _conn(event) in emptied)
        ]
        return dataclasses.replace(
            self,
            events=[event for event, _ in kept],
            owners=[owner for _, owner in kept],
            flows=self.flows - len(gone),
            lost=self.lost + len(gone),
            lost_why=why,
            in_recording=[item for item in self.in_recording if item[0] not in gone],
        )


def view_of(flows: Iterable[Flow], log: EventLog, flow_of: FlowOf, let_go: int) -> SavedView:
    """The view of ``flows`` (those the filter selects, in order) that can be written as they
    came: their events in ``log`` (``flow_of``: the model's flow by number), with their
    connections' open and close events, in order; a flow with a released payload is left out
    (and counted): its bytes are no longer here to write; so is one whose payload never
    reached the recording (a disk error). ``let_go``: older flows let go from memory."""
    numbers: set[int] = set()
    conns: set[int] = set()
    left_out = lost = 0
    lost_why = ""
    placed: list[tuple[int, PayloadPlace]] = []
    for flow in flows:
        if _payload_gone(flow.request) or _payload_gone(flow.response):
            left_out += 1
            continue
        places = [p for p in map(in_recording, (flow.request, flow.response)) if p]
        why = next(filter(None, (p.places.never_written(p) for p in places)), "")
        if why:  # known without reading the file: the recorder stopped before it
            lost += 1
            lost_why = lost_why or why
            continue
        placed += [(flow.number, place) for place in places]
        numbers.add(flow.number)
        conns.add(flow.conn)
    owners: list[int] = []
    events = log.events_of(numbers, conns, flow_of, owners)
    return SavedView(events, len(numbers), left_out, let_go, lost, lost_why, owners, placed)


def _payload_gone(frame: Optional[FrameSeen]) -> bool:
    """Whether ``frame``'s payload is neither kept nor in the recording to read back."""
    return released(frame) is not None and in_recording(frame) is None


def _conn(event: Event) -> object:
    return getattr(event, "conn", None)
