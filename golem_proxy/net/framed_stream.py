"""A trio stream carrying one profile's frames: send a frame, wait for the next one.

The client side of a link uses this: the replay server forwarding a miss, `verify` re-sending
a trace, and the one request/answer client (`request_client`: ``call``, ``resend``). The relay
never does, it forwards bytes."""

from __future__ import annotations

from typing import Callable, Optional

import trio

from golem_core.framing import Frame, FrameError
from golem_core.profiles import Profile

from ..events import Direction

__all__ = ["FramedStream", "FramingFailure", "Observe"]

RECEIVE_SIZE = 65536

Observe = Callable[[Direction, bytes, float], None]
"""Told every chunk sent (c2s) and received (s2c) with its trio time, ``b""`` at the end of
what the peer sends."""


class FramingFailure(OSError):
    """The peer sent bytes that are not a frame of the profile (an oversized header, or a
    frame cut short by the end of the stream); ``detail`` says which."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"bad framing from the peer: {detail}")
        self.detail = detail


class FramedStream:
    """Frames over ``stream``. The decoder keeps bytes past a frame for the next call.
    ``observe``, when given, sees every chunk as it goes and comes."""

    def __init__(
        self, stream: trio.SocketStream, profile: Profile, observe: Optional[Observe] = None
    ) -> None:
        self.stream = stream
        self.decoder = profile.new_decoder(skip_oversized=False)
        self.observe = observe
        self.received_at: Optional[float] = None
        """The trio time the last chunk arrived (the one that completed the last frame)."""

    async def exchange(self, data: bytes) -> Frame:
        """Send ``data`` (a framed message) and return the next frame the peer sends.

        Raises EOFError when the peer closes first, FramingFailure for bad framing, and trio's
        BrokenResourceError / OSError when the connection fails."""
        await self.send(data)
        return await self.receive_frame()

    async def send(self, data: bytes) -> None:
        """Send ``data`` whole; raises as `exchange` does."""
        await self.stream.send_all(data)
        if self.observe is not None:
            self.observe(Direction.C2S, data, trio.current_time())

    async def receive_frame(self) -> Frame:
        """The next frame; raises as `exchange` does."""
        while True:
            for event in self.decoder.events():
                if isinstance(event, Frame):
                    return event
                if isinstance(event, FrameError):
                    raise FramingFailure(event.detail)
                raise EOFError("the peer closed the connection without answering")
            chunk = await self.stream.receive_some(RECEIVE_SIZE)
            self.received_at = trio.current_time()
            if self.observe is not None:
                self.observe(Direction.S2C, chunk, self.received_at)
            if chunk:
                self.decoder.receive_data(chunk)
            else:
                self.decoder.receive_eof()

    async def aclose(self) -> None:
        await self.stream.aclose()
