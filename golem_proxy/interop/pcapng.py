"""A small pcapng writer and the loopback Ethernet/IP/TCP packets it carries.

pcapng (https://www.ietf.org/archive/id/draft-ietf-opsawg-pcapng-02.html) is a sequence of
blocks; a capture of ours needs three kinds: one Section Header Block, one Interface
Description Block (Ethernet, microsecond timestamps) and an Enhanced Packet Block per packet.
Every block is written little-endian; the byte-order magic tells readers so. A section and a
packet may carry a comment (``opt_comment``), which Wireshark shows in the capture's
properties and the packet's tree.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from typing import IO, Union

__all__ = [
    "ACK",
    "FIN",
    "MAX_SEGMENT",
    "PSH",
    "RST",
    "SYN",
    "Address",
    "Endpoint",
    "Half",
    "PcapngWriter",
    "tcp_packet",
]

IPAddress = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
Address = IPAddress

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
MAX_SEGMENT = 65_000
"""Payload bytes per TCP segment: an IPv4 packet cannot exceed 65,535 bytes with headers."""

_LINKTYPE_ETHERNET = 1
_SHB, _IDB, _EPB = 0x0A0D0D0A, 0x00000001, 0x00000006
_BYTE_ORDER_MAGIC = 0x1A2B3C4D
_OPT_END, _OPT_COMMENT, _SHB_USERAPPL, _IF_NAME, _IF_TSRESOL = 0, 1, 4, 2, 9
_MAX_TIMESTAMP = 2**64 - 1
_ETHERTYPE_IPV4, _ETHERTYPE_IPV6 = 0x0800, 0x86DD
_PROTO_TCP = 6


@dataclass(frozen=True)
class Endpoint:
    """One end of a TCP conversation."""

    address: IPAddress
    port: int


def _option(code: int, value: bytes) -> bytes:
    pad = -len(value) % 4
    return struct.pack("<HH", code, len(value)) + value + b"\0" * pad


def _block(kind: int, body: bytes) -> bytes:
    total = 12 + len(body)
    return struct.pack("<II", kind, total) + body + struct.pack("<I", total)


class PcapngWriter:
    """Writes a pcapng capture to ``out``: the section and interface header at once, then one
    block per `packet`. ``comment``, when given, is the section's. Raises OSError when ``out``
    cannot be written."""

    def __init__(
        self, out: IO[bytes], application: str, interface: str = "lo", comment: str = ""
    ) -> None:
        self._out = out
        self.packets = 0
        options = _comment(comment) + _option(_SHB_USERAPPL, application.encode("utf-8"))
        options += _option(_OPT_END, b"")
        out.write(_block(_SHB, struct.pack("<IHHq", _BYTE_ORDER_MAGIC, 1, 0, -1) + options))
        options = (
            _option(_IF_NAME, interface.encode("utf-8"))
            + _option(_IF_TSRESOL, bytes([6]))  # 10**-6 s: the recording's resolution
            + _option(_OPT_END, b"")
        )
        out.write(_block(_IDB, struct.pack("<HHI", _LINKTYPE_ETHERNET, 0, 0) + options))

    def packet(
        self, microseconds: int, headers: bytes, payload: bytes = b"", comment: str = ""
    ) -> None:
        """One Enhanced Packet Block: ``headers`` then ``payload``, captured whole at
        ``microseconds`` since the epoch (clamped to what the format holds), with ``comment``
        when given. The two parts are written one after the other, so a large payload is never
        copied."""
        stamp = min(max(microseconds, 0), _MAX_TIMESTAMP)
        size = len(headers) + len(payload)
        pad = -size % 4
        options = _comment(comment) + _option(_OPT_END, b"") if comment else b""
        total = 32 + size + pad + len(options)
        write = self._out.write
        write(_EPB_HEAD.pack(_EPB, total, 0, stamp >> 32, stamp & 0xFFFFFFFF, size, size) + headers)
        if payload:
            write(payload)
        write(_TRAILERS[pad] + options + total.to_bytes(4, "little"))
        self.packets += 1


def _comment(text: str) -> bytes:
    """An ``opt_comment`` option holding ``text`` (nothing for no text)."""
    return _option(_OPT_COMMENT, text.encode("utf-8", "backslashreplace")) if text else b""


_EPB_HEAD = struct.Struct("<IIIIIII")
_TRAILERS = [b"\0" * pad for pad in range(4)]


def _checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of ``data``."""
    return _fold(_word_sum(data))


