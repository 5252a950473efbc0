"""A thin blocking adapter over the sans-IO codec, for the plugin side (blocking sockets and
threads, as the real plugin runs). It takes any object with ``recv(n)`` and ``sendall(data)``,
so golem_core still imports no socket module.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol, Union

from .answers import Answer, AnswerReader, Unrelated
from .errors import FrameTooLarge, TruncatedFrame
from .framing import EndOfStream, Frame, FrameError, FrameErrorKind, NeedData
from .messages import Message, Role
from .profiles import GOLEM, Profile

__all__ = ["MessageReader", "recv_message", "send_message"]

RECV_SIZE = 65536


class SocketLike(Protocol):
    def recv(self, bufsize: int) -> bytes: ...

    def sendall(self, data: bytes) -> Any: ...


def send_message(sock: SocketLike, obj: Any, profile: Profile = GOLEM) -> None:
    """Encode ``obj`` with the profile's reference encoding and send the whole frame."""
    sock.sendall(profile.encode(obj))


class MessageReader:
    """Reads frames from a blocking socket through one `AnswerReader`, so bytes past a frame
    boundary are kept for the next call (unlike a read-exactly loop per frame)."""

    def __init__(
        self, sock: SocketLike, profile: Profile = GOLEM, cap: Optional[int] = None
    ) -> None:
        self.sock = sock
        self.profile = profile
        self.answers = AnswerReader(profile, cap)

    def read_frame(self) -> Optional[Frame]:
        """Block until the next complete frame. Returns None at a clean end of stream.

        Raises FrameTooLarge for a header over the cap, TruncatedFrame when the peer closes
        mid-frame, and OSError from the socket as is."""
        while True:
            event = self.answers.next_frame()
            if isinstance(event, NeedData):
                self._receive()
                continue
            return self._frame_or_raise(event)

    def read_message(self, role: Optional[Role] = None) -> Optional[Message]:
        """The next frame, typed by the profile (None at a clean end of stream)."""
        frame = self.read_frame()
        if frame is None:
            return None
        return self.profile.parse(frame.payload, role)

    def ask(self, request: dict[str, Any]) -> Optional[Message]:
        """Send ``request`` (a request object with its ``id``) and return its answer, as
        `read_answer` does; raises as `read_frame` and OSError from the socket."""
        send_message(self.sock, request, self.profile)
        return self.read_answer(self.answers.key_of(request))

    def read_answer(self, wanted: Optional[Any]) -> Optional[Message]:
        """The answer to the request whose correlation key is ``wanted`` (see
        `Profile.correlation_key`), passing over the server's other frames. Returns None when
        the server closes cleanly first; raises as `read_frame`."""
        while True:
            reading = self.answers.next_reading(wanted)
            if isinstance(reading, NeedData):
                self._receive()
            elif isinstance(reading, Answer):
                return reading.message
            elif not isinstance(reading, Unrelated):
                self._frame_or_raise(reading)
                return None

    def _receive(self) -> None:
        data = self.sock.recv(RECV_SIZE)
        if data:
            self.answers.receive_data(data)
        else:
            self.answers.receive_eof()

    def _frame_or_raise(self, event: Union[Frame, FrameError, EndOfStream]) -> Optional[Frame]:
        if isinstance(event, Frame):
            return event
        if isinstance(event, EndOfStream):
            return None
        if event.kind is FrameErrorKind.OVERSIZED:
            raise FrameTooLarge(
                event.declared_length or event.size, self.answers.decoder.max_payload
            )
        raise TruncatedFrame(event.detail)


def recv_message(sock: SocketLike, profile: Profile = GOLEM) -> Optional[Message]:
    """Read one message from a socket that carries nothing else unread. Prefer a
    `MessageReader` per connection: it keeps bytes that arrive past the frame."""
    return MessageReader(sock, profile).read_message()
