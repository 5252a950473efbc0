"""Showing a captured PNG in a terminal: a small PNG decoder (stdlib zlib) and a rich
renderable that draws the image with half blocks (``▀``: the top pixel as the foreground
colour, the bottom one as the background), two pixel rows per text line.

The PNG comes from a peer, so it is hostile input: every chunk's CRC is checked, the pixel
count and the inflated size are bounded before anything large is allocated, and anything this
decoder does not read (interlacing, bit depths other than 8) is a `PngError` saying so, never
a crash. Real captures (Rhino's: 8-bit RGB or RGBA) and the headless plugin's (8-bit RGB) are
8-bit, non-interlaced.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from rich.color import Color
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style

__all__ = ["HalfBlockImage", "Pixels", "PngError", "decode_png"]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_PIXELS = 4096 * 4096
"""The largest image decoded (the headless plugin's captures are at most 4096 x 4096)."""

# Colour type → samples per pixel (8-bit samples only).
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


class PngError(ValueError):
    """A PNG that cannot be shown; the message says why."""


@dataclass(frozen=True)
class Pixels:
    """An RGB image: ``rgb`` holds ``width * height * 3`` bytes, rows top to bottom."""

    width: int
    height: int
    rgb: bytes

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        at = (y * self.width + x) * 3
        return self.rgb[at], self.rgb[at + 1], self.rgb[at + 2]


def decode_png(data: bytes, max_pixels: int = MAX_PIXELS) -> Pixels:
    """Decode an 8-bit, non-interlaced PNG to RGB (alpha composited over black). Raises
    PngError for anything else, a damaged file, or more than ``max_pixels`` pixels."""
    if not data.startswith(PNG_SIGNATURE):
        raise PngError("not a PNG (no PNG signature)")
    header = b""
    palette = b""
    compressed: list[bytes] = []
    at = len(PNG_SIGNATURE)
    while True:
        if at + 8 > len(data):
            raise PngError("the PNG ends before its IEND chunk")
        length, kind = struct.unpack("!I4s", data[at : at + 8])
        body = data[at + 8 : at + 8 + length]
        crc = data[at + 8 + length : at + 12 + length]
        if len(body) != length or len(crc) != 4:
            raise PngError(f"the PNG's {kind!r} chunk is cut short")
        if zlib.crc32(kind + body) & 0xFFFFFFFF != struct.unpack("!I", crc)[0]:
            raise PngError(f"the PNG's {kind!r} chunk fails its CRC")
        at += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"PLTE":
            palette = body
        elif kind == b"IDAT":
            compressed.append(body)
        elif kind == b"IEND":
            break
    if len(header) != 13:
        raise PngError("the PNG has no valid IHDR chunk")
    width, height, depth, color, _, _, interlace = struct.unpack("!IIBBBBB", header)
    if width == 0 or height == 0 or width * height > max_pixels:
        raise PngError(f"a {width}x{height} image is not shown (at most {max_pixels} pixels)")
    channels = _CHANNELS.get(color)
    if channels is None or depth != 8:
        raise PngError(f"PNG colour type {color} at {depth} bits is not supported (8-bit only)")
    if interlace:
        raise PngError("interlaced PNGs are not supported")
    if color == 3 and len(palette) < 3:
        raise PngError("the PNG's palette is missing")
    stride = width * channels
    expected = height * (stride + 1)
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(b"".join(compressed), expected)
    except zlib.error as exc:
        raise PngError(f"the PNG's image data is damaged ({exc})") from None
    if len(raw) < expected:
        raise PngError("the PNG's image data is cut short")
    samples = _unfilter(raw, height, stride, channels)
    return Pixels(width, height, _to_rgb(samples, color, palette))


def _unfilter(raw: bytes, height: int, stride: int, bpp: int) -> bytes:
    out = bytearray(height * stride)
    previous = bytearray(stride)
    for row in range(height):
        start = row * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:  # Sub
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:  # Up
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous))
        elif kind == 3:  # Average
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:  # Paeth
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = previous[i]
                c = previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        elif kind != 0:
            raise PngError(f"unknown PNG filter type {kind} on row {row}")
        out[row * stride : (row + 1) * stride] = line
        previous = line
    return bytes(out)


def _to_rgb(samples: bytes, color: int, palette: bytes) -> bytes:
    if color == 2:
        return samples
    if color == 0:
        return bytes(v for v in samples for _ in range(3))
    if color == 3:
        colours = [palette[i : i + 3] for i in range(0, len(palette) - 2, 3)]
        black = b"\x00\x00\x00"
        return b"".join(colours[i] if i < len(colours) else black for i in samples)
    if color == 4:  # grey + alpha, over black
        return bytes(g * a // 255 for g, a in zip(samples[::2], samples[1::2]) for _ in range(3))
    # RGBA over black
    rgb = bytearray()
    for i in range(0, len(samples), 4):
        alpha = samples[i + 3]
        rgb += bytes(
            (
                samples[i] * alpha // 255,
                samples[i + 1] * alpha // 255,
                samples[i + 2] * alpha // 255,
            )
        )
    return bytes(rgb)


class HalfBlockImage:
    """A rich renderable of ``pixels`` at most ``max_width`` cells wide (and never wider than
    the image or the space given), its aspect ratio kept: one cell is one pixel wide and two
    pixels tall."""

    def __init__(self, pixels: Pixels, max_width: int = 80) -> None:
        self.pixels = pixels
        self.max_width = max_width

    def _width(self, available: int) -> int:
        return max(1, min(self.pixels.width, self.max_width, available))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = self._width(options.max_width)
        return Measurement(width, width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        pixels = self.pixels
        width = self._width(options.max_width)
        height = max(1, round(pixels.height * width / pixels.width))
        rows = (height + 1) // 2
        cache: dict[tuple[int, int, int], Color] = {}

        def colour(x: int, y: int) -> Color:
            # Nearest neighbour: the pixel at the centre of the cell's share of the image.
            px = min(pixels.width - 1, int((x + 0.5) * pixels.width / width))
            py = min(pixels.height - 1, int((y + 0.5) * pixels.height / height))
            rgb = pixels.pixel(px, py)
            found = cache.get(rgb)
            if found is None:
                found = cache[rgb] = Color.from_rgb(*rgb)
            return found

        for row in range(rows):
            top, bottom = 2 * row, 2 * row + 1
            for x in range(width):
                below = colour(x, bottom) if bottom < height else None
                yield Segment("▀", Style(color=colour(x, top), bgcolor=below))
            yield Segment.line()
