"""Viewport captures in the terminal: a small PNG decoder and a half-block preview.

`viewport.capture` answers with a base64 PNG. `decode_png` reads the PNGs a plugin sends
(8-bit greyscale, RGB, greyscale+alpha or RGBA, not interlaced, every scanline filter of
PNG specification section 9) with zlib and nothing else; anything else raises `PngError`,
and so does an image too large to decode in a blink. `PngPreview` draws a decoded image with
"▀" cells, the upper pixel as the foreground colour and the lower one as the background, scaled
to the width rich offers.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Optional

from rich.color import Color
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style

from ..analysis.captures import PNG_SIGNATURE as SIGNATURE
from ..analysis.captures import png_in as find_png

__all__ = ["MAX_PIXELS", "PngError", "PngImage", "PngPreview", "decode_png", "find_png"]

MAX_PIXELS = 4_000_000
"""Larger images are not decoded (the preview is a thumbnail; decoding is pure Python)."""
_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type → samples per pixel


class PngError(ValueError):
    """The bytes are not a PNG this decoder reads; the message says why."""


@dataclass(frozen=True)
class PngImage:
    width: int
    height: int
    rows: tuple[bytes, ...]
    """One RGB byte string (``width * 3`` bytes) per row, top to bottom."""

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        row = self.rows[y]
        return row[x * 3], row[x * 3 + 1], row[x * 3 + 2]


def decode_png(data: bytes, max_pixels: int = MAX_PIXELS) -> PngImage:
    """The image in ``data``, as RGB rows (alpha is dropped, greyscale expanded).

    Raises PngError for anything but a complete, non-interlaced, 8-bit PNG of at most
    ``max_pixels`` pixels."""
    if not data.startswith(SIGNATURE):
        raise PngError("not a PNG (no signature)")
    offset = len(SIGNATURE)
    header: Optional[tuple[int, ...]] = None
    compressed = bytearray()
    while offset + 8 <= len(data):
        length, kind = struct.unpack("!I4s", data[offset : offset + 8])
        body = data[offset + 8 : offset + 8 + length]
        if len(body) != length:
            raise PngError(f"chunk {kind!r} is cut short")
        offset += 12 + length
        if kind == b"IHDR":
            if length != 13:
                raise PngError("bad IHDR chunk")
            header = struct.unpack("!IIBBBBB", body)
        elif kind == b"IDAT":
            compressed += body
        elif kind == b"IEND":
            break
    if header is None:
        raise PngError("no IHDR chunk")
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in _CHANNELS:
        raise PngError(f"bit depth {depth}, colour type {colour}: not shown")
    if interlace:
        raise PngError("interlaced: not shown")
    if width == 0 or height == 0 or width * height > max_pixels:
        raise PngError(f"{width}x{height} pixels: not shown")
    channels = _CHANNELS[colour]
    stride = width * channels
    try:
        raw = zlib.decompressobj().decompress(bytes(compressed), (stride + 1) * height)
    except zlib.error as exc:
        raise PngError(f"bad image data ({exc})") from None
    if len(raw) < (stride + 1) * height:
        raise PngError("image data cut short")
    rows = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        line = _unfilter(
            raw[start], bytearray(raw[start + 1 : start + 1 + stride]), previous, channels
        )
        rows.append(_to_rgb(bytes(line), channels))
        previous = line
    return PngImage(width, height, tuple(rows))


def _unfilter(kind: int, line: bytearray, previous: bytearray, bpp: int) -> bytearray:
    """Undo one scanline's filter (PNG specification, section 9.2)."""
    if kind == 0:
        return line
    if kind == 2:  # Up: one C-speed pass
        return bytearray((a + b) & 0xFF for a, b in zip(line, previous))
    if kind == 1:  # Sub
        for i in range(bpp, len(line)):
            line[i] = (line[i] + line[i - bpp]) & 0xFF
        return line
    if kind == 3:  # Average
        for i in range(len(line)):
            left = line[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        return line
    if kind == 4:  # Paeth
        for i in range(len(line)):
            a = line[i - bpp] if i >= bpp else 0
            b = previous[i]
            c = previous[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            predictor = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            line[i] = (line[i] + predictor) & 0xFF
        return line
    raise PngError(f"unknown scanline filter {kind}")


def _to_rgb(line: bytes, channels: int) -> bytes:
    if channels == 3:
        return line
    if channels == 4:
        out = bytearray(len(line) // 4 * 3)
        out[0::3], out[1::3], out[2::3] = line[0::4], line[1::4], line[2::4]
        return bytes(out)
    grey = line[0::channels]  # greyscale, with or without alpha
    out = bytearray(len(grey) * 3)
    out[0::3] = out[1::3] = out[2::3] = grey
    return bytes(out)


class PngPreview:
    """``image`` drawn in half blocks, as wide as rich allows (at most its own width in
    cells) and at most ``max_rows`` lines high, keeping its proportions."""

    def __init__(self, image: PngImage, max_rows: int = 20) -> None:
        self.image = image
        self.max_rows = max_rows
        self._drawn: dict[tuple[int, int], list[Segment]] = {}

    def size(self, max_width: int) -> tuple[int, int]:
        """Cells across and lines down for a preview at most ``max_width`` cells wide."""
        image = self.image
        scale = min(max_width / image.width, self.max_rows * 2 / image.height, 1.0)
        columns = max(int(image.width * scale), 1)
        lines = max(int(image.height * scale + 1) // 2, 1)
        return columns, lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        columns, lines = self.size(options.max_width)
        cached = self._drawn.get((columns, lines))
        if cached is None:
            cached = self._draw(columns, lines)
            self._drawn = {(columns, lines): cached}
        yield from cached

    def _draw(self, columns: int, lines: int) -> list[Segment]:
        image = self.image
        xs = [min(int((x + 0.5) * image.width / columns), image.width - 1) for x in range(columns)]
        pixel_rows = lines * 2
        ys = [
            min(int((y + 0.5) * image.height / pixel_rows), image.height - 1)
            for y in range(pixel_rows)
        ]
        colours: dict[tuple[int, int, int], Color] = {}
        styles: dict[tuple[tuple[int, int, int], tuple[int, int, int]], Style] = {}
        segments = []
        for line in range(lines):
            top, bottom = ys[2 * line], ys[2 * line + 1]
            for x in xs:
                upper, lower = image.pixel(x, top), image.pixel(x, bottom)
                style = styles.get((upper, lower))
                if style is None:
                    for rgb in (upper, lower):
                        if rgb not in colours:
                            colours[rgb] = Color.from_rgb(*rgb)
                    style = Style(color=colours[upper], bgcolor=colours[lower])
                    styles[(upper, lower)] = style
                segments.append(Segment("▀", style))
            segments.append(Segment.line())
        return segments
