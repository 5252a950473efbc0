"""Incremental, sans-IO decoders: feed arbitrary chunks, pull framing events.

* `LengthPrefixedDecoder`: GOLEM's 4-byte big-endian length then the payload.
* `LineDecoder`: one payload per ``\\n``-terminated line (JSON-RPC over NDJSON, Scrybe 0.6).

Invariant that tests pin: the ``raw`` bytes of all events a decoder yields, concatenated in
order, are exactly the bytes fed to it. Nothing is lost, nothing is re-encoded, so a consumer can
forward, record or export byte-exact streams from events alone.

The cap is checked as soon as the header (or the line so far) exceeds it, before any payload is
buffered. Bad input never raises: it becomes a `FrameError` event whose ``recoverable`` flag says
whether the decoder can find the next frame boundary. By default an oversized frame is skipped
without buffering (its bytes flow out as `Discarded` events) and decoding resumes after it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Optional, Union

from .framing import (
    DEFAULT_LENGTH_PREFIXED_CAP,
    DEFAULT_LINE_CAP,
    LENGTH_HEADER,
    NEED_DATA,
    Discarded,
    EndOfStream,
    Event,
    Frame,
    FrameError,
    FrameErrorKind,
    Framing,
    NeedData,
)

__all__ = ["Chunk", "Decoder", "LengthPrefixedDecoder", "LineDecoder", "decoder_for"]

Chunk = Union[bytes, memoryview]
"""A chunk of the stream: bytes, or a view of bytes read (a large frame's pieces are joined
once, views or not)."""

_HEADER_SIZE = LENGTH_HEADER.size
# Compact the input buffer once this many consumed bytes sit in front of it; compacting on every
# frame would make a stream of small frames quadratic in the chunk size.
_COMPACT_AT = 256 * 1024
# A frame still missing more than this collects its chunks in a list joined once, rather than
# being re-concatenated with every chunk (quadratic when a client trickles a big frame).
_PARTS_FROM = 4096
_unpack_header = LENGTH_HEADER.unpack_from
_object_new = object.__new__


def _make_frame(payload: bytes, header: bytes, terminator: bytes) -> Frame:
    # The hot path: a frozen dataclass's generated __init__ sets each field through
    # object.__setattr__, which costs more than the rest of decoding a small frame.
    frame: Frame = _object_new(Frame)
    fields = frame.__dict__
    fields["payload"] = payload
    fields["header"] = header
    fields["terminator"] = terminator
    return frame


class Decoder:
    """Shared buffer handling: a bytearray with a read offset, compacted lazily."""

    framing: Framing

    def __init__(self, max_payload: int, skip_oversized: bool) -> None:
        if max_payload < 0:
            raise ValueError("max_payload must be >= 0")
        self.max_payload = max_payload
        self.skip_oversized = skip_oversized
        self._buf = bytearray()
        self._pos = 0
        self._eof = False
        self._done = False
        self._skip_remaining = 0  # bytes of an oversized frame still to discard
        self._skip_to_newline = False
        self.bytes_received = 0
        self.frames_decoded = 0

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned in an event."""
        return len(self._buf) - self._pos

    def held(self) -> bytes:
        """The bytes `buffered` counts, in stream order: what a caller that stops decoding
        (its connection ended) still owes the stream, e.g. the start of a frame."""
        return bytes(self._buf[self._pos :])

    @property
    def body_left(self) -> int:
        """Bytes of the frame in progress still to come after those fed, when its end is known
        and everything `buffered` belongs to it; else 0 (between frames, a header split,
        lines, whose end is known only by looking). A caller that will not feed the next
        bytes (they went unseen) knows where the next frame starts if they are fewer."""
        return 0

    @property
    def closed(self) -> bool:
        """True once the decoder has reported EOF or a fatal error and takes no more data."""
        return self._done

    def receive_data(self, data: Chunk) -> None:
        """Feed the next chunk of the stream. Raises RuntimeError after EOF was fed."""
        if self._eof:
            raise RuntimeError("receive_data() after receive_eof()")
        if data:
            self.bytes_received += len(data)
            if self._done:
                return  # a fatal error stopped decoding; the caller forwards bytes anyway
            self._buf += data

    def receive_eof(self) -> None:
        """Tell the decoder the stream has ended."""
        self._eof = True

    def _take(self, n: int) -> bytes:
        end = self._pos + n
        chunk = bytes(self._buf[self._pos : end])
        self._pos = end
        if self._pos >= _COMPACT_AT and self._pos * 2 >= len(self._buf):
            del self._buf[: self._pos]
            self._pos = 0
        return chunk

    def _take_all(self) -> bytes:
        chunk = bytes(self._buf[self._pos :])
        self._buf = bytearray()
        self._pos = 0
        return chunk

    def _at_eof(self) -> Union[Event, NeedData]:
        if not self._eof:
            return NEED_DATA
        self._done = True
        if self.buffered:
            raw = self._take_all()
            return FrameError(
                FrameErrorKind.TRUNCATED,
                f"stream ended {len(raw)} bytes into a frame",
                raw,
                recoverable=False,
            )
        return EndOfStream()

    def _discard(self) -> Union[Discarded, NeedData, None]:
        """Discard bytes of an oversized length-prefixed frame; None when not skipping."""
        if not self._skip_remaining:
            return None
        available = self.buffered
        if not available:
            return NEED_DATA
        n = min(available, self._skip_remaining)
        self._skip_remaining -= n
        return Discarded(self._take(n), final=self._skip_remaining == 0)

    def next_event(self) -> Union[Event, NeedData]:  # pragma: no cover - abstract
        raise NotImplementedError

    def events(self) -> Iterator[Event]:
        """Yield every event available now; stops at NEED_DATA (or after the final event)."""
        next_event = self.next_event
        while True:
            event = next_event()
            if event is NEED_DATA:
                return
            yield event  # type: ignore[misc]
            if type(event) is EndOfStream:
                return

    def feed(self, data: bytes) -> list[Event]:
        """Convenience: receive ``data`` and return the events now available."""
        self.receive_data(data)
        return list(self.events())


