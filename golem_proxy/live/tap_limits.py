"""What one connection's inspection may hold and say: its limits (`ObserveLimits`), the verdict
that closes a connection under ``--enforce-limits`` (`TapVerdict`), the digest of a frame
too large to hold (`FrameDigest`), and how much of a frame the proxy cut short was read
(`read_before_cut`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Optional

from golem_core.framing import LENGTH_HEADER, FrameError, FrameErrorKind, Framing
from golem_core.profiles import Profile

from .frame_ends import FrameEnds

__all__ = [
    "DEFAULT_LIMITS",
    "PENDING_OVERHEAD",
    "FrameDigest",
    "ObserveLimits",
    "TapVerdict",
    "is_unobserved_frame",
    "read_before_cut",
    "split_header",
]


@dataclass(frozen=True)
class ObserveLimits:
    """What one connection's inspection may hold."""

    frame: int = 32 * 1024 * 1024
    """Frames larger than this are digested, not held (``--observe-frame-limit``)."""
    parse: int = 448 * 1024 * 1024
    """Frames whose parse would hold more than this (`tap_parse.parse_holds`: 30 MiB of
    ``[[],…]`` about 1.1 GiB) are digested, not parsed (``--observe-parse-limit``). A 32 MiB
    frame of numbers or of 3-number arrays (a mesh) holds about 250 MiB."""
    pending: int = 131_072
    """Requests waiting for an answer, per connection. A pipelining client can have one read's
    worth of requests ahead of their answers (a MiB of 30-byte frames is 35,000), so this is
    not small; ``pending_bytes`` is what bounds memory."""
    pending_bytes: int = 64 * 1024 * 1024
    """What the requests waiting for an answer may cost, per connection: their bytes, what
    their parsed messages hold (`json_cost.structure_holds`), and `PENDING_OVERHEAD` each
    for the objects that describe them."""


DEFAULT_LIMITS = ObserveLimits()
"""The limits of a connection whose session sets none."""

PENDING_OVERHEAD = 1024
"""Bytes a waiting request costs beyond its payload and its parsed message: its FrameSeen,
its pending entry (`ConnectionPairing.hold`)."""


@dataclass(frozen=True)
class TapVerdict:
    """Why a connection must be closed under ``--enforce-limits`` (None: keep going)."""

    reason: str


class FrameDigest:
    """A frame too large to observe, streaming through SHA-256."""

    def __init__(self, header: bytes, first: bytes, declared: Optional[int]) -> None:
        self.header = header
        self.size = len(header) + len(first)
        self.hash = hashlib.sha256(first)
        self.ends = FrameEnds(first)
        """Its first and last bytes, where its id is read (`FrameEnds.reply_id`)."""
        self.declared = declared
        self.delivered: Optional[int] = None
        """Its first bytes that reached their receiver, when the rest did not
        (`ConnectionTap.mark_undelivered`); None: all did, as far as is known."""

    @property
    def frame_size(self) -> Optional[int]:
        """The frame's size on the wire, when its header declares it (length-prefixed)."""
        return None if self.declared is None else len(self.header) + self.declared

    def add(self, data: bytes) -> None:
        self.size += len(data)
        self.hash.update(data)
        self.ends.add(data)


def is_unobserved_frame(error: FrameError, decoder_cap: int, cap: int) -> bool:
    """An "oversized" frame that is only over the observation limit (``decoder_cap``), not the
    protocol's ``cap``: legitimate traffic the tap does not hold, but digests."""
    if error.kind is not FrameErrorKind.OVERSIZED or not error.recoverable:
        return False
    if decoder_cap >= cap:
        return False
    declared = error.declared_length
    return declared is None or declared <= cap


def split_header(profile: Profile, raw: bytes) -> tuple[bytes, bytes]:
    """The frame header (length-prefixed framing) and the payload bytes that follow it."""
    if profile.framing is Framing.LENGTH_PREFIXED:
        return raw[:4], raw[4:]
    return b"", raw


def read_before_cut(profile: Profile, raw: bytes, digest: Optional[FrameDigest], how: str) -> str:
    """What is said of a frame whose stream the proxy ended inside it (``how``:
    `FramingErrorSeen.cut`), its first bytes ``raw`` (or ``digest``, one too large to hold):
    ``20 of 124 bytes read before the proxy reset the client``; without a header that says
    its size, ``20 bytes of a frame read before …``."""
    if digest is not None:
        read, size = digest.size, digest.frame_size
    else:
        read, size = len(raw), None
        header, _ = split_header(profile, raw)
        if len(header) == LENGTH_HEADER.size:
            size = len(header) + LENGTH_HEADER.unpack(header)[0]
    if not read:  # its first bytes went unobserved (the observer was behind)
        return f"part of a frame read before {how}"
    if size is None:
        return f"{read:,} bytes of a frame read before {how}"
    return f"{read:,} of {size:,} bytes read before {how}"
