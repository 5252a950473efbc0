"""The PNG decoder and the half-block rendering of captured images."""

from __future__ import annotations

import struct
import zlib

import pytest
from rich.console import Console
from rich.segment import Segment

from golem_proxy.images import HalfBlockImage, Pixels, PngError, decode_png
from rhino_plugin.png import encode_rgb


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack("!I", len(data)) + kind + data + struct.pack("!I", zlib.crc32(kind + data))


def png(width: int, height: int, color: int, rows: list[bytes], filters: list[int], *,
        depth: int = 8, palette: bytes = b"", interlace: int = 0) -> bytes:  # fmt: skip
    """A PNG with each row filtered with the given filter type (the encoder side of the
    PNG specification, section 9), so the decoder's unfiltering is checked against it."""
    bpp = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
    raw = bytearray()
    previous = bytes(len(rows[0]))
    for row, kind in zip(rows, filters):
        out = bytearray()
        for i, value in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b = previous[i]
            c = previous[i - bpp] if i >= bpp else 0
            if kind == 0:
                pred = 0
            elif kind == 1:
                pred = a
            elif kind == 2:
                pred = b
            elif kind == 3:
                pred = (a + b) >> 1
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            out.append((value - pred) & 0xFF)
        raw += bytes([kind]) + out
        previous = row
    header = struct.pack("!IIBBBBB", width, height, depth, color, 0, 0, interlace)
    body = chunk(b"IHDR", header) + (chunk(b"PLTE", palette) if palette else b"")
    return (
        b"\x89PNG\r\n\x1a\n"
        + body
        + chunk(b"IDAT", zlib.compress(bytes(raw)))
        + chunk(b"IEND", b"")
    )


def test_the_headless_plugins_png_decodes_to_its_pixels() -> None:
    pixels = bytes(range(256)) * 36  # 64 x 48 pixels, 3 bytes each
    decoded = decode_png(encode_rgb(64, 48, pixels))
    assert (decoded.width, decoded.height, decoded.rgb) == (64, 48, pixels)


@pytest.mark.parametrize("kind", [0, 1, 2, 3, 4])
def test_every_filter_type_unfilters(kind: int) -> None:
    rows = [
        bytes((x * 37 + y * 91 + c * 13) % 256 for x in range(5) for c in range(3))
        for y in range(4)
    ]
    decoded = decode_png(png(5, 4, 2, rows, [kind, 4, kind, 3]))
    assert decoded.rgb == b"".join(rows)


def test_rgba_grey_and_palette_become_rgb() -> None:
    rgba = decode_png(png(2, 1, 6, [bytes([200, 100, 50, 255, 200, 100, 50, 0])], [0]))
    assert rgba.rgb == bytes([200, 100, 50, 0, 0, 0])  # over black
    grey = decode_png(png(2, 1, 0, [bytes([7, 250])], [1]))
    assert grey.rgb == bytes([7, 7, 7, 250, 250, 250])
    indexed = decode_png(png(2, 1, 3, [bytes([1, 0])], [0], palette=bytes([1, 2, 3, 4, 5, 6])))
    assert indexed.rgb == bytes([4, 5, 6, 1, 2, 3])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"GIF89a", "not a PNG"),
        (encode_rgb(2, 2, bytes(12))[:-20], "cut short|ends before"),
        (encode_rgb(2, 2, bytes(12)).replace(b"IHDR", b"IHDX", 1), "CRC"),
        (png(1, 1, 2, [bytes(6)], [0], depth=16), "8-bit only"),
        (png(1, 1, 2, [bytes(3)], [0], interlace=1), "interlaced"),
        (png(1, 1, 2, [bytes(3)], [7]), "unknown PNG filter type 7"),
    ],
)
def test_damaged_or_unsupported_pngs_are_refused_with_a_reason(data: bytes, message: str) -> None:
    with pytest.raises(PngError, match=message):
        decode_png(data)


def test_a_huge_declared_size_is_refused_before_inflating() -> None:
    header = struct.pack("!IIBBBBB", 100_000, 100_000, 8, 2, 0, 0, 0)
    bomb = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")
    with pytest.raises(PngError, match="is not shown"):
        decode_png(bomb)


def test_half_blocks_draw_two_pixel_rows_per_line() -> None:
    red, blue, green, white = (255, 0, 0), (0, 0, 255), (0, 255, 0), (255, 255, 255)
    rgb = bytes([*red, *green, *blue, *white])  # 2 x 2
    console = Console(width=40, color_system="truecolor")
    lines = console.render_lines(HalfBlockImage(Pixels(2, 2, rgb)), pad=False)
    assert len(lines) == 1
    cells = [s for s in lines[0] if s.text == "▀"]
    colours = [(s.style.color.triplet, s.style.bgcolor.triplet) for s in cells]  # type: ignore[union-attr]
    assert [(tuple(a), tuple(b)) for a, b in colours] == [(red, blue), (green, white)]


def test_wide_images_are_scaled_to_fit_keeping_the_aspect() -> None:
    image = HalfBlockImage(Pixels(800, 600, bytes(800 * 600 * 3)), max_width=40)
    console = Console(width=100)
    lines = console.render_lines(image, pad=False)
    assert len(lines) == 15  # 40 cells wide → 30 pixel rows → 15 lines
    assert all(Segment.get_line_length(line) == 40 for line in lines)
