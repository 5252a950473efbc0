"""``operations.*`` of golem-3dmcp@9819b31 (``handlers/operations.py``) on curves and surfaces:
offsets, fillets, chamfers, intersections, projections, extensions, blends and rebuilds (the
Booleans, trims and splits: `operations`). Wrapped: failures are error dicts inside a success
envelope; the geometry is the headless document's boxes.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from ..document import DocObject
from ..geometry import BoundingBox
from .kit import (
    GolemFailure,
    Params,
    list_param,
    opt_bool,
    opt_float,
    opt_int,
    validate_guid_or_key_error,
)
from .operations_kit import (
    BREP_CLASSES,
    OperationsBase,
    typed_param_or_value_error,
    vector_or_value_error,
)
from .serialize import serialize_curve, serialize_mesh, serialize_surface

__all__ = ["CurveSurfaceOperationHandlers"]


class CurveSurfaceOperationHandlers(OperationsBase):
    """``operations.*`` on curves and surfaces."""

    def offset_curve(self, p: Params) -> dict[str, Any]:
        curve_id = typed_param_or_value_error(p, "curve_id", str)
        distance = float(typed_param_or_value_error(p, "distance"))
        curve = validate_guid_or_key_error(self.doc, curve_id)
        plane, direction = p.get("plane"), p.get("direction_point")
        if plane is not None:
            try:
                for key in ("origin", "x_axis", "y_axis"):
                    (float(plane[key][0]), float(plane[key][1]), float(plane[key][2]))
            except Exception as exc:
                raise ValueError(f"Invalid 'plane' parameter: {exc}") from None
        elif direction is not None:
            vector_or_value_error(direction, "direction_point must be [x, y, z].")
        if curve.object_type != "Curve":
            raise GolemFailure(
                "OPERATION_FAILED",
                "Offset curve failed -- check that the curve and plane are valid.",
            )
        d = abs(distance)
        (x0, y0, z0), (x1, y1, z1) = curve.bbox.minimum, curve.bbox.maximum
        bbox = BoundingBox((x0 - d, y0 - d, z0), (x1 + d, y1 + d, z1))
        closed = bool(curve.geometry.get("closed", False))
        return self._curve_result(self._derived_curve(bbox, closed=closed))

    def offset_surface(self, p: Params) -> dict[str, Any]:
        surface_id = typed_param_or_value_error(p, "surface_id", str)
        distance = float(typed_param_or_value_error(p, "distance"))
        opt_bool(p, "both_sides", False)
        surface = validate_guid_or_key_error(self.doc, surface_id)
        if surface.object_type not in BREP_CLASSES:
            raise GolemFailure(
                "OPERATION_FAILED",
                "Offset surface failed -- the surface may be degenerate or the distance "
                "may cause self-intersection.",
            )
        d = abs(distance)
        (x0, y0, z0), (x1, y1, z1) = surface.bbox.minimum, surface.bbox.maximum
        bbox = BoundingBox((x0 - d, y0 - d, z0 - d), (x1 + d, y1 + d, z1 + d))
        new = self._new("Surface", "nurbs", bbox, degree_u=3, degree_v=3)
        return {"guid": new.guid, "surface": serialize_surface(new)}

    def _edges(self, p: Params, size_key: str) -> tuple[DocObject, float]:
        brep_id = typed_param_or_value_error(p, "brep_id", str)
        edges = list_param(p, "edge_indices")
        size = float(typed_param_or_value_error(p, size_key))
        if size <= 0.0:
            raise ValueError(f"{size_key} must be greater than zero.")
        if len(edges) == 0:
            raise ValueError("edge_indices must contain at least one index.")
        brep = self._brep(brep_id)
        count = int(brep.geometry.get("edges", 12))
        for index in (int(i) for i in edges):
            if index < 0 or index >= count:
                raise ValueError(f"Edge index {index} is out of range (Brep has {count} edges).")
        return brep, size

    def fillet_edge(self, p: Params) -> dict[str, Any]:
        brep, _ = self._edges(p, "radius")
        self._delete(brep)
        return self._breps_result([self._solid(brep.bbox, faces=7)])

    def chamfer_edge(self, p: Params) -> dict[str, Any]:
        brep, _ = self._edges(p, "distance")
        self._delete(brep)
        return self._breps_result([self._solid(brep.bbox, faces=7)])

    def _curve_pair(
        self, p: Params, size_keys: tuple[str, ...], too_small: str
    ) -> tuple[DocObject, DocObject]:
        """The two curves of fillet_curves and chamfer_curves, read in the real handlers'
        order: both ids, every size, then the lookups. Raises ValueError (``too_small`` when
        a size is not above zero) and KeyError for an unknown GUID."""
        a_id = typed_param_or_value_error(p, "curve_id_a", str)
        b_id = typed_param_or_value_error(p, "curve_id_b", str)
        sizes = [float(typed_param_or_value_error(p, key)) for key in size_keys]
        if any(size <= 0.0 for size in sizes):
            raise ValueError(too_small)
        a = validate_guid_or_key_error(self.doc, a_id)
        return a, validate_guid_or_key_error(self.doc, b_id)

    def fillet_curves(self, p: Params) -> dict[str, Any]:
        a, b = self._curve_pair(p, ("radius",), "radius must be greater than zero.")
        join = opt_bool(p, "join", False)
        fillet = self._corner(
            a,
            b,
            "Fillet curves failed -- the curves may be non-coplanar, parallel, or the "
            "radius may be too large.",
        )
        if join:
            bbox = a.bbox.union(b.bbox)
            joined = self._derived_curve(bbox, kind="polyline")
            self._delete(a, b, fillet)
            return {"guid": joined.guid, "guids": [joined.guid], "count": 1}
        return self._curve_result(fillet)

    def chamfer_curves(self, p: Params) -> dict[str, Any]:
        a, b = self._curve_pair(
            p,
            ("distance_a", "distance_b"),
            "distance_a and distance_b must both be greater than zero.",
        )
        chamfer = self._corner(
            a,
            b,
            "Chamfer curves failed -- the curves may not intersect or the distances "
            "may be too large.",
        )
        return self._curve_result(chamfer)

    def _corner(self, a: DocObject, b: DocObject, failure: str) -> DocObject:
        """A short curve between two curves that meet (their boxes touch)."""
        meet = _touching(a.bbox, b.bbox)
        if a.object_type != "Curve" or b.object_type != "Curve" or meet is None:
            raise GolemFailure("OPERATION_FAILED", failure)
        return self._derived_curve(meet, kind="arc", radius=0.0, center=list(meet.center))

    def intersect(self, p: Params) -> dict[str, Any]:
        id_a = typed_param_or_value_error(p, "id_a", str)
        id_b = typed_param_or_value_error(p, "id_b", str)
        a, b = (
            validate_guid_or_key_error(self.doc, id_a),
            validate_guid_or_key_error(self.doc, id_b),
        )
        curve_a, curve_b = a.object_type == "Curve", b.object_type == "Curve"
        kind = (
            "curve_curve" if curve_a and curve_b
            else "curve_brep" if curve_a or curve_b
            else "brep_brep"
        )  # fmt: skip
        meet = _touching(a.bbox, b.bbox)
        points: list[DocObject] = []
        curves: list[DocObject] = []
        if meet is not None:
            if kind == "brep_brep":
                curves.append(self._derived_curve(meet, closed=True))
            else:
                center = meet.center
                points.append(self._new("Point", "point", BoundingBox(center, center)))
        return {
            "type": kind,
            "intersects": bool(points or curves),
            "point_guids": [o.guid for o in points],
            "curve_guids": [o.guid for o in curves],
            "points": [list(o.bbox.minimum) for o in points],
            "curves": [serialize_curve(o) for o in curves],
        }

    def mesh_from_brep(self, p: Params) -> dict[str, Any]:
        brep_id = typed_param_or_value_error(p, "brep_id", str)
        quality = p.get("quality", "medium")
        if quality not in ("coarse", "medium", "fine", "custom"):
            raise ValueError(
                f"quality must be one of 'coarse', 'medium', 'fine', or 'custom' (got '{quality}')."
            )
        brep = self._brep(brep_id)
        for key in ("max_edge_length", "min_edge_length", "max_angle"):
            opt_float(p, key, -1.0)
        faces = {"coarse": 12, "medium": 48, "fine": 192, "custom": 48}[str(quality)]
        mesh = self._new("Mesh", "mesh", brep.bbox, vertex_count=faces + 2, face_count=faces)
        return {"guids": [mesh.guid], "count": 1, "meshes": [serialize_mesh(mesh)]}

    def project_curve(self, p: Params) -> dict[str, Any]:
        curve_id = typed_param_or_value_error(p, "curve_id", str)
        brep_ids = list_param(p, "brep_ids")
        direction = vector_or_value_error(
            typed_param_or_value_error(p, "direction"),
            "direction must be a list of three numbers [x, y, z].",
        )
        if math.sqrt(sum(c * c for c in direction)) < 1e-12:
            raise ValueError("direction vector must be non-zero.")
        curve = self._curve(curve_id)
        breps = [self._brep(g) for g in brep_ids]
        hits = [b for b in breps if _overlaps_2d(curve.bbox, b.bbox)]
        if not hits:
            raise GolemFailure(
                "OPERATION_FAILED",
                "Project curve failed -- the curve projection may miss all target Breps "
                "in the given direction.",
            )
        projected = []
        for brep in hits:
            (x0, y0, _), (x1, y1, _) = curve.bbox.minimum, curve.bbox.maximum
            z = brep.bbox.maximum[2]
            projected.append(self._derived_curve(BoundingBox((x0, y0, z), (x1, y1, z))))
        return {
            "guids": [c.guid for c in projected],
            "count": len(projected),
            "curves": [serialize_curve(c) for c in projected],
        }

    def extend_curve(self, p: Params) -> dict[str, Any]:
        curve_id = typed_param_or_value_error(p, "curve_id", str)
        style = p.get("extension_type", "smooth")
        side = p.get("side", "end")
        length = opt_float(p, "length", 0.0)
        boundary_id = p.get("boundary_id")
        if style not in ("line", "arc", "smooth"):
            raise ValueError(f"extension_type must be 'line', 'arc', or 'smooth' (got '{style}').")
        if side not in ("start", "end", "both"):
            raise ValueError(f"side must be 'start', 'end', or 'both' (got '{side}').")
        curve = self._curve(curve_id)
        if boundary_id is not None:
            boundary = validate_guid_or_key_error(self.doc, boundary_id)
            bbox = curve.bbox.union(boundary.bbox)
        else:
            if length <= 0.0:
                raise ValueError("length must be > 0 when no boundary_id is provided.")
            bbox = _grown(curve.bbox, length)
        curve.bbox = bbox
        curve.geometry["length"] = float(curve.geometry.get("length", 0.0)) + length
        return {"guid": curve_id, "curve": serialize_curve(curve)}

    def blend_curves(self, p: Params) -> dict[str, Any]:
        a_id = typed_param_or_value_error(p, "curve_id_a", str)
        b_id = typed_param_or_value_error(p, "curve_id_b", str)
        continuity = p.get("continuity", "tangent")
        if continuity not in ("position", "tangent", "curvature"):
            raise ValueError(
                f"continuity must be 'position', 'tangent', or 'curvature' (got '{continuity}')."
            )
        a, b = self._curve(a_id), self._curve(b_id)
        end_a = (a.geometry.get("points") or [list(a.bbox.maximum)])[-1]
        start_b = (b.geometry.get("points") or [list(b.bbox.minimum)])[0]
        bbox = BoundingBox.around([tuple(end_a), tuple(start_b)])  # type: ignore[list-item]
        blend = self._derived_curve(bbox, points=[end_a, start_b], degree=3)
        return self._curve_result(blend)

    def rebuild_curve(self, p: Params) -> dict[str, Any]:
        curve_id = typed_param_or_value_error(p, "curve_id", str)
        degree = opt_int(p, "degree", 3)
        point_count = opt_int(p, "point_count", 10)
        if degree < 1 or degree > 11:
            raise ValueError(f"degree must be between 1 and 11 (got {degree}).")
        if point_count < degree + 1:
            raise ValueError(
                "point_count must be at least degree + 1 "
                f"(degree={degree}, point_count={point_count})."
            )
        curve = self._curve(curve_id)
        old = curve.geometry.get("points") or [list(curve.bbox.minimum), list(curve.bbox.maximum)]
        start, end = old[0], old[-1]
        curve.geometry.update(
            kind="nurbs",
            degree=degree,
            points=[
                [s + (e - s) * i / (point_count - 1) for s, e in zip(start, end)]
                for i in range(point_count)
            ],
        )
        return {"guid": curve_id, "curve": serialize_curve(curve)}

    def rebuild_surface(self, p: Params) -> dict[str, Any]:
        surface_id = typed_param_or_value_error(p, "surface_id", str)
        degree_u, degree_v = opt_int(p, "degree_u", 3), opt_int(p, "degree_v", 3)
        count_u, count_v = opt_int(p, "point_count_u", 10), opt_int(p, "point_count_v", 10)
        for label, degree in (("degree_u", degree_u), ("degree_v", degree_v)):
            if degree < 1 or degree > 11:
                raise ValueError(f"{label} must be between 1 and 11 (got {degree}).")
        for axis, count, degree in (("u", count_u, degree_u), ("v", count_v, degree_v)):
            if count < degree + 1:
                raise ValueError(
                    f"point_count_{axis} must be at least degree_{axis} + 1 "
                    f"(degree_{axis}={degree}, point_count_{axis}={count})."
                )
        surface = validate_guid_or_key_error(self.doc, surface_id)
        if (
            surface.object_type not in ("Surface", "Brep")
            or int(surface.geometry.get("faces", 1)) > 1
        ):
            raise GolemFailure(
                "OPERATION_FAILED",
                "Rebuild surface failed -- ensure the object is a single NURBS surface.",
            )
        surface.object_type = "Surface"
        surface.geometry.update(
            kind="nurbs", degree_u=degree_u, degree_v=degree_v, count_u=count_u, count_v=count_v
        )
        return {"guid": surface_id, "surface": serialize_surface(surface)}


def _touching(a: BoundingBox, b: BoundingBox) -> Optional[BoundingBox]:
    """The (possibly flat) overlap of two boxes, or None when they are apart."""
    lo = tuple(max(x, y) for x, y in zip(a.minimum, b.minimum))
    hi = tuple(min(x, y) for x, y in zip(a.maximum, b.maximum))
    if any(low > high + 1e-9 for low, high in zip(lo, hi)):
        return None
    return BoundingBox(
        (lo[0], lo[1], lo[2]), (max(lo[0], hi[0]), max(lo[1], hi[1]), max(lo[2], hi[2]))
    )


def _overlaps_2d(a: BoundingBox, b: BoundingBox) -> bool:
    return all(a.minimum[i] <= b.maximum[i] and b.minimum[i] <= a.maximum[i] for i in (0, 1))


def _grown(box: BoundingBox, by: float) -> BoundingBox:
    (x0, y0, z0), (x1, y1, z1) = box.minimum, box.maximum
    return BoundingBox((x0 - by, y0 - by, z0), (x1 + by, y1 + by, z1))
