"""Axis-aligned bounding boxes and the affine maps the headless document applies to them.

The headless document does not carry real geometry: every object is its bounding box. A
transform maps the box's eight corners and takes the axis-aligned box around the result, which
is what Rhino's `GetBoundingBox(True)` would report for a box-shaped object.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Callable, Optional

from golem_core.errors import InvalidParams

__all__ = [
    "BoundingBox",
    "Point",
    "PointMap",
    "line_mirror_normal",
    "mirror_map",
    "rotation_map",
    "scale_map",
    "translation_map",
    "unit",
]

Point = tuple[float, float, float]
PointMap = Callable[[Point], Point]


@dataclass(frozen=True)
class BoundingBox:
    """An axis-aligned box, ``minimum`` ≤ ``maximum`` on every axis."""

    minimum: Point
    maximum: Point

    @classmethod
    def around(cls, points: Iterable[Point]) -> BoundingBox:
        """The smallest box containing ``points``. Raises ValueError when there are none."""
        pts = list(points)
        if not pts:
            raise ValueError("a bounding box needs at least one point")
        lo = (min(p[0] for p in pts), min(p[1] for p in pts), min(p[2] for p in pts))
        hi = (max(p[0] for p in pts), max(p[1] for p in pts), max(p[2] for p in pts))
        return cls(lo, hi)

    def corners(self) -> list[Point]:
        """The eight corners, bottom face first, counter-clockwise from ``minimum``."""
        (x0, y0, z0), (x1, y1, z1) = self.minimum, self.maximum
        return [
            (x0, y0, z0),
            (x1, y0, z0),
            (x1, y1, z0),
            (x0, y1, z0),
            (x0, y0, z1),
            (x1, y0, z1),
            (x1, y1, z1),
            (x0, y1, z1),
        ]

    def mapped(self, point_map: PointMap) -> BoundingBox:
        """The axis-aligned box around the corners mapped by ``point_map``."""
        return BoundingBox.around(_rounded(point_map(c)) for c in self.corners())

    def union(self, other: BoundingBox) -> BoundingBox:
        """The smallest box enclosing both."""
        return BoundingBox.around([self.minimum, self.maximum, other.minimum, other.maximum])

    def intersection(self, other: BoundingBox) -> Optional[BoundingBox]:
        """The overlap of both boxes, or None when they do not share a volume."""
        lo = tuple(max(a, b) for a, b in zip(self.minimum, other.minimum))
        hi = tuple(min(a, b) for a, b in zip(self.maximum, other.maximum))
        if any(low >= high for low, high in zip(lo, hi)):
            return None
        return BoundingBox((lo[0], lo[1], lo[2]), (hi[0], hi[1], hi[2]))

    def contains(self, other: BoundingBox) -> bool:
        """True when ``other`` lies entirely inside this box (boundaries included)."""
        return all(a <= b for a, b in zip(self.minimum, other.minimum)) and all(
            a >= b for a, b in zip(self.maximum, other.maximum)
        )

    @property
    def center(self) -> Point:
        (x0, y0, z0), (x1, y1, z1) = self.minimum, self.maximum
        return ((x0 + x1) / 2, (y0 + y1) / 2, (z0 + z1) / 2)


def _rounded(point: Point) -> Point:
    # Rotations by multiples of 90° leave 1e-15 noise; round it away so results read cleanly.
    return (round(point[0], 9) + 0.0, round(point[1], 9) + 0.0, round(point[2], 9) + 0.0)


def _sub(a: Point, b: Point) -> Point:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _dot(a: Point, b: Point) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a: Point, b: Point) -> Point:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def unit(vector: Point, param: str) -> Point:
    """``vector`` scaled to length 1. Raises InvalidParams naming ``param`` for a zero vector."""
    length = math.sqrt(_dot(vector, vector))
    if length < 1e-12:
        raise InvalidParams(f"Parameter '{param}' must not be a zero-length vector.", param)
    return (vector[0] / length, vector[1] / length, vector[2] / length)


def translation_map(offset: Point) -> PointMap:
    """p ↦ p + offset."""
    return lambda p: (p[0] + offset[0], p[1] + offset[1], p[2] + offset[2])


def rotation_map(center: Point, axis: Point, angle_degrees: float) -> PointMap:
    """Rotation by ``angle_degrees`` about the line through ``center`` along the unit ``axis``
    (Rodrigues' formula, right-hand rule)."""
    theta = math.radians(angle_degrees)
    cos_t, sin_t = math.cos(theta), math.sin(theta)

    def rotate(p: Point) -> Point:
        v = _sub(p, center)
        k_cross_v = _cross(axis, v)
        k_dot_v = _dot(axis, v)
        return (
            center[0] + v[0] * cos_t + k_cross_v[0] * sin_t + axis[0] * k_dot_v * (1 - cos_t),
            center[1] + v[1] * cos_t + k_cross_v[1] * sin_t + axis[1] * k_dot_v * (1 - cos_t),
            center[2] + v[2] * cos_t + k_cross_v[2] * sin_t + axis[2] * k_dot_v * (1 - cos_t),
        )

    return rotate


def scale_map(origin: Point, factors: tuple[float, float, float]) -> PointMap:
    """Scaling about ``origin`` by per-axis ``factors``."""

    def scale(p: Point) -> Point:
        return (
            origin[0] + (p[0] - origin[0]) * factors[0],
            origin[1] + (p[1] - origin[1]) * factors[1],
            origin[2] + (p[2] - origin[2]) * factors[2],
        )

    return scale


def mirror_map(plane_origin: Point, unit_normal: Point) -> PointMap:
    """Reflection across the plane through ``plane_origin`` with the unit ``unit_normal``."""

    def reflect(p: Point) -> Point:
        distance = _dot(_sub(p, plane_origin), unit_normal)
        return (
            p[0] - 2 * distance * unit_normal[0],
            p[1] - 2 * distance * unit_normal[1],
            p[2] - 2 * distance * unit_normal[2],
        )

    return reflect


def line_mirror_normal(start: Point, end: Point) -> Point:
    """The normal of Rhino's Mirror plane for a mirror line: the plane contains the line and
    the world Z axis. Raises InvalidParams (naming ``end``) when the line is vertical or empty."""
    return unit(_cross(_sub(end, start), (0.0, 0.0, 1.0)), "end")
