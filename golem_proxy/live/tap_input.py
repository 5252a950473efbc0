"""What one direction of a connection hands the tap: its bytes, decoded by the tap's own
decoder, or the frames a forwarding path already decoded (a route with ``--fault`` rules or
``--intercept``, which must know frame boundaries before it forwards).

A frame is decoded once. The frame-by-frame pumps (`fault_relay`) hand each frame they forward
whole with its bytes, exactly as sent (an edit included), and the tap takes it instead of
framing the same bytes again. Whatever they send that is not a whole frame they decoded (a
framing error's bytes, a truncated or corrupted frame, a frame sent in slices, the error
reply a fault wrote) comes as bytes for the tap's own decoder, and frames are taken again only
once that decoder is back at a frame boundary holding nothing (after a frame, or the end of a
skipped one): only it can say where a frame starts after bytes of unknown shape. A frame
larger than the tap observes (its decoder's cap) is decoded from its bytes too, so that it is
digested as before. The events, and so the recording and the log, are the same either way.

Bytes lost on the way (the observer was behind) are counted, and decoding goes on at the next
frame boundary: exactly at the end of the frame in progress when its length is known and the
loss ended inside it (a length-prefixed frame whose header was seen), so that a stream that
ends before that end is still reported truncated; else where one plausibly starts
(`Profile.find_frame_start`). A loss that took a frame's first bytes hides where it ends: a
stream that ends after it is reported truncated when the forwarding side, which followed the
framing, says it ended inside a frame (`ends_inside`).
"""

from __future__ import annotations

from collections import deque
from typing import Optional

from golem_core.decoders import Chunk, Decoder
from golem_core.framing import Discarded, Frame, FrameError, FrameErrorKind, Framing, NeedData
from golem_core.framing import Event as FramingEvent
from golem_core.profiles import Profile

__all__ = ["TapInput", "requests_waiting", "truncated"]


