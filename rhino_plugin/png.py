"""A minimal PNG writer: 8-bit RGB, one IDAT chunk, filter type 0 on every row.

Pure stdlib (zlib + struct), enough for viewport captures; see the PNG specification,
sections 5 (datastream) and 11.2.2 (IHDR).
"""

from __future__ import annotations

import struct
import zlib

__all__ = ["PNG_SIGNATURE", "encode_rgb"]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_BIT_DEPTH = 8
_COLOR_TYPE_RGB = 2


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack("!I", len(data)) + kind + data + struct.pack("!I", crc)


def encode_rgb(width: int, height: int, pixels: bytes) -> bytes:
    """The PNG file for ``pixels``: ``width * height * 3`` bytes, rows top to bottom, RGB.

    Raises ValueError when the size is not positive or ``pixels`` has the wrong length."""
    if width <= 0 or height <= 0:
        raise ValueError("PNG width and height must be positive")
    stride = width * 3
    if len(pixels) != stride * height:
        raise ValueError(f"expected {stride * height} pixel bytes, got {len(pixels)}")
    raw = bytearray()
    for row in range(height):
        raw.append(0)  # filter type 0 (None) for this scanline
        raw += pixels[row * stride : (row + 1) * stride]
    header = struct.pack("!IIBBBBB", width, height, _BIT_DEPTH, _COLOR_TYPE_RGB, 0, 0, 0)
    return (
        PNG_SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(bytes(raw), 6))
        + _chunk(b"IEND", b"")
    )
