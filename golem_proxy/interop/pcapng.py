"""A small pcapng writer and the loopback Ethernet/IP/TCP packets it carries.

pcapng (https://www.ietf.org/archive/id/draft-ietf-opsawg-pcapng-02.html) is a sequence of
blocks; a capture of ours needs three kinds: one Section Header Block, one Interface
Description Block (Ethernet, microsecond timestamps) and an Enhanced Packet Block per packet.
Every block is written little-endian; the byte-order magic tells readers so.
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
    block per `packet`. Raises OSError when ``out`` cannot be written."""

    def __init__(self, out: IO[bytes], application: str, interface: str = "lo") -> None:
        self._out = out
        self.packets = 0
        options = _option(_SHB_USERAPPL, application.encode("utf-8")) + _option(_OPT_END, b"")
        out.write(_block(_SHB, struct.pack("<IHHq", _BYTE_ORDER_MAGIC, 1, 0, -1) + options))
        options = (
            _option(_IF_NAME, interface.encode("utf-8"))
            + _option(_IF_TSRESOL, bytes([6]))  # 10**-6 s: the recording's resolution
            + _option(_OPT_END, b"")
        )
        out.write(_block(_IDB, struct.pack("<HHI", _LINKTYPE_ETHERNET, 0, 0) + options))

    def packet(self, microseconds: int, data: bytes, comment: str = "") -> None:
        """One Enhanced Packet Block: ``data`` captured whole at ``microseconds`` since the
        epoch (clamped to what the format holds)."""
        stamp = min(max(microseconds, 0), _MAX_TIMESTAMP)
        pad = b"\0" * (-len(data) % 4)
        options = b""
        if comment:
            options = _option(_OPT_COMMENT, comment.encode("utf-8")) + _option(_OPT_END, b"")
        head = struct.pack("<IIIII", 0, stamp >> 32, stamp & 0xFFFFFFFF, len(data), len(data))
        total = 12 + len(head) + len(data) + len(pad) + len(options)
        write = self._out.write
        write(struct.pack("<II", _EPB, total) + head)
        write(data)
        write(pad + options + struct.pack("<I", total))
        self.packets += 1


def _checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of ``data``. A one's-complement sum of 16-bit words is
    the big-endian number they form modulo 0xFFFF, which Python computes in C."""
    if len(data) % 2:
        data += b"\0"
    total = int.from_bytes(data, "big") % 0xFFFF
    if total == 0 and any(data):
        total = 0xFFFF
    return ~total & 0xFFFF


def tcp_packet(
    source: Endpoint, target: Endpoint, seq: int, ack: int, flags: int, payload: bytes = b""
) -> bytes:
    """An Ethernet frame carrying one TCP segment from ``source`` to ``target`` (both IPv4 or
    both IPv6), with correct IP and TCP checksums. ``payload`` must fit one packet
    (`MAX_SEGMENT`)."""
    tcp = struct.pack(
        "!HHIIBBHHH",
        source.port,
        target.port,
        seq & 0xFFFFFFFF,
        ack & 0xFFFFFFFF if flags & ACK else 0,
        5 << 4,
        flags,
        65535,  # window: loopback never throttles what was recorded
        0,
        0,
    )
    length = len(tcp) + len(payload)
    src, dst = source.address.packed, target.address.packed
    if source.address.version == 4:
        pseudo = src + dst + struct.pack("!BBH", 0, _PROTO_TCP, length)
        ip = struct.pack("!BBHHHBBH", 0x45, 0, 20 + length, 0, 0x4000, 64, _PROTO_TCP, 0)
        ip = ip[:10] + struct.pack("!H", _checksum(ip + src + dst)) + src + dst
        ethertype = _ETHERTYPE_IPV4
    else:
        pseudo = src + dst + struct.pack("!I3xB", length, _PROTO_TCP)
        ip = struct.pack("!IHBB", 6 << 28, length, _PROTO_TCP, 64) + src + dst
        ethertype = _ETHERTYPE_IPV6
    tcp = tcp[:16] + struct.pack("!H", _checksum(pseudo + tcp + payload)) + tcp[18:]
    ethernet = b"\0" * 12 + struct.pack("!H", ethertype)
    return ethernet + ip + tcp + payload
