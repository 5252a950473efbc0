"""PNG writer and wireframe renderer, without sockets."""

from __future__ import annotations

import struct
import zlib

import pytest

from rhino_plugin.geometry import BoundingBox
from rhino_plugin.png import PNG_SIGNATURE, encode_rgb
from rhino_plugin.render import BACKGROUND, WIRE, render_wireframe


def test_png_layout() -> None:
    pixels = bytes([255, 0, 0, 0, 255, 0, 0, 0, 255, 9, 9, 9])
    data = encode_rgb(2, 2, pixels)
    assert data.startswith(PNG_SIGNATURE)
    assert data[12:16] == b"IHDR"
    assert struct.unpack("!IIBBBBB", data[16:29]) == (2, 2, 8, 2, 0, 0, 0)
    idat_len = struct.unpack("!I", data[33:37])[0]
    raw = zlib.decompress(data[41 : 41 + idat_len])
    assert raw == b"\x00" + pixels[:6] + b"\x00" + pixels[6:]
    assert data.endswith(b"IEND\xaeB`\x82")
    with pytest.raises(ValueError):
        encode_rgb(2, 2, pixels[:-1])


@pytest.mark.parametrize("projection", ["top", "front", "right", "perspective"])
def test_wireframe_fits_the_view(projection: str) -> None:
    box = BoundingBox((0.0, 0.0, 0.0), (10.0, 20.0, 5.0))
    canvas = render_wireframe(50, 40, projection, [(box, False)])
    drawn = [
        (i // 3) for i in range(0, len(canvas.pixels), 3) if tuple(canvas.pixels[i : i + 3]) == WIRE
    ]
    assert drawn
    xs = [p % 50 for p in drawn]
    ys = [p // 50 for p in drawn]
    # Inside the 10 % margin, touching it on at least one axis (fit to view).
    assert min(xs) >= 4 and max(xs) <= 45 and min(ys) >= 3 and max(ys) <= 36
    assert min(xs) <= 5 or min(ys) <= 4
    assert tuple(canvas.pixels[0:3]) == BACKGROUND
