"""The framing vocabulary: how payloads are delimited, the events a decoder yields, and the
encoders that frame a payload.

Two framings share one event vocabulary:

* length-prefixed: a 4-byte big-endian unsigned length (`struct` format ``!I``) then that many
  payload bytes (GOLEM). Default cap 64 MiB.
* line: one payload per ``\\n``-terminated line (JSON-RPC over NDJSON, Scrybe 0.6). Default cap
  16 MiB, counted with the newline as the Scrybe contract counts it.

The incremental decoders that produce these events live in `golem_core.decoders`.
"""

from __future__ import annotations

import enum
import json
import struct
from dataclasses import dataclass
from typing import Any, Optional, Union

__all__ = [
    "DEFAULT_LENGTH_PREFIXED_CAP",
    "DEFAULT_LINE_CAP",
    "LENGTH_HEADER",
    "NEED_DATA",
    "Discarded",
    "EndOfStream",
    "Event",
    "Frame",
    "FrameError",
    "FrameErrorKind",
    "Framing",
    "NeedData",
    "encode_json",
    "encode_length_prefixed",
    "encode_line",
    "find_frame_start",
]

DEFAULT_LENGTH_PREFIXED_CAP = 64 * 1024 * 1024
DEFAULT_LINE_CAP = 16 * 1024 * 1024

LENGTH_HEADER = struct.Struct("!I")
"""The header of a length-prefixed frame: the payload's size, 4 bytes big-endian."""
_HEADER_SIZE = LENGTH_HEADER.size


class Framing(enum.Enum):
    """How payloads are delimited on a stream."""

    LENGTH_PREFIXED = "length-prefixed"
    LINE = "line"


class FrameErrorKind(enum.Enum):
    """The closed set of framing-level failures."""

    OVERSIZED = "oversized"
    """The header (or the line so far) exceeds the cap."""
    TRUNCATED = "truncated"
    """The stream ended in the middle of a frame."""


@dataclass(frozen=True)
class Frame:
    """One complete frame: ``header + payload + terminator`` are its exact bytes on the wire."""

    payload: bytes
    header: bytes = b""
    terminator: bytes = b""

    @property
    def raw(self) -> bytes:
        """The frame's exact bytes as they crossed the wire."""
        return self.header + self.payload + self.terminator

    @property
    def size(self) -> int:
        """Number of bytes the frame occupied on the wire."""
        return len(self.header) + len(self.payload) + len(self.terminator)


@dataclass(frozen=True)
class FrameError:
    """Bad framing. ``raw`` holds the bytes this event consumed (header and any buffered part)."""

    kind: FrameErrorKind
    detail: str
    raw: bytes
    recoverable: bool
    declared_length: Optional[int] = None

    @property
    def size(self) -> int:
        return len(self.raw)


@dataclass(frozen=True)
class Discarded:
    """Bytes of an oversized frame, skipped without buffering while resynchronising."""

    raw: bytes
    final: bool
    """True for the last piece: the decoder is back at a frame boundary after it."""

    @property
    def size(self) -> int:
        return len(self.raw)


@dataclass(frozen=True)
class EndOfStream:
    """The peer closed the stream at a frame boundary (or after a reported truncation)."""

    raw: bytes = b""


class NeedData:
    """Sentinel type: no event can be produced until more bytes (or EOF) arrive."""

    _instance: Optional[NeedData] = None

    def __new__(cls) -> NeedData:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA = NeedData()

Event = Union[Frame, FrameError, Discarded, EndOfStream]

_unpack_header = LENGTH_HEADER.unpack_from


# json.dumps with any keyword builds a new encoder per call; one shared encoder with the same
# settings produces the same text at a fraction of the cost.
_encode_reference = json.JSONEncoder(ensure_ascii=False).encode


def encode_json(obj: Any) -> bytes:
    """Serialise a message exactly as the GOLEM reference does: compact-ish JSON, UTF-8, no
    ASCII escaping (``json.dumps(obj, ensure_ascii=False).encode("utf-8")``)."""
    return _encode_reference(obj).encode("utf-8")


def encode_length_prefixed(payload: bytes) -> bytes:
    """Frame a payload with its 4-byte big-endian length header."""
    return LENGTH_HEADER.pack(len(payload)) + payload


def encode_line(payload: bytes) -> bytes:
    """Frame a payload as one NDJSON line. The payload must not contain a newline."""
    if b"\n" in payload:
        raise ValueError("a line-framed payload cannot contain a newline")
    return payload + b"\n"


_RESYNC_SCAN = 64 * 1024
"""How far into a chunk `find_frame_start` looks for a length-prefixed frame boundary."""


def find_frame_start(framing: Framing, data: bytes, cap: int) -> Optional[int]:
    """Where a frame plausibly starts in ``data``, a chunk taken from the middle of a stream
    whose earlier bytes were not seen (a decoder resynchronising after a gap), or None.

    Lines: just after the first newline. Length-prefixed: the first offset whose 4-byte
    header declares at most ``cap`` bytes and is followed by a JSON object (``{``) whose
    last byte, when it is inside ``data``, is ``}``; since a JSON text never contains the zero
    bytes a header of a frame under 16 MiB starts with, a false match needs a frame to break
    off exactly inside another's header. Only the first 64 KiB are searched."""
    if framing is Framing.LINE:
        newline = data.find(b"\n")
        return None if newline < 0 else newline + 1
    end = min(len(data), _RESYNC_SCAN + _HEADER_SIZE)
    brace = data.find(b"{", _HEADER_SIZE, end)
    while brace >= 0:
        start = brace - _HEADER_SIZE
        (length,) = _unpack_header(data, start)
        if 2 <= length <= cap:
            last = start + _HEADER_SIZE + length - 1
            if last >= len(data) or data[last : last + 1] == b"}":
                return start
        brace = data.find(b"{", brace + 1, end)
    return None
