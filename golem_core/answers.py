"""The client side of a connection, without I/O: the frames a server sends, and which of them
answers the request just sent.

Every client that sends a request and waits for its answer (the blocking client of the plugin
side, the trio client behind ``call`` and ``resend``, the replay server forwarding a miss) feeds
the bytes it reads into an `AnswerReader` and asks it for the next reading, so there is one rule
for what an answer is: `Profile.is_answer_to` (a reply with the request's correlation key, or a
reply with no usable id, never a request or notification of the server's own).

    reader = AnswerReader(GOLEM)
    sock.sendall(request_bytes)
    while True:
        reading = reader.next_reading(wanted)
        if reading is NEED_DATA:
            data = sock.recv(65536)
            reader.receive_eof() if not data else reader.receive_data(data)
        elif isinstance(reading, Answer):
            break
        ...                       # Unrelated: skip or pass on; FrameError / EndOfStream: stop

Memory is bounded: the reader keeps no frame it has returned, and the decoder holds at most one
frame's bytes (the profile's cap, an oversized header is a `FrameError`, never skipped).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from enum import Enum
from typing import Any, Optional, Union

from .framing import Discarded, EndOfStream, Frame, FrameError, NeedData
from .messages import Message, Request, Role
from .profiles import Profile

__all__ = ["ASKED_REMEMBERED", "Answer", "AnswerReader", "Reading", "Unrelated", "UnrelatedKind"]

ASKED_REMEMBERED = 1024
"""How many of a connection's latest request keys a reader keeps, to tell a late or repeated
answer to one of them (`UnrelatedKind.STALE`) from a reply with an id never asked for."""


@dataclass(frozen=True)
class Answer:
    """The frame that answers the request, and the profile's reading of it."""

    frame: Frame
    message: Message


class UnrelatedKind(Enum):
    """What a frame that does not answer the request is."""

    OWN = "own"
    """A notification or a request of the server's own."""
    STALE = "stale"
    """A reply carrying the id of an earlier request of the connection: a late answer, or one
    sent again."""
    OTHER = "other"
    """A reply carrying an id no request of the connection had (as far as remembered)."""


@dataclass(frozen=True)
class Unrelated:
    """A frame the server sent that does not answer the request: a notification, a request of
    its own, or a reply carrying another id; ``kind`` says which, ``key`` is a reply's
    correlation key."""

    frame: Frame
    message: Message
    kind: UnrelatedKind
    key: Optional[Any]
    wrong_id: bool
    """A reply of kind OTHER where this protocol's client takes the next reply as the answer
    to its one outstanding request (`Profile.replies_by_id` False): the server answered the
    request, with the wrong id. Where replies go by id, the client reads on past it."""


Reading = Union[Answer, Unrelated, FrameError, EndOfStream, NeedData]


class AnswerReader:
    """What one peer sends on one connection, frame by frame. Bytes past a frame are kept
    for the next call, so one reader serves every request of the connection. `next_frame`
    alone is the plain frame reader (a server reading requests uses just that)."""

    def __init__(self, profile: Profile, cap: Optional[int] = None) -> None:
        self.profile = profile
        # The reference peers reject an oversized header outright, so do not skip past it.
        self.decoder = profile.new_decoder(cap, skip_oversized=False)
        self.unrelated = 0
        """How many frames `next_reading` has passed over as not the answer."""
        self._asked: OrderedDict[Any, None] = OrderedDict()
        """The keys `next_reading` was asked for, the latest `ASKED_REMEMBERED`."""

    def key_of(self, request: dict[str, Any]) -> Optional[Any]:
        """The correlation key of a request object about to be sent (its ``id`` as the
        profile pairs it), for `next_reading`."""
        ident = request.get("id")
        return self.profile.correlation_key(Request(ident, "", None, request))

    def receive_data(self, data: bytes) -> None:
        """Feed bytes read from the server."""
        self.decoder.receive_data(data)

    def receive_eof(self) -> None:
        """Say the server closed its side."""
        self.decoder.receive_eof()

    def next_frame(self) -> Union[Frame, FrameError, EndOfStream, NeedData]:
        """The next complete frame, a framing error (after which nothing more can be read),
        the end of the stream, or NEED_DATA. Never raises."""
        while True:
            event = self.decoder.next_event()
            if not isinstance(event, Discarded):  # pragma: no branch - skip_oversized is off
                return event

    def next_reading(self, wanted: Optional[Any]) -> Reading:
        """The next frame read after sending a request whose correlation key is ``wanted``:
        its `Answer`, an `Unrelated` frame, a framing error, the end of the stream, or
        NEED_DATA. Never raises: an answer that is no JSON is an `Answer` holding a Malformed
        message when it carries no id (the server's reply to what it could not read)."""
        if wanted is not None and wanted not in self._asked:
            self._asked[wanted] = None
            if len(self._asked) > ASKED_REMEMBERED:
                self._asked.popitem(last=False)
        event = self.next_frame()
        if not isinstance(event, Frame):
            return event
        profile = self.profile
        message = profile.parse(event.payload, Role.RESPONSE)
        if profile.is_answer_to(message, wanted):
            return Answer(event, message)
        self.unrelated += 1
        key = profile.correlation_key(message)
        if message.role is Role.REQUEST or key is None:  # a reply with no id is an answer
            return Unrelated(event, message, UnrelatedKind.OWN, None, False)
        if key in self._asked:
            return Unrelated(event, message, UnrelatedKind.STALE, key, False)
        return Unrelated(event, message, UnrelatedKind.OTHER, key, not profile.replies_by_id)

    def next_answer(
        self, wanted: Optional[Any]
    ) -> Union[Answer, FrameError, EndOfStream, NeedData]:
        """`next_reading`, passing over every `Unrelated` frame available now."""
        while True:
            reading = self.next_reading(wanted)
            if not isinstance(reading, Unrelated):
                return reading
