"""A step of the proxy's (a ``fault`` line) checked against the lines before it: what its
``among`` and its ``server_request`` say must be what the file holds, as a tool call's
``answer_of`` is (answer_of_check.py), by every reader alike (`LineDecoder.decode`).

The views believe both. ``among`` (how many requests waited with the id of the answer acted
on) says the step on each of that many rows, and in words ("an answer of id 1 that 1000
requests waited for"); ``server_request`` (the frame was a request of the server's own)
places a withheld frame on the connection's last frame from the server, recorded as it came,
rather than on the request whose answer was withheld, and keeps it out of what was not
inspected. So:

- ``among`` may exceed the requests waiting with that id in the lines before it by
  `AMONG_SLACK` only, and by one more when the answer was recorded (a step is written after
  the frame it went with, which the reader has paired by then);
- a withheld frame said to be the server's own request must follow one: the connection's
  last frame from the server is a request (or a notification) of its.

Where the file may lack what the proxy saw, nothing is refused: after a ``gap`` line, a full
spool, a stop or a restart of the observing process, lines lost (`SeqWatch`), requests this
reader let go past its bound, in a view saved without some flows, and on a connection with an
``unobserved`` line or a request the proxy changed (corrupted, cut short, edited: the file
holds what went, the proxy paired what came)."""

from __future__ import annotations

from typing import Optional, Union

from ..events import Direction, FaultInjected, FrameSeen, InterceptKind, InterceptStep
from .answer_of_check import VIEW_MEMBERS
from .held_frames import HeldFrames
from .members import shown
from .schema import Header, RecordingError

__all__ = ["AMONG_SLACK", "StepCheck"]

AMONG_SLACK = 1
"""Requests with an answer's id the proxy may count that the lines before its step do not
hold yet: the forwarding process counts a request once it decided to send it, and records it
once sent, and an answer may be decided on in between (its direction's writer busy, a
``--fault delay`` holding the request). A direction's frames are decided one at a time, so
one at most."""

_CHANGES_REQUEST = frozenset(("corrupt", "truncate"))
"""Faults after which the file holds other bytes than the request the proxy paired."""

Step = Union[FaultInjected, InterceptStep]


class StepCheck:
    """Told the frames, the connections' closes and the lines that say something was not
    recorded, in file order; `check` refuses a step whose ``among`` or ``server_request``
    those lines cannot bear out."""

    def __init__(self, frames: HeldFrames, header: Optional[Header] = None) -> None:
        self.frames = frames
        """The requests waiting (`HeldFrames.waiting_with_id`)."""
        self.unsure = header is not None and any(k in header.extra for k in VIEW_MEMBERS)
        """The file may lack what the proxy saw, anywhere from here on."""
        self._unsure: set[int] = set()
        """Connections of which the file may lack a request or a frame the proxy saw."""
        self.asking: set[int] = set()
        """Connections whose last frame from the server is a request of the server's own."""

    def lost(self, conn: int) -> None:
        """A line says something of ``conn`` was not recorded (connection 0: the session's)."""
        if conn:
            self._unsure.add(conn)
        else:
            self.unsure = True

    def frame(self, frame: FrameSeen) -> None:
        """A frame line was read."""
        if frame.direction is Direction.S2C:
            if frame.is_server_request:
                self.asking.add(frame.conn)
            else:
                self.asking.discard(frame.conn)

    def closed(self, conn: int) -> None:
        self._unsure.discard(conn)
        self.asking.discard(conn)

    def check(self, step: Step, lines_lost: bool) -> None:
        """Raises RecordingError when ``step``'s ``among`` or ``server_request`` says more
        than the lines before it hold (``lines_lost``: their numbering broke)."""
        conn = step.conn
        if step.direction is Direction.C2S and _changes_request(step):
            self._unsure.add(conn)
        if lines_lost or self.unsure or self.frames.let_go or conn in self._unsure:
            return
        if not isinstance(step, FaultInjected):
            return
        if step.server_request and step.withheld and conn not in self.asking:
            raise RecordingError(
                "server_request on a frame withheld that is no request of the server's: the "
                f"last frame of connection {conn} from the server (dir s2c) before it is not one"
            )
        if step.among > 1:
            held = self.frames.waiting_with_id(conn, Direction.C2S.value, step.message_id)
            room = held + AMONG_SLACK + (0 if step.withheld else 1)
            if step.among > room:
                raise RecordingError(
                    f"among says {step.among} requests waited with id {shown(step.message_id)}; "
                    f"the lines before it hold {held} waiting on connection {conn}"
                )


def _changes_request(step: Step) -> bool:
    if isinstance(step, InterceptStep):
        return step.kind is InterceptKind.EDITED
    return step.fault in _CHANGES_REQUEST
