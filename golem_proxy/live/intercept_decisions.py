"""What becomes of a frame ``--intercept`` holds (intercept.py): the frame as it waits
(`HeldFrame`), the decisions on it (`Accept`, `Edit`, `Drop`, `Answer`) and what the relay is
to carry out (`Ruling`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

import trio

from golem_core.messages import Message

from ..events import Direction, InterceptKind
from .frame_redaction import RedactedFrame

__all__ = [
    "Accept",
    "Answer",
    "Decision",
    "Drop",
    "Edit",
    "HeldFrame",
    "InterceptError",
    "Ruling",
]


class InterceptError(ValueError):
    """A decision that cannot be carried out: an unknown or already decided frame, an edit
    that is not JSON, an answer to a response or a notification. The message says which."""


@dataclass(frozen=True)
class Accept:
    """Forward the frame as it came."""


@dataclass(frozen=True)
class Edit:
    """Forward ``payload`` instead (the JSON text, without framing)."""

    payload: bytes


@dataclass(frozen=True)
class Drop:
    """Forward nothing: the peer never sees the frame."""


@dataclass(frozen=True)
class Answer:
    """For a request: send ``payload`` (a response's JSON) back to the client instead of
    forwarding the request. A response object without an ``id`` gets the request's."""

    payload: bytes


Decision = Union[Accept, Edit, Drop, Answer]


@dataclass
class HeldFrame:
    """A frame waiting for a decision. ``held_at`` is on trio's clock (`age` measures it).
    ``shown``: the frame as the connection's redaction (``--redact``) leaves it, what is shown
    and recorded of it (`view`)."""

    id: int
    conn: int
    route: str
    direction: Direction
    method: Optional[str]
    message: Message
    payload: bytes
    held_at: float
    shown: Optional[RedactedFrame] = None
    decision: Optional[Decision] = None
    _decided: trio.Event = field(default_factory=trio.Event, repr=False)

    @property
    def is_request(self) -> bool:
        return self.direction is Direction.C2S

    @property
    def view(self) -> RedactedFrame:
        """The frame as it may be shown, logged or recorded: redacted as the connection's
        frames are (its ``redacted`` says what was replaced; none without ``--redact``)."""
        return self.shown if self.shown is not None else RedactedFrame(self.payload, self.message)

    def age(self, now: Optional[float] = None) -> float:
        """Seconds held so far."""
        return (trio.current_time() if now is None else now) - self.held_at


@dataclass(frozen=True)
class Ruling:
    """What became of a held frame, for the relay to carry out. ``payload`` is what to send
    (the original for `Accept` and `Drop`, the validated bytes for `Edit` and `Answer`);
    ``kind`` and ``detail`` are the event to publish once it is done."""

    decision: Decision
    payload: bytes
    kind: InterceptKind
    detail: str
    method: Optional[str]
    original: bytes = b""
    """The payload as it came, when it differs from what was sent (an edit), redacted as the
    connection's frames are."""
    redacted: tuple[str, ...] = ()
    """What redaction replaced in ``original`` (its rules, ``echo``): it is then not exact."""
    withheld: bool = False
    """The frame was not forwarded (dropped, or a request answered by hand)."""
    learned: tuple[str, ...] = ()
    """The values the rules replaced in the frame as it came (`RedactedFrame.learned`): what
    the tap is to learn of it where it is not recorded as it came (dropped, edited)."""