def _word_sum(data: bytes) -> int:
    """The one's-complement sum of ``data``'s 16-bit words, modulo 0xFFFF: the big-endian
    number they form is congruent to it (2**16 = 1 mod 0xFFFF), and Python computes that in C."""
    number = int.from_bytes(data, "big")
    if len(data) % 2:
        number <<= 8  # the odd byte is the high half of a last word padded with zero
    return number % 0xFFFF


def _fold(total: int, nonzero: bool = True) -> int:
    total %= 0xFFFF
    if total == 0 and nonzero:
        total = 0xFFFF  # a non-zero sum congruent to 0 is 0xFFFF in one's complement
    return ~total & 0xFFFF


# Ethernet + IP + TCP as the fixed byte runs of a conversation's direction and the fields
# that change per packet: IPv4 (length, checksum), IPv6 (length); then sequence, ack, flags,
# checksum.
_IPV4 = struct.Struct("!16sH6sH12sIIH2sH2s")
_IPV6 = struct.Struct("!18sH2s36sIIH2sH2s")
_TCP_HEADER = 20
_WINDOW = 65535  # loopback never throttles what was recorded
_ZERO16 = b"\0\0"


class Half:
    """One direction of a TCP conversation: the header bytes that do not change from packet
    to packet, and what they add to the checksums, worked out once."""

    def __init__(self, source: Endpoint, target: Endpoint) -> None:
        if source.address.version != target.address.version:
            raise ValueError("both ends of a conversation must be IPv4, or both IPv6")
        self.v4 = source.address.version == 4
        src, dst = source.address.packed, target.address.packed
        addresses = _word_sum(src + dst)
        ends = src + dst + struct.pack("!HH", source.port, target.port)
        self.tcp_sum = addresses + _PROTO_TCP + source.port + target.port + _WINDOW
        # IPv4 header words that never change: version/IHL, don't-fragment, TTL/protocol.
        ttl_proto = 64 << 8 | _PROTO_TCP
        self.ip_sum = addresses + 0x4500 + 0x4000 + ttl_proto
        ethernet = b"\0" * 12
        if self.v4:
            self.first = ethernet + struct.pack("!HH", _ETHERTYPE_IPV4, 0x4500)
            self.middle = struct.pack("!HHH", 0, 0x4000, ttl_proto)
        else:
            self.first = ethernet + struct.pack("!HI", _ETHERTYPE_IPV6, 6 << 28)
            self.middle = struct.pack("!BB", _PROTO_TCP, 64)
        self.ends = ends
        self.window = _WINDOW.to_bytes(2, "big")

    def headers(self, seq: int, ack: int, flags: int, payload: bytes) -> bytes:
        """Ethernet, IP and TCP headers for one segment carrying ``payload`` (which must fit
        one packet, `MAX_SEGMENT`), both checksums correct."""
        seq &= 0xFFFFFFFF
        ack = ack & 0xFFFFFFFF if flags & ACK else 0
        offset_flags = 0x5000 | flags
        length = _TCP_HEADER + len(payload)
        total = self.tcp_sum + length + (seq >> 16) + (seq & 0xFFFF) + (ack >> 16)
        total += (ack & 0xFFFF) + offset_flags + (_word_sum(payload) if payload else 0)
        checksum = ~(total % 0xFFFF or 0xFFFF) & 0xFFFF
        if self.v4:
            ip_checksum = ~((self.ip_sum + 20 + length) % 0xFFFF or 0xFFFF) & 0xFFFF
            return _IPV4.pack(
                self.first, 20 + length, self.middle, ip_checksum, self.ends,
                seq, ack, offset_flags, self.window, checksum, _ZERO16,
            )  # fmt: skip
        return _IPV6.pack(
            self.first, length, self.middle, self.ends,
            seq, ack, offset_flags, self.window, checksum, _ZERO16,
        )  # fmt: skip


def tcp_packet(
    source: Endpoint, target: Endpoint, seq: int, ack: int, flags: int, payload: bytes = b""
) -> bytes:
    """An Ethernet frame carrying one TCP segment from ``source`` to ``target`` (both IPv4 or
    both IPv6), with correct IP and TCP checksums. Raises ValueError for mixed families."""
    return Half(source, target).headers(seq, ack, flags, payload) + payload
