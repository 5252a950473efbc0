"""The events of what the proxy did to a frame on purpose, rather than what it saw: a fault it
injected (`FaultInjected`, ``--fault``) and each step of a frame it intercepted
(`InterceptStep`, ``--intercept``), both a `ProxyAction`.

Part of the event vocabulary (`golem_proxy.events`, which re-exports them and names them in
its ``Event`` union): frozen dataclasses like the rest, apart only to keep that module small.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from golem_core.messages import JsonId

if TYPE_CHECKING:
    # Only an annotation here: events.py imports this module to re-export its events.
    from .events import Direction

__all__ = [
    "RESET_CUT",
    "TRUNCATE_CUT",
    "FaultInjected",
    "InterceptKind",
    "InterceptStep",
    "ProxyAction",
]

TRUNCATE_CUT = "--fault truncate"
"""How a stream ``--fault truncate`` ended reads (`StreamEnded.cut`): part of a frame sent,
then a FIN."""
RESET_CUT = "--fault reset"
"""How the streams ``--fault reset`` ended read (`StreamEnded.cut`): both sides reset."""


@dataclass(frozen=True, kw_only=True)
class ProxyAction:
    """Something the proxy did to a frame on purpose: a fault it injected (`FaultInjected`),
    or a step of a frame it intercepted (`InterceptStep`)."""

    conn: int
    route: str
    direction: Direction
    t: float
    detail: str
    method: Optional[str] = None
    withheld: bool = False
    """The proxy did not forward the message (a fault's ``error``, ``reset`` before it,
    ``drop``; an intercepted frame dropped or answered by hand). A ``delay`` of a message then
    withheld or cut short says so too: the step that decided it follows (`withholds`)."""
    original: bytes = b""
    """The payload as it came, when the proxy sent other bytes in its place (an edited
    frame: the frame event before this one holds what was sent), redacted as frames are."""
    redacted: tuple[str, ...] = ()
    """The paths whose values redaction replaced in ``original`` (and ``echo``, as on a
    frame): ``original`` is then not the bytes that came."""
    message_id: JsonId = None
    """The id of the message acted on, as the proxy read it where it decided (an answer's:
    the id of the request it answers); None when it had none or was not read. It places a
    step on an answer never recorded (withheld, held, lost) on the row of the request that
    answer was for, where a server answers out of order (`FaultRows`)."""
    server_request: bool = False
    """The message acted on is a request or notification of the server's own (it travels
    s2c): withheld, it is recorded as it came, as a client's request withheld is, and is a
    row of its own whatever ids the client's requests have (`FaultRows`)."""
    among: int = 1
    """Of an answer: how many requests waited with its id where the proxy decided (a client
    that pipelines one id twice). Over 1, the wire does not say which of them it answers:
    a step on it never recorded is said on each of those rows, as one of theirs
    (`FaultRows`)."""

    @property
    def withholds(self) -> bool:
        """Whether this step withheld the message (`withheld`)."""
        return self.withheld

    @property
    def withholds_request(self) -> bool:
        """Whether this step withheld a request recorded as it came (a client's, or a
        server's own: `server_request`)."""
        # (Direction is only an annotation here: events.py imports this module.)
        return self.withholds and (self.direction.value == "c2s" or self.server_request)


@dataclass(frozen=True, kw_only=True)
class FaultInjected(ProxyAction):
    """A fault the proxy injected on purpose (``--fault``). (A step of an intercepted frame
    is an `InterceptStep`; recordings written before it have it as a fault whose ``fault`` is
    ``intercept:KIND``, which the reader turns into an `InterceptStep`.)"""

    fault: str
    held_s: Optional[float] = None
    """Of a ``delay``: the seconds the proxy held the frame, as the relay that held it
    measured the hold (several delays of one frame share its hold by their amounts); None on
    other faults, and on a delay that says no amount."""

    @property
    def withholds(self) -> bool:
        """Whether this step is the one that withheld the message (not a delay before it)."""
        return self.withheld and self.fault != "delay"


class InterceptKind(enum.Enum):
    """A step of a frame held by ``--intercept`` (`golem_proxy.live.intercept`)."""

    HELD = "held"
    """The frame was caught and waits for a decision (published when it is caught)."""
    ACCEPTED = "accept"
    EDITED = "edit"
    DROPPED = "drop"
    ANSWERED = "answer"
    """A request answered by hand: it never reached the upstream."""
    RELEASED = "timeout"
    """Held past ``timeout``: forwarded as it came."""
    LOST = "lost"
    """The connection ended while the frame was held: it was never sent."""

    @property
    def label(self) -> str:
        """``intercept:KIND``: how the log names the step (and recordings of version 1 did)."""
        return f"intercept:{self.value}"


@dataclass(frozen=True, kw_only=True)
class InterceptStep(ProxyAction):
    """A step of a frame intercepted by ``--intercept``: caught, then decided (or lost)."""

    kind: InterceptKind

    @property
    def fault(self) -> str:
        """The step's name as the log and a flow's detail show it (``intercept:held``)."""
        return self.kind.label

    @property
    def withholds(self) -> bool:
        """Whether this step withheld the frame (`ProxyAction.withheld`)."""
        return self.withheld
