"""What the TUI's `w` writes (`SessionModel.view_to_save`): the events of the flows in view, and
what is left out of them and why. The flows whose payloads the recording holds are checked
against the file (`SavedView.checked`) on the thread that writes the view, never on the
screen's: a view of thousands of captures is thousands of reads of a file that may be on a
slow disk."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..events import Event
from ..recording.payload_places import PayloadPlace, not_held
from .event_log import CONNECTION

__all__ = ["SavedView"]


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


def _conn(event: Event) -> object:
    return getattr(event, "conn", None)
