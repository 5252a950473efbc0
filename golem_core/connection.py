"""One observed connection, sans-IO: bytes from either peer in, typed message events out.

The h11 shape, for a connection seen from the middle: `receive_data(sender, data)` and
`receive_eof(sender)` store bytes, `next_event(sender)` returns the next event of that
direction or `NEED_DATA`. Behind it, per direction, the profile's incremental decoder; then
`profile.parse` (frames over ``limits.elide_frames_over`` with their long opaque strings
elided), the contract checks (and a method catalogue's, if given), and pairing of responses
with requests within the limits of a `Correlator`. Nothing here does I/O or keeps a clock:
a tap, a test or a tool feeds it and turns the events into whatever it reports.

Which direction is fed and drained first is the caller's choice, and it matters: a response
is paired only with requests already drained. Draining each chunk in the order the bytes
crossed the wire, as a relay forwards them, reproduces what the peers saw.

Every request a `MessageSeen` reports ends, exactly once, in an `ExchangePaired` or an
`Unanswered` (evicted by the pairing limits, or outstanding at `close`), so a caller may keep
per-request state keyed by the request's ``index`` and know when to drop it.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass
from typing import Optional, Union

from .catalogue import MethodCatalogue
from .contract import Violation, violation
from .framing import NEED_DATA, Discarded, EndOfStream, Frame, FrameError, NeedData
from .messages import Message, Request, Role
from .pairing import R_ORPHAN_RESPONSE, Correlator, Pending
from .profiles import Profile

__all__ = [
    "BytesSkipped",
    "Connection",
    "ConnectionEvent",
    "ExchangePaired",
    "FramingProblem",
    "Limits",
    "MessageSeen",
    "OrphanResponse",
    "Sender",
    "StreamEnded",
    "Unanswered",
    "UnansweredReason",
]


class Sender(enum.Enum):
    """Which peer sent the bytes: the client (requests) or the server (responses)."""

    CLIENT = "c2s"
    SERVER = "s2c"

    @property
    def role(self) -> Role:
        """What a message from this peer is expected to be."""
        return Role.REQUEST if self is Sender.CLIENT else Role.RESPONSE


@dataclass(frozen=True)
class Limits:
    """What observing one connection may cost.

    ``max_frame`` is the framing cap (None: the profile's); a frame over it is reported and
    skipped without being buffered. A frame over ``elide_frames_over`` bytes is typed with its
    opaque strings longer than ``elide_strings_over`` replaced by placeholders, so a 50 MiB
    image is never materialised as a str just to be checked. Pairing holds at most
    ``max_pending`` outstanding requests and ``max_pending_bytes`` of their frames (None: no
    limit); past either, the oldest are given up as `Unanswered`."""

    max_frame: Optional[int] = None
    elide_frames_over: int = 1024 * 1024
    elide_strings_over: int = 64 * 1024
    max_pending: Optional[int] = 4096
    max_pending_bytes: Optional[int] = 256 * 1024 * 1024


@dataclass(frozen=True)
class MessageSeen:
    """One frame, typed and checked. ``index`` counts this sender's frames from 0;
    ``violations`` are the per-message ones (contract and catalogue); ``elided`` is how many
    payload bytes were left out of ``message`` (0: it is exactly ``profile.parse``'s).
    For a response, ``answers`` is the request it was paired with (None: an orphan)."""

    sender: Sender
    index: int
    frame: Frame
    message: Message
    violations: tuple[Violation, ...] = ()
    elided: int = 0
    answers: Optional[MessageSeen] = None


@dataclass(frozen=True)
class ExchangePaired:
    """A response paired with its request; ``violations`` are the exchange-level ones (the id
    not echoed, a code the method does not list, …), after the response's `MessageSeen`."""

    request: MessageSeen
    response: MessageSeen
    violations: tuple[Violation, ...] = ()


@dataclass(frozen=True)
class OrphanResponse:
    """A response that answers no outstanding request, after its `MessageSeen`."""

    response: MessageSeen
    violation: Violation


class UnansweredReason(enum.Enum):
    EVICTED = "evicted"
    """Given up to stay within the pairing limits."""
    CLOSED = "closed"
    """Still outstanding when the connection closed."""


@dataclass(frozen=True)
class Unanswered:
    """A request that will never be paired."""

    request: MessageSeen
    reason: UnansweredReason


@dataclass(frozen=True)
class FramingProblem:
    """Bad framing (oversized, truncated) and the profile's violation for it."""

    sender: Sender
    error: FrameError
    violation: Violation


@dataclass(frozen=True)
class BytesSkipped:
    """Bytes of an oversized frame skipped without buffering (``final``: back in sync)."""

    sender: Sender
    discarded: Discarded


@dataclass(frozen=True)
class StreamEnded:
    """The sender's direction produces no more events: it closed its side (after a frame cut
    short, right after that `FramingProblem`)."""

    sender: Sender


ConnectionEvent = Union[
    MessageSeen,
    ExchangePaired,
    OrphanResponse,
    Unanswered,
    FramingProblem,
    BytesSkipped,
    StreamEnded,
]


class Connection:
    """The observed state of one connection, both directions. Not thread-safe; cheap to
    create (one per connection)."""

    def __init__(
        self,
        profile: Profile,
        *,
        limits: Limits = Limits(),
        catalogue: Optional[MethodCatalogue] = None,
    ) -> None:
        self.profile = profile
        self.limits = limits
        self.catalogue = catalogue
        self._decoders = {sender: profile.new_decoder(limits.max_frame) for sender in Sender}
        self._frames = {sender: 0 for sender in Sender}
        # Events already produced for a sender but not yet handed out: one frame can make
        # several (a response's MessageSeen, then its pairing; a request's evictions).
        self._ready: dict[Sender, deque[ConnectionEvent]] = {sender: deque() for sender in Sender}
        self._correlator: Correlator[MessageSeen] = Correlator(
            profile, max_pending=limits.max_pending, max_pending_bytes=limits.max_pending_bytes
        )

    # -- input -------------------------------------------------------------------------------
    def receive_data(self, sender: Sender, data: bytes) -> None:
        """Store bytes ``sender`` sent. Raises RuntimeError after `receive_eof` for it."""
        if data:
            self._decoders[sender].receive_data(data)

    def receive_eof(self, sender: Sender) -> None:
        """``sender`` closed its side; a frame cut short becomes a `FramingProblem`."""
        self._decoders[sender].receive_eof()

    # -- output ------------------------------------------------------------------------------
    def next_event(self, sender: Sender) -> Union[ConnectionEvent, NeedData]:
        """The next event of ``sender``'s direction, or `NEED_DATA` until more bytes (or the
        end of the stream) arrive. After `StreamEnded`, always `NEED_DATA`."""
        ready = self._ready[sender]
        while not ready:
            event = self._decoders[sender].next_event()
            if event is NEED_DATA:
                return NEED_DATA
            self._handle(sender, event)
        return ready.popleft()

    def events(self, sender: Sender) -> list[ConnectionEvent]:
        """Every event of ``sender``'s direction available now."""
        found: list[ConnectionEvent] = []
        while True:
            event = self.next_event(sender)
            if isinstance(event, NeedData):
                return found
            found.append(event)

    def feed(self, sender: Sender, data: bytes) -> list[ConnectionEvent]:
        """Receive ``data`` from ``sender`` (``b""``: its end of stream) and return the
        events now available in that direction."""
        if data:
            self.receive_data(sender, data)
        else:
            self.receive_eof(sender)
        return self.events(sender)

    def close(self) -> list[Unanswered]:
        """The connection is gone: every request still outstanding, oldest first, as
        `Unanswered` (they are forgotten; bytes still stored are not decoded)."""
        return [self._unanswered(p, UnansweredReason.CLOSED) for p in self._correlator.clear()]

    @property
    def outstanding(self) -> int:
        """How many requests wait for a response."""
        return len(self._correlator)

    # -- decoding ----------------------------------------------------------------------------
    def _handle(self, sender: Sender, event: object) -> None:
        ready = self._ready[sender]
        if isinstance(event, Frame):
            self._frame(sender, event)
        elif isinstance(event, FrameError):
            ready.append(FramingProblem(sender, event, self.profile.frame_violation(event)))
            if not event.recoverable:
                # The decoder stops here (a stream cut inside a frame): the direction is over.
                ready.append(StreamEnded(sender))
        elif isinstance(event, Discarded):
            ready.append(BytesSkipped(sender, event))
        elif isinstance(event, EndOfStream):
            ready.append(StreamEnded(sender))

    def _frame(self, sender: Sender, frame: Frame) -> None:
        role = sender.role
        payload = frame.payload
        if len(payload) > self.limits.elide_frames_over:
            message, elided = self.profile.parse_elided(
                payload, role, self.limits.elide_strings_over
            )
        else:
            message, elided = self.profile.parse(payload, role), 0
        found = self.profile.check_message(message, payload)
        if self.catalogue is not None and isinstance(message, Request):
            found.extend(self.catalogue.check_request(message))
        index = self._frames[sender]
        self._frames[sender] = index + 1
        ready = self._ready[sender]
        if role is Role.REQUEST:
            seen = MessageSeen(sender, index, frame, message, tuple(found), elided)
            ready.append(seen)
            for pending in self._correlator.add_request(message, seen, frame.size):
                ready.append(self._unanswered(pending, UnansweredReason.EVICTED))
            return
        matched = self._correlator.match_response(message)
        request = matched.context if matched is not None else None
        seen = MessageSeen(sender, index, frame, message, tuple(found), elided, request)
        ready.append(seen)
        if request is None:
            orphan = violation(
                R_ORPHAN_RESPONSE,
                f"response id {message.id!r} answers no outstanding request",
                "$.id",
            )
            ready.append(OrphanResponse(seen, orphan))
            return
        paired = self.profile.check_exchange(request.message, message)
        ready.append(ExchangePaired(request, seen, tuple(paired)))

    @staticmethod
    def _unanswered(pending: Pending[MessageSeen], reason: UnansweredReason) -> Unanswered:
        return Unanswered(pending.context, reason)
