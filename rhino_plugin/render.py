"""Draws the document's bounding boxes as wireframes into an RGB raster.

Projections: ``top`` (X right, Y up), ``front`` (X right, Z up), ``right`` (Y right, Z up) are
orthographic; ``perspective`` is an isometric view (Rhino's default Perspective looks from the
south-west, which is what the isometric view shows). The drawing is fit to the image with a
margin; an empty document shows the world axes only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Callable

from .geometry import BoundingBox, Point

__all__ = ["Canvas", "render_wireframe"]

RGB = tuple[int, int, int]
Projector = Callable[[Point], tuple[float, float]]

BACKGROUND: RGB = (160, 160, 160)
WIRE: RGB = (0, 0, 0)
SELECTED: RGB = (255, 255, 0)
AXIS_X: RGB = (150, 75, 75)
AXIS_Y: RGB = (75, 150, 75)
MARGIN = 0.1

# Edges of a box as pairs of indices into BoundingBox.corners().
_BOX_EDGES = (
    (0, 1),
    (1, 2),
    (2, 3),
    (3, 0),
    (4, 5),
    (5, 6),
    (6, 7),
    (7, 4),
    (0, 4),
    (1, 5),
    (2, 6),
    (3, 7),
)

_COS30 = math.cos(math.radians(30))
_PROJECTIONS: dict[str, Projector] = {
    "top": lambda p: (p[0], p[1]),
    "front": lambda p: (p[0], p[2]),
    "right": lambda p: (p[1], p[2]),
    "perspective": lambda p: ((p[0] - p[1]) * _COS30, (p[0] + p[1]) * 0.5 + p[2]),
}


class Canvas:
    """An RGB raster, rows top to bottom."""

    def __init__(self, width: int, height: int, background: RGB) -> None:
        self.width = width
        self.height = height
        self.pixels = bytearray(bytes(background) * (width * height))

    def plot(self, x: int, y: int, color: RGB) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            offset = (y * self.width + x) * 3
            self.pixels[offset : offset + 3] = bytes(color)

    def line(self, x0: int, y0: int, x1: int, y1: int, color: RGB) -> None:
        """Bresenham's line, clipped pixel by pixel."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            self.plot(x0, y0, color)
            if x0 == x1 and y0 == y1:
                return
            doubled = 2 * err
            if doubled >= dy:
                err += dy
                x0 += sx
            if doubled <= dx:
                err += dx
                y0 += sy


def render_wireframe(
    width: int, height: int, projection: str, boxes: Iterable[tuple[BoundingBox, bool]]
) -> Canvas:
    """A canvas with every ``(box, selected)`` drawn as a wireframe in ``projection`` (one of
    top, front, right, perspective; unknown names fall back to perspective)."""
    project = _PROJECTIONS.get(projection, _PROJECTIONS["perspective"])
    canvas = Canvas(width, height, BACKGROUND)
    segments: list[tuple[tuple[float, float], tuple[float, float], RGB]] = []
    for box, selected in boxes:
        corners = [project(c) for c in box.corners()]
        color = SELECTED if selected else WIRE
        segments.extend((corners[a], corners[b], color) for a, b in _BOX_EDGES)
    if not segments:
        unit = 1.0
        origin = project((0.0, 0.0, 0.0))
        segments = [
            (origin, project((unit, 0.0, 0.0)), AXIS_X),
            (origin, project((0.0, unit, 0.0)), AXIS_Y),
        ]
    xs = [p[0] for seg in segments for p in seg[:2]]
    ys = [p[1] for seg in segments for p in seg[:2]]
    span_x, span_y = max(xs) - min(xs), max(ys) - min(ys)
    usable_w, usable_h = width * (1 - 2 * MARGIN), height * (1 - 2 * MARGIN)
    # One scale for both axes keeps proportions; a degenerate span (a single point) gets 1.
    scale = min(
        usable_w / span_x if span_x > 0 else math.inf, usable_h / span_y if span_y > 0 else math.inf
    )
    if math.isinf(scale):
        scale = 1.0
    mid_x, mid_y = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2

    def to_pixel(p: tuple[float, float]) -> tuple[int, int]:
        return (
            round(width / 2 + (p[0] - mid_x) * scale),
            round(height / 2 - (p[1] - mid_y) * scale),
        )  # image rows grow downwards

    for start, end, color in segments:
        (x0, y0), (x1, y1) = to_pixel(start), to_pixel(end)
        canvas.line(x0, y0, x1, y1, color)
    return canvas
