"""The PNG decoder behind the capture preview, against the plugin's encoder and against
scanlines written with every filter of the PNG specification."""

from __future__ import annotations

import base64
import io
import struct
import zlib

import pytest
from rich.console import Console

from golem_proxy.tui.png import PngError, PngPreview, decode_png, find_png
from rhino_plugin.png import encode_rgb


def gradient(width: int, height: int) -> bytes:
    return bytes(
        value
        for y in range(height)
        for x in range(width)
        for value in (x * 255 // width, y * 255 // height, (x * y) % 256)
    )


def paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def encode_filtered(width: int, height: int, samples: bytes, colour: int, channels: int) -> bytes:
    """A PNG whose rows use filters 0, 1, 2, 3, 4 in turn (encoders choose per row)."""
    stride = width * channels
    raw = bytearray()
    previous = bytes(stride)
    for y in range(height):
        line = samples[y * stride : (y + 1) * stride]
        kind = y % 5
        out = bytearray()
        for i, value in enumerate(line):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            predictor = (0, a, b, (a + b) >> 1, paeth(a, b, c))[kind]
            out.append((value - predictor) & 0xFF)
        raw += bytes([kind]) + out
        previous = line

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack("!I", len(data)) + kind + data + struct.pack("!I", crc)

    header = struct.pack("!IIBBBBB", width, height, 8, colour, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(raw)))
        + chunk(b"IEND", b"")
    )


def test_the_plugins_captures_decode_pixel_for_pixel() -> None:
    pixels = gradient(40, 30)
    image = decode_png(encode_rgb(40, 30, pixels))
    assert (image.width, image.height) == (40, 30)
    assert b"".join(image.rows) == pixels


@pytest.mark.parametrize(("colour", "channels"), [(2, 3), (6, 4), (0, 1), (4, 2)])
def test_every_scanline_filter_and_colour_type_decodes(colour: int, channels: int) -> None:
    width, height = 23, 11  # rows use filters 0..4, twice over
    rgb = gradient(width, height)
    if channels == 3:
        samples = rgb
    elif channels == 4:
        samples = bytes(v for i in range(0, len(rgb), 3) for v in (*rgb[i : i + 3], 200))
    else:
        grey = rgb[0::3]
        samples = grey if channels == 1 else bytes(v for g in grey for v in (g, 77))
    image = decode_png(encode_filtered(width, height, samples, colour, channels))
    expected = rgb if channels >= 3 else bytes(g for g in rgb[0::3] for _ in range(3))
    assert b"".join(image.rows) == expected


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"GIF89a", "not a PNG"),
        (encode_rgb(4, 4, bytes(48))[:40], "cut short"),
        (
            encode_rgb(4, 4, bytes(48)).replace(
                struct.pack("!IIBBBBB", 4, 4, 8, 2, 0, 0, 0),
                struct.pack("!IIBBBBB", 4, 4, 16, 2, 0, 0, 0),
            ),
            "bit depth 16",
        ),
    ],
)
def test_what_it_cannot_read_is_a_png_error(data: bytes, reason: str) -> None:
    with pytest.raises(PngError, match=reason):
        decode_png(data)


def test_a_huge_image_is_not_decoded() -> None:
    with pytest.raises(PngError, match="not shown"):
        decode_png(encode_rgb(100, 100, bytes(30_000)), max_pixels=9_999)


def test_a_capture_result_is_found_in_a_response() -> None:
    png = encode_rgb(2, 2, bytes(12))
    result = {"image": base64.b64encode(png).decode(), "width": 2}
    assert find_png({"id": "1", "result": result, "error": None}) == png
    assert find_png(result) == png
    assert find_png({"result": {"image": "not base64 at all"}}) is None
    assert find_png({"result": {"objects": []}}) is None
    assert find_png(None) is None


def test_the_preview_keeps_proportions_and_puts_two_pixels_in_a_cell() -> None:
    # 4x4: the top half red, the bottom half blue.
    red, blue = bytes((255, 0, 0)), bytes((0, 0, 255))
    image = decode_png(encode_rgb(4, 4, red * 8 + blue * 8))
    preview = PngPreview(image, max_rows=20)
    assert preview.size(80) == (4, 2)  # never enlarged
    assert preview.size(2) == (2, 1)
    console = Console(width=80, file=io.StringIO(), color_system="truecolor", record=True)
    console.print(preview)
    assert console.export_text() == "▀▀▀▀\n▀▀▀▀\n"
    styles = {segment.style for segment in preview._draw(4, 2) if segment.text == "▀"}
    colours = {(s.color.triplet, s.bgcolor.triplet) for s in styles if s and s.color and s.bgcolor}
    assert colours == {((255, 0, 0), (255, 0, 0)), ((0, 0, 255), (0, 0, 255))}
