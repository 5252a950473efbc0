"""A trio stream carrying one profile's frames: send a frame, wait for the next one.

The client side of a link (the replay server forwarding a miss, `verify` re-sending a trace)
uses this; the relay never does, it forwards bytes."""

from __future__ import annotations

import trio

from golem_core.framing import Frame, FrameError
from golem_core.profiles import Profile

__all__ = ["FramedStream", "FramingFailure"]

RECEIVE_SIZE = 65536


class FramingFailure(OSError):
    """The peer sent bytes that are not a frame of the profile (an oversized header, or a
    frame cut short by the end of the stream)."""


class FramedStream:
    """Frames over ``stream``. The decoder keeps bytes past a frame for the next call."""

    def __init__(self, stream: trio.SocketStream, profile: Profile) -> None:
        self.stream = stream
        self.decoder = profile.new_decoder(skip_oversized=False)

    async def exchange(self, data: bytes) -> Frame:
        """Send ``data`` (a framed message) and return the next frame the peer sends.

        Raises EOFError when the peer closes first, FramingFailure for bad framing, and trio's
        BrokenResourceError / OSError when the connection fails."""
        await self.stream.send_all(data)
        return await self.receive_frame()

    async def receive_frame(self) -> Frame:
        """The next frame; raises as `exchange` does."""
        while True:
            for event in self.decoder.events():
                if isinstance(event, Frame):
                    return event
                if isinstance(event, FrameError):
                    raise FramingFailure(f"bad framing from the peer: {event.detail}")
                raise EOFError("the peer closed the connection without answering")
            chunk = await self.stream.receive_some(RECEIVE_SIZE)
            if chunk:
                self.decoder.receive_data(chunk)
            else:
                self.decoder.receive_eof()

    async def aclose(self) -> None:
        await self.stream.aclose()
