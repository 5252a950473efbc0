"""A trio stream carrying one profile's frames: send a frame, read the next one, or read what
comes after a request up to its answer.

The client side of a link uses this: the replay server forwarding a miss, `verify` re-sending
a trace, and the one request/answer client (`request_client`: ``call``, ``resend``). The relay
never does, it forwards bytes. Which frame answers a request is golem_core's `AnswerReader`
rule, the same the blocking client follows."""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

import trio

from golem_core.answers import Answer, AnswerReader, Reading, Unrelated
from golem_core.framing import EndOfStream, Frame, FrameError, NeedData
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
        self, stream: trio.abc.Stream, profile: Profile, observe: Optional[Observe] = None
    ) -> None:
        self.stream = stream
        self.answers = AnswerReader(profile)
        self.observe = observe
        self.received_at: Optional[float] = None
        """The trio time the last chunk arrived (the one that completed the last frame)."""
        self.sent_at: Optional[float] = None
        """When the last `send` began (trio's clock)."""

    async def send(self, data: bytes) -> None:
        """Send ``data`` (a framed message) whole. Raises trio's BrokenResourceError / OSError
        when the connection fails."""
        started = self.sent_at = trio.current_time()
        await self.stream.send_all(data)
        if self.observe is not None:
            # Stamped when the send began, the time `request_answer` measures from (send_all
            # may yield once the bytes are out): the row of a request sent again shows the
            # latency its sender measured, not a shorter one.
            self.observe(Direction.C2S, data, started)

    async def receive_frame(self) -> Frame:
        """The next frame the peer sends. Raises EOFError when the peer closes first,
        FramingFailure for bad framing, and trio's BrokenResourceError / OSError when the
        connection fails."""
        while True:
            event = self.answers.next_frame()
            if isinstance(event, NeedData):
                await self._receive()
            else:
                return _frame_or_raise(event)

    async def receive_reading(self, wanted: Optional[Any]) -> Union[Answer, Unrelated]:
        """The next frame after sending a request whose correlation key is ``wanted``: its
        `Answer`, or a frame that answers something else (`Unrelated`, saying what it is).
        Raises as `receive_frame` does."""
        while True:
            reading: Reading = self.answers.next_reading(wanted)
            if isinstance(reading, (Answer, Unrelated)):
                return reading
            if isinstance(reading, NeedData):
                await self._receive()
            else:
                _frame_or_raise(reading)

    async def receive_answer(self, wanted: Optional[Any]) -> Answer:
        """`receive_reading`, passing over the frames that answer something else."""
        while True:
            reading = await self.receive_reading(wanted)
            if isinstance(reading, Answer):
                return reading

    async def _receive(self) -> None:
        chunk = bytes(await self.stream.receive_some(RECEIVE_SIZE))
        self.received_at = trio.current_time()
        if self.observe is not None:
            self.observe(Direction.S2C, chunk, self.received_at)
        if chunk:
            self.answers.receive_data(chunk)
        else:
            self.answers.receive_eof()

    async def aclose(self) -> None:
        await self.stream.aclose()


def _frame_or_raise(event: Union[Frame, FrameError, EndOfStream]) -> Frame:
    if isinstance(event, Frame):
        return event
    if isinstance(event, FrameError):
        raise FramingFailure(event.detail)
    raise EOFError("the peer closed the connection without answering")