class LengthPrefixedDecoder(Decoder):
    """Decoder for ``!I``-length-prefixed frames (GOLEM).

    The buffer is an immutable ``bytes`` object rather than the base class's bytearray: a chunk
    that arrives at a frame boundary becomes the buffer without a copy, and each payload is one
    slice. A frame much larger than what is buffered accumulates its chunks in a list that is
    joined once, so a 64 MiB frame costs one copy, not a quadratic series of them.
    """

    framing = Framing.LENGTH_PREFIXED

    def __init__(
        self, max_payload: int = DEFAULT_LENGTH_PREFIXED_CAP, *, skip_oversized: bool = True
    ) -> None:
        super().__init__(max_payload, skip_oversized)
        self._buf: bytes = b""  # type: ignore[assignment]
        self._large_header = b""
        self._parts: list[Chunk] = []
        self._overflow: list[bytes] = []
        self._parts_size = 0
        self._need = 0  # payload size of the large frame being collected, 0 when none

    @property
    def buffered(self) -> int:
        large = _HEADER_SIZE + self._parts_size + sum(map(len, self._overflow)) if self._need else 0
        return len(self._buf) - self._pos + large

    @property
    def body_left(self) -> int:
        """As `Decoder.body_left`: by the header's length, or what is left to skip of an
        oversized frame (whatever the cap, a frame ends at its declared length)."""
        if self._done:
            return 0
        if self._skip_remaining:
            return max(0, self._skip_remaining - self.buffered)
        if self._need:
            return max(0, self._need - self._parts_size)
        left = len(self._buf) - self._pos
        if left < _HEADER_SIZE:
            return 0
        length: int = _unpack_header(self._buf, self._pos)[0]
        return max(0, _HEADER_SIZE + length - left)

    def held(self) -> bytes:
        """The bytes `buffered` counts, in stream order (a large frame's pieces joined)."""
        rest = bytes(self._buf[self._pos :])
        if not self._need:
            return rest
        return b"".join([rest, self._large_header, *self._parts, *self._overflow])

    def receive_data(self, data: Chunk) -> None:
        """Feed the next chunk of the stream. Raises RuntimeError after EOF was fed."""
        if self._eof:
            raise RuntimeError("receive_data() after receive_eof()")
        if not data:
            return
        self.bytes_received += len(data)
        if self._done:
            return  # a fatal error stopped decoding; the caller forwards bytes anyway
        if self._need:
            if self._parts_size >= self._need:
                self._overflow.append(bytes(data))  # the frame is complete: these follow it
            else:
                self._parts.append(data)  # a view stays one: the frame is joined once, at the end
                self._parts_size += len(data)
            return
        data = bytes(data)  # no copy when it is bytes already
        buf = self._buf
        pos = self._pos
        left = len(buf) - pos
        if not left:
            self._buf = data
            self._pos = 0
            return
        if left >= _HEADER_SIZE and not self._skip_remaining:
            (length,) = _unpack_header(buf, pos)
            if length <= self.max_payload and length + _HEADER_SIZE - left > _PARTS_FROM:
                # A large frame: keep its payload pieces apart and join them once.
                self._large_header = buf[pos : pos + _HEADER_SIZE]
                self._parts = [buf[pos + _HEADER_SIZE :], data]
                self._parts_size = left - _HEADER_SIZE + len(data)
                self._need = length
                self._buf = b""
                self._pos = 0
                return
        self._buf = buf[pos:] + data
        self._pos = 0

    def _finish_large_frame(self) -> Frame:
        """Join the pieces of a complete large frame; bytes past it become the buffer."""
        parts = self._parts
        extra = self._parts_size - self._need
        rest = b""
        if extra:
            last = parts[-1]
            parts[-1] = last[: len(last) - extra]
            rest = bytes(last[len(last) - extra :])
        payload = b"".join(parts)
        frame = _make_frame(payload, self._large_header, b"")
        if self._overflow:
            rest = b"".join([rest, *self._overflow])
            self._overflow = []
        self._parts = []
        self._parts_size = 0
        self._need = 0
        self._buf = rest
        self._pos = 0
        self.frames_decoded += 1
        return frame

    def _unjoined(self) -> None:
        # Give up on the large-frame path (EOF inside it): the pieces become the buffer again.
        if self._need:
            self._buf = b"".join([self._large_header, *self._parts, *self._overflow])
            self._overflow = []
            self._pos = 0
            self._parts = []
            self._parts_size = 0
            self._need = 0

    def _take(self, n: int) -> bytes:
        self._unjoined()
        end = self._pos + n
        chunk = self._buf[self._pos : end]
        self._pos = end
        return chunk

    def _take_all(self) -> bytes:
        self._unjoined()
        chunk = self._buf[self._pos :]
        self._buf = b""
        self._pos = 0
        return chunk

    def next_event(self) -> Union[Event, NeedData]:
        """Return the next event, or NEED_DATA. Never raises on bad input."""
        if self._done:
            return NEED_DATA
        if self._skip_remaining:
            skipped = self._discard()
            if skipped is NEED_DATA and self._eof:
                self._done = True
                return FrameError(
                    FrameErrorKind.TRUNCATED,
                    f"stream ended {self._skip_remaining} bytes before the end of a skipped frame",
                    b"",
                    recoverable=False,
                )
            assert skipped is not None
            return skipped
        if self._need:
            if self._parts_size < self._need:
                return self._at_eof()
            return self._finish_large_frame()
        buf = self._buf
        pos = self._pos
        if len(buf) - pos < _HEADER_SIZE:
            return self._at_eof()
        (length,) = _unpack_header(buf, pos)
        if length > self.max_payload:
            header = self._take(_HEADER_SIZE)
            detail = f"header declares {length} bytes, over the {self.max_payload}-byte cap"
            if self.skip_oversized:
                self._skip_remaining = length
                return FrameError(FrameErrorKind.OVERSIZED, detail, header, True, length)
            self._done = True
            rest = self._take_all()
            return FrameError(FrameErrorKind.OVERSIZED, detail, header + rest, False, length)
        start = pos + _HEADER_SIZE
        end = start + length
        if len(buf) < end:
            return self._at_eof()
        frame = _make_frame(buf[start:end], buf[pos:start], b"")
        self._pos = end
        self.frames_decoded += 1
        return frame


