"""A thin blocking adapter over the sans-IO codec, for the plugin side (blocking sockets and
threads, as the real plugin runs). It takes any object with ``recv(n)`` and ``sendall(data)``,
so golem_core still imports no socket module.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol

from .errors import FrameTooLarge, TruncatedFrame
from .framing import Discarded, EndOfStream, Frame, FrameError, FrameErrorKind
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
    """Reads frames from a blocking socket through one incremental decoder, so bytes past a
    frame boundary are kept for the next call (unlike a read-exactly loop per frame)."""

    def __init__(
        self, sock: SocketLike, profile: Profile = GOLEM, cap: Optional[int] = None
    ) -> None:
        self.sock = sock
        self.profile = profile
        # The reference peers reject an oversized header outright, so do not skip past it.
        self.decoder = profile.new_decoder(cap, skip_oversized=False)

    def read_frame(self) -> Optional[Frame]:
        """Block until the next complete frame. Returns None at a clean end of stream.

        Raises FrameTooLarge for a header over the cap, TruncatedFrame when the peer closes
        mid-frame, and OSError from the socket as is."""
        while True:
            event = self.decoder.next_event()
            if isinstance(event, Frame):
                return event
            if isinstance(event, EndOfStream):
                return None
            if isinstance(event, FrameError):
                if event.kind is FrameErrorKind.OVERSIZED:
                    raise FrameTooLarge(
                        event.declared_length or event.size, self.decoder.max_payload
                    )
                raise TruncatedFrame(event.detail)
            if isinstance(event, Discarded):  # pragma: no cover - skip_oversized is off
                continue
            data = self.sock.recv(RECV_SIZE)
            if data:
                self.decoder.receive_data(data)
            else:
                self.decoder.receive_eof()

    def read_message(self, role: Optional[Role] = None) -> Optional[Message]:
        """The next frame, typed by the profile (None at a clean end of stream)."""
        frame = self.read_frame()
        if frame is None:
            return None
        return self.profile.parse(frame.payload, role)


def recv_message(sock: SocketLike, profile: Profile = GOLEM) -> Optional[Message]:
    """Read one message from a socket that carries nothing else unread. Prefer a
    `MessageReader` per connection: it keeps bytes that arrive past the frame."""
    return MessageReader(sock, profile).read_message()
