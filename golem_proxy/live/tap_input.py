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
"""

from __future__ import annotations

from collections import deque
from typing import Optional

from golem_core.decoders import Chunk, Decoder
from golem_core.framing import Discarded, Frame, NeedData
from golem_core.framing import Event as FramingEvent
from golem_core.profiles import Profile

__all__ = ["TapInput"]


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
        self.ended = False
        """The stream's end was fed (or decoding stopped): no frame is held open any more."""

    @property
    def buffered(self) -> int:
        """Bytes held: a partial frame in the decoder, frames handed over and not yet taken."""
        handed = sum(frame.size for frame in self._handed) if self._handed else 0
        return self.decoder.buffered + handed

    def take(self, frame: Frame) -> bool:
        """Take a frame a forwarding path decoded, instead of its bytes. False when its bytes
        must be decoded here instead (see the module docstring)."""
        if not self._at_boundary or self.resync or frame.size > self.cap:
            return False
        self._handed.append(frame)
        return True

    def receive(self, data: Chunk) -> None:
        """Decode ``data`` (not empty) with the direction's decoder."""
        self._at_boundary = False
        self.decoder.receive_data(data)

    def end(self) -> None:
        """The direction's stream ended (its end of stream comes after every frame handed)."""
        self.ended = True
        self.decoder.receive_eof()

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
        frames not yet taken), start a new decoder, and look for the next frame boundary."""
        if self.lost_since is None:
            self.lost_since = t
        self.lost += size + self.buffered
        self._handed.clear()
        self.decoder = self.profile.new_decoder(self.cap)
        self._at_boundary = False
        self.resync = True

    def next_event(self) -> Optional[FramingEvent]:
        """The next frame handed over, else the decoder's next event; None until more bytes
        (or the end of the stream) come."""
        if self._handed:
            return self._handed.popleft()
        event = self.decoder.next_event()
        if isinstance(event, NeedData):
            return None
        if type(event) is Frame or (type(event) is Discarded and event.final):
            # Not skipping, not ended: with nothing buffered, it is between two frames.
            self._at_boundary = not self.decoder.buffered
        return event
