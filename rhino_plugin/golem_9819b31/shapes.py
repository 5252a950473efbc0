"""Approximate geometry for the headless document: bounding boxes and the topology numbers the
real serializers report (faces, edges, lengths, volumes), per primitive."""

from __future__ import annotations

import math
from typing import Any

from ..geometry import BoundingBox
from .kit import Point, box_around, distance

__all__ = [
    "arc_data",
    "box_data",
    "circle_data",
    "cone_data",
    "cylinder_data",
    "polyline_data",
    "sphere_data",
    "text_data",
    "torus_data",
]

Data = tuple[BoundingBox, dict[str, Any]]


def box_data(corner: Point, width: float, depth: float, height: float) -> Data:
    far = (corner[0] + width, corner[1] + depth, corner[2] + height)
    bbox = BoundingBox.around([corner, far])
    w, d, h = abs(width), abs(depth), abs(height)
    return bbox, {
        "faces": 6,
        "edges": 12,
        "vertices": 8,
        "solid": True,
        "volume": w * d * h,
        "area": 2 * (w * d + w * h + d * h),
    }


def sphere_data(center: Point, radius: float) -> Data:
    return box_around(center, radius, radius, radius), {
        "faces": 1,
        "edges": 3,
        "vertices": 2,
        "solid": True,
        "volume": 4.0 / 3.0 * math.pi * radius**3,
        "area": 4 * math.pi * radius**2,
    }


def cylinder_data(base: Point, radius: float, height: float, cap: bool) -> Data:
    top = (base[0] + radius, base[1] + radius, base[2] + height)
    bottom = (base[0] - radius, base[1] - radius, base[2])
    side = 2 * math.pi * radius * abs(height)
    return BoundingBox.around([bottom, top]), {
        "faces": 3 if cap else 1,
        "edges": 3,
        "vertices": 2,
        "solid": cap,
        "volume": math.pi * radius**2 * abs(height),
        "area": side + (2 * math.pi * radius**2 if cap else 0.0),
    }


def cone_data(base: Point, radius: float, height: float, cap: bool) -> Data:
    bbox, _ = cylinder_data(base, radius, height, cap)
    slant = math.hypot(radius, height)
    return bbox, {
        "faces": 2 if cap else 1,
        "edges": 2,
        "vertices": 2,
        "solid": cap,
        "volume": math.pi * radius**2 * abs(height) / 3.0,
        "area": math.pi * radius * slant + (math.pi * radius**2 if cap else 0.0),
    }


def torus_data(center: Point, major: float, minor: float) -> Data:
    outer = major + minor
    return box_around(center, outer, outer, minor), {
        "faces": 1,
        "edges": 0,
        "vertices": 0,
        "solid": True,
        "volume": 2 * math.pi**2 * major * minor**2,
        "area": 4 * math.pi**2 * major * minor,
    }


def polyline_data(points: list[Point], closed: bool = False) -> Data:
    length = sum(distance(a, b) for a, b in zip(points, points[1:]))
    return BoundingBox.around(points), {
        "points": [list(p) for p in points],
        "length": length,
        "closed": closed or (len(points) > 2 and points[0] == points[-1]),
    }


def circle_data(center: Point, radius: float) -> Data:
    start = (center[0] + radius, center[1], center[2])
    return box_around(center, radius, radius, 0.0), {
        "points": [list(start), list(start)],
        "length": 2 * math.pi * radius,
        "closed": True,
        "radius": radius,
        "center": list(center),
        "degree": 2,
    }


def arc_data(center: Point, radius: float, start_deg: float, end_deg: float) -> Data:
    """An arc in the XY plane from ``start_deg`` to ``end_deg`` (counter-clockwise)."""
    sweep = end_deg - start_deg
    low, high = min(start_deg, end_deg), max(start_deg, end_deg)
    angles = [low, high] + [a for a in range(-720, 721, 90) if low < a < high]
    points = [
        (
            center[0] + radius * math.cos(math.radians(a)),
            center[1] + radius * math.sin(math.radians(a)),
            center[2],
        )
        for a in angles
    ]
    rounded = [(round(x, 9) + 0.0, round(y, 9) + 0.0, z) for x, y, z in points]
    return BoundingBox.around(rounded), {
        "points": [list(rounded[0]), list(rounded[1])],
        "length": abs(math.radians(sweep)) * radius,
        "closed": abs(sweep) >= 360.0,
        "radius": radius,
        "center": list(center),
        "degree": 2,
    }


def text_data(text: str, position: Point, height: float) -> Data:
    # A rough text extent: 0.6 of the height per character, as a typical sans-serif.
    far = (position[0] + 0.6 * height * max(len(text), 1), position[1] + height, position[2])
    return BoundingBox.around([position, far]), {"text": text, "height": height}