class TapInput:
    """One direction's way into the tap: a decoder, the frames handed over decoded, and the
    bytes lost on the way (the observer was behind) until they are reported."""

    def __init__(self, profile: Profile, cap: int) -> None:
        self.profile = profile
        self.cap = cap
        self.decoder: Decoder = profile.new_decoder(cap)
        self._handed: deque[Frame] = deque()
        self._at_boundary = True
        """The decoder holds nothing and is between two frames: a frame may be handed over."""
        self.lost = 0
        """Bytes forwarded but never decoded, not reported yet."""
        self.lost_since: Optional[float] = None
        self.resync = False
        """After a loss: the next bytes are searched for a frame boundary before decoding."""
        self.skip = 0
        """After a loss inside a frame of known length: the bytes of it still to come, counted
        as lost too (its start is gone), before decoding starts again at its end."""
        self._in_line = False
        """Lines, while searching after a loss: bytes came since it, none a newline."""
        self._ends_inside: Optional[int] = None
        """The forwarding side says the stream ends inside a frame, with this many bytes of it
        still to come (0: not known): what `end` says when no header here told it."""
        self._cut: Optional[FrameError] = None
        """The stream ended inside a frame whose start was lost: said once, as a decoder says
        a frame the end cut short."""
        self.ended = False
        """The stream's end was fed (or decoding stopped): no frame is held open any more."""
        self.frames: Optional[int] = 0
        """Frames that crossed whole, decoded or skipped (over a limit); None once bytes were
        lost, whose frames are not known (`ConnectionTap.answers_awaited`)."""

    @property
    def mid_frame(self) -> bool:
        """Whether the bytes fed so far end inside a frame, as far as is known: part of it is
        held, or its rest is to be skipped (a loss inside it, or an oversized frame)."""
        return bool(self.buffered or self.skip or self._in_line or self.decoder.body_left)

    @property
    def buffered(self) -> int:
        """Bytes held: a partial frame in the decoder, frames handed over and not yet taken."""
        handed = sum(frame.size for frame in self._handed) if self._handed else 0
        return self.decoder.buffered + handed

    def take(self, frame: Frame) -> bool:
        """Take a frame a forwarding path decoded, instead of its bytes. False when its bytes
        must be decoded here instead (see the module docstring)."""
        if not self._at_boundary or self.resync or self.skip or frame.size > self.cap:
            return False
        self._handed.append(frame)
        return True

    def receive(self, data: Chunk) -> None:
        """Decode ``data`` (not empty) with the direction's decoder."""
        self._at_boundary = False
        self.decoder.receive_data(data)

    def ends_inside(self, remaining: int) -> None:
        """The forwarding side, which followed the framing, says the stream ends inside a frame
        (``remaining`` bytes of it still to come, 0: not known); said before the end of stream,
        and heeded only when a loss hid that frame's start (`end`)."""
        self._ends_inside = remaining

    def end(self) -> None:
        """The direction's stream ended (its end of stream comes after every frame handed)."""
        self.ended = True
        hinted, self._ends_inside = self._ends_inside, None
        if self.skip or self._in_line or (self.resync and hinted is not None):
            # Inside a frame whose start was lost: the decoder never saw it, so this says
            # what the decoder says of a frame cut short, and stops, as it does.
            self._cut = truncated(f"{self._where_cut(hinted)} partly unobserved")
            self.skip, self._in_line = 0, False
            return
        self.decoder.receive_eof()

    def _where_cut(self, hinted: Optional[int]) -> str:
        """Where in a frame whose start was lost the stream ended: by the bytes of it skipped
        here, else by what the forwarding side said (``hinted``)."""
        remaining = self.skip or hinted
        if remaining:
            return f"{remaining} bytes before the end of a frame"
        if self._in_line or self.profile.framing is Framing.LINE:
            return "in a line"
        return "inside a frame"

    def stop(self) -> None:
        """Decoding stopped for good: hold nothing more."""
        self.ended = True
        self._handed.clear()
        self.decoder.receive_eof()

    def take_lost(self, t: float) -> tuple[int, float]:
        """The bytes lost since the last call, and since when (``t`` if none were lost)."""
        lost, since = self.lost, self.lost_since
        self.lost, self.lost_since = 0, None
        return lost, t if since is None else since

    def lose(self, size: int, t: float) -> None:
        """``size`` forwarded bytes never reached the tap: drop what is held (a partial frame,
        frames not yet taken), start a new decoder, and find the next frame boundary: the end
        of the frame in progress when they all belong to it, else by searching."""
        if self.lost_since is None:
            self.lost_since = t
        if size > 0:
            self.frames = None
        rest = self.skip or (0 if self.resync else self.decoder.body_left)
        self.lost += size + self.buffered
        self._handed.clear()
        self.decoder = self.profile.new_decoder(self.cap)
        if size <= rest:
            self.skip = rest - size
            self.resync = False
            self._at_boundary = not self.skip
        else:
            self.skip = 0
            self._at_boundary = False
            self.resync = True
        self._in_line = False

    def catch_up(self, data: Chunk) -> Optional[Chunk]:
        """After a loss (`resync` or `skip`): count as lost the bytes of ``data`` before the
        next frame boundary, and return those from it on (maybe none); None while it is not
        in ``data``."""
        if self.skip:
            n = min(self.skip, len(data))
            self.skip -= n
            self.lost += n
            if self.skip:
                return None
            self._at_boundary = True
            return data[n:]
        data = bytes(data)
        start = self.profile.find_frame_start(data)
        if start is None:
            self.lost += len(data)
            # Lines: bytes with no newline after a loss end inside a line, whatever was lost.
            self._in_line = self._in_line or (self.profile.framing is Framing.LINE and bool(data))
            return None
        self.lost += start
        self.resync = self._in_line = False
        return data[start:]

    def next_event(self) -> Optional[FramingEvent]:
        """The next frame handed over, else the decoder's next event; None until more bytes
        (or the end of the stream) come."""
        if self._handed:
            if self.frames is not None:
                self.frames += 1
            return self._handed.popleft()
        cut = self._cut
        if cut is not None:
            self._cut = None
            return cut
        event = self.decoder.next_event()
        if isinstance(event, NeedData):
            return None
        if type(event) is Frame or (type(event) is Discarded and event.final):
            # Not skipping, not ended: with nothing buffered, it is between two frames.
            self._at_boundary = not self.decoder.buffered
            if self.frames is not None:
                self.frames += 1
        return event


def requests_waiting(profile: Profile, client: TapInput, server: TapInput) -> Optional[bool]:
    """Whether a client's requests wait for answers, where every client frame is a request and
    every server frame an answer, in order (GOLEM): more client frames crossed whole, decoded
    or skipped over a limit, than the server's, as the forwarding side counts them
    (`OpenConnections.answers_waiting`); an answer too large to observe, or over the cap,
    answers its request all the same. None when not known that way: a server may send
    requests of its own, or bytes were lost."""
    if profile.servers_send_requests or client.frames is None or server.frames is None:
        return None
    return client.frames > server.frames


def truncated(where: str) -> FrameError:
    """What a decoder says of a frame the stream's end cut short (``where``: in it), for one
    whose bytes it was not the one to see: none are held."""
    return FrameError(FrameErrorKind.TRUNCATED, f"stream ended {where}", b"", recoverable=False)