class LineDecoder(Decoder):
    """Decoder for newline-delimited frames (NDJSON, Scrybe 0.6).

    The cap counts the trailing newline, as the Scrybe client does: a line of ``max_line``
    bytes including its ``\\n`` is accepted, one byte more is `OVERSIZED`.
    """

    framing = Framing.LINE

    def __init__(self, max_line: int = DEFAULT_LINE_CAP, *, skip_oversized: bool = True) -> None:
        super().__init__(max_line, skip_oversized)
        self._scanned = 0  # bytes after _pos already known to hold no newline

    def next_event(self) -> Union[Event, NeedData]:
        """Return the next event, or NEED_DATA. Never raises on bad input."""
        if self._done:
            return NEED_DATA
        if self._skip_to_newline:
            return self._skip_line()
        buf = self._buf
        pos = self._pos
        newline = buf.find(b"\n", pos + self._scanned)
        if newline < 0:
            pending = len(buf) - pos
            if pending and pending >= self.max_payload:
                # Even a newline in the next byte would make the line one byte too long.
                return self._oversized(pending)
            self._scanned = pending
            return self._at_eof()
        line_size = newline + 1 - pos
        self._scanned = 0
        if line_size > self.max_payload:
            return self._oversized(line_size)
        frame = _make_frame(bytes(buf[pos:newline]), b"", b"\n")
        self._pos = newline + 1
        if self._pos >= _COMPACT_AT and self._pos * 2 >= len(buf):
            del buf[: self._pos]
            self._pos = 0
        self.frames_decoded += 1
        return frame

    def _oversized(self, seen: int) -> FrameError:
        detail = f"line exceeds the {self.max_payload}-byte cap ({seen} bytes without a newline)"
        self._scanned = 0
        if self.skip_oversized:
            # Report the first cap's worth of bytes, then discard up to the next newline.
            raw = self._take(min(seen, self.max_payload))
            self._skip_to_newline = True
            return FrameError(FrameErrorKind.OVERSIZED, detail, raw, True)
        self._done = True
        return FrameError(FrameErrorKind.OVERSIZED, detail, self._take_all(), False)

    def _skip_line(self) -> Union[Event, NeedData]:
        buf = self._buf
        newline = buf.find(b"\n", self._pos)
        if newline < 0:
            if self.buffered:
                return Discarded(self._take_all(), final=False)
            if self._eof:
                self._done = True
                return EndOfStream()
            return NEED_DATA
        self._skip_to_newline = False
        return Discarded(self._take(newline + 1 - self._pos), final=True)


def decoder_for(
    framing: Framing, cap: Optional[int] = None, *, skip_oversized: bool = True
) -> Decoder:
    """Return a fresh decoder for ``framing`` with ``cap`` (or that framing's default cap)."""
    if framing is Framing.LENGTH_PREFIXED:
        return LengthPrefixedDecoder(
            DEFAULT_LENGTH_PREFIXED_CAP if cap is None else cap, skip_oversized=skip_oversized
        )
    return LineDecoder(DEFAULT_LINE_CAP if cap is None else cap, skip_oversized=skip_oversized)
