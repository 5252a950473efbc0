"""``geometry.*`` of golem-3dmcp@9819b31, surfaces, solids, meshes and annotations (points
and curves: `geometry`). Not wrapped: failures are -32000 error envelopes.
"""

from __future__ import annotations

import math
from typing import Any

from ..geometry import BoundingBox, translation_map
from .creation import Creator
from .kit import (
    Params,
    check_faces,
    find_or_key_error,
    layer_path,
    param_or_value_error,
    plane_origin,
    pt3d,
    read_origin,
    read_points,
    require_positive,
)
from .shapes import (
    box_data,
    cone_data,
    cylinder_data,
    sphere_data,
    text_data,
    torus_data,
)

__all__ = ["GeometrySolidHandlers"]


class GeometrySolidHandlers(Creator):
    """``geometry.*`` surfaces, solids, meshes and annotations: ``{guid, type, bounding_box}``
    answers (``bounding_box`` null for text, text dots, dimensions and hatches)."""

    def create_nurbs_surface(self, p: Params) -> dict[str, Any]:
        degree_u = int(param_or_value_error(p, "degree_u"))
        degree_v = int(param_or_value_error(p, "degree_v"))
        count_u = int(param_or_value_error(p, "count_u"))
        count_v = int(param_or_value_error(p, "count_v"))
        raw = param_or_value_error(p, "points")
        for label, value in (("degree_u", degree_u), ("degree_v", degree_v)):
            if value < 1 or value > 11:
                raise ValueError(f"'{label}' must be 1-11, got {value}.")
        if count_u < degree_u + 1:
            raise ValueError(f"count_u ({count_u}) must be >= degree_u+1 ({degree_u + 1}).")
        if count_v < degree_v + 1:
            raise ValueError(f"count_v ({count_v}) must be >= degree_v+1 ({degree_v + 1}).")
        nested = (
            isinstance(raw, (list, tuple)) and len(raw) > 0
            and isinstance(raw[0], (list, tuple)) and len(raw[0]) > 0
            and isinstance(raw[0][0], (list, tuple, dict))
        )  # fmt: skip
        flat = [cell for row in raw for cell in row] if nested else list(raw)
        expected = count_u * count_v
        if len(flat) != expected:
            raise ValueError(
                f"Expected {expected} points for {count_u}x{count_v} surface, got {len(flat)}."
            )
        weights = p.get("weights")
        if weights is not None and len(weights) != expected:
            raise ValueError(f"'weights' length must equal count_u * count_v = {expected}.")
        points = [pt3d(item) for item in flat]
        data = {"degree_u": degree_u, "degree_v": degree_v, "count_u": count_u, "count_v": count_v}
        return self._add(p, "Surface", "nurbs", "nurbs_surface", (BoundingBox.around(points), data))

    def create_plane_surface(self, p: Params) -> dict[str, Any]:
        width = float(param_or_value_error(p, "width"))
        height = float(param_or_value_error(p, "height"))
        require_positive(width=width, height=height)
        origin = read_origin(
            p, "plane", "origin", message="create_plane_surface requires 'plane' or 'origin'."
        )
        far = (origin[0] + width, origin[1] + height, origin[2])
        return self._add(
            p, "Surface", "plane", "plane_surface", (BoundingBox.around([origin, far]), {})
        )

    def create_surface_from_points(self, p: Params) -> dict[str, Any]:
        raw = param_or_value_error(p, "points")
        if not isinstance(raw, (list, tuple)) or len(raw) not in (3, 4):
            raise ValueError("'points' must be a list of exactly 3 or 4 [x,y,z] entries.")
        points = read_points(raw)
        data = {"faces": 1, "edges": len(points), "vertices": len(points), "solid": False}
        return self._add(p, "Brep", "surface", "surface", (BoundingBox.around(points), data))

    def create_box(self, p: Params) -> dict[str, Any]:
        layer = layer_path(self.doc, p.get("layer"))
        if "corners" in p:
            raw = p["corners"]
            if not isinstance(raw, (list, tuple)) or len(raw) != 8:
                raise ValueError("'corners' must be a list of exactly 8 [x,y,z] points.")
            points = read_points(raw, "corner")
            bbox = BoundingBox.around(points)
            w, d, h = (bbox.maximum[i] - bbox.minimum[i] for i in range(3))
            return self._add(p, "Brep", "box", "box", box_data(bbox.minimum, w, d, h), layer=layer)
        width = float(param_or_value_error(p, "width"))
        height = float(param_or_value_error(p, "height"))
        depth = float(param_or_value_error(p, "depth"))
        if width <= 0.0 or height <= 0.0 or depth <= 0.0:
            raise ValueError("width, height, and depth must all be > 0.")
        plane = p.get("plane")
        corner = (
            plane_origin(plane) if plane is not None else pt3d(param_or_value_error(p, "corner"))
        )
        return self._add(
            p, "Brep", "box", "box", box_data(corner, width, depth, height), layer=layer
        )

    def create_sphere(self, p: Params) -> dict[str, Any]:
        center = pt3d(param_or_value_error(p, "center"))
        radius = float(param_or_value_error(p, "radius"))
        require_positive(radius=radius)
        return self._add(p, "Brep", "sphere", "sphere", sphere_data(center, radius))

    def _g_upright(self, p: Params, kind: str) -> dict[str, Any]:
        height = float(param_or_value_error(p, "height"))
        radius = float(param_or_value_error(p, "radius"))
        cap = bool(p.get("cap", True))
        require_positive(height=height, radius=radius)
        base = read_origin(
            p, "base_plane", "base_center",
            message=f"create_{kind} requires 'base_center' or 'base_plane'.",
        )  # fmt: skip
        build = cylinder_data if kind == "cylinder" else cone_data
        return self._add(p, "Brep", kind, kind, build(base, radius, height, cap))

    def create_cylinder(self, p: Params) -> dict[str, Any]:
        return self._g_upright(p, "cylinder")

    def create_cone(self, p: Params) -> dict[str, Any]:
        return self._g_upright(p, "cone")

    def create_torus(self, p: Params) -> dict[str, Any]:
        major = float(param_or_value_error(p, "major_radius"))
        minor = float(param_or_value_error(p, "minor_radius"))
        require_positive(major_radius=major, minor_radius=minor)
        if minor >= major:
            raise ValueError("'minor_radius' must be less than 'major_radius'.")
        center = read_origin(
            p, "base_plane", "base_center",
            message="create_torus requires 'base_center' or 'base_plane'.",
        )  # fmt: skip
        return self._add(p, "Brep", "torus", "torus", torus_data(center, major, minor))

    def create_pipe(self, p: Params) -> dict[str, Any]:
        curve_id = str(param_or_value_error(p, "curve_id"))
        radii_raw = param_or_value_error(p, "radii")
        if not isinstance(radii_raw, (list, tuple)) or len(radii_raw) == 0:
            raise ValueError("'radii' must be a non-empty list.")
        radii = [float(r) for r in radii_raw]
        if any(r <= 0.0 for r in radii):
            raise ValueError("All radii must be > 0.")
        cap = int(p.get("cap", 1))
        if cap not in (0, 1, 2):
            raise ValueError("'cap' must be 0, 1, or 2.")
        rail = find_or_key_error(self.doc, curve_id)
        raw_params = p.get("parameters")
        if raw_params is not None:
            if len(raw_params) != len(radii):
                raise ValueError("'parameters' length must match 'radii' length.")
            [float(x) for x in raw_params]
        r = max(radii)
        (x0, y0, z0), (x1, y1, z1) = rail.bbox.minimum, rail.bbox.maximum
        bbox = BoundingBox((x0 - r, y0 - r, z0 - r), (x1 + r, y1 + r, z1 + r))
        length = float(rail.geometry.get("length", 0.0))
        data = {
            "faces": 1 if cap == 0 else 3, "edges": 2, "vertices": 2, "solid": cap != 0,
            "volume": math.pi * r * r * length,
        }  # fmt: skip
        return self._add(p, "Brep", "pipe", "pipe", (bbox, data))

    def create_extrusion(self, p: Params) -> dict[str, Any]:
        curve_id = str(param_or_value_error(p, "profile_curve_id"))
        cap = bool(p.get("cap", True))
        profile = find_or_key_error(self.doc, curve_id)
        if profile.object_type != "Curve":
            raise ValueError(f"Object '{curve_id}' is not a curve.")
        if p.get("direction") is not None:
            raw = p["direction"]
            if isinstance(raw, (list, tuple)):
                direction = (float(raw[0]), float(raw[1]), float(raw[2]))
            else:
                direction = (float(raw["x"]), float(raw["y"]), float(raw["z"]))
        elif p.get("height") is not None:
            h = float(p["height"])
            if h == 0.0:
                raise ValueError("'height' must not be zero.")
            direction = (0.0, 0.0, h)
        else:
            raise ValueError("create_extrusion requires 'height' or 'direction'.")
        if direction == (0.0, 0.0, 0.0):
            raise ValueError("Extrusion direction must not be zero-length.")
        bbox = profile.bbox.union(profile.bbox.mapped(translation_map(direction)))
        data = {
            "degree_u": 1,
            "degree_v": 1,
            "closed_u": bool(profile.geometry.get("closed")),
            "capped": cap,
        }
        return self._add(p, "Extrusion", "extrusion", "extrusion", (bbox, data))

    def create_mesh(self, p: Params) -> dict[str, Any]:
        raw_verts = param_or_value_error(p, "vertices")
        raw_faces = param_or_value_error(p, "faces")
        if not isinstance(raw_verts, (list, tuple)) or len(raw_verts) < 3:
            raise ValueError("'vertices' must be a list of at least 3 [x,y,z] entries.")
        if not isinstance(raw_faces, (list, tuple)) or len(raw_faces) < 1:
            raise ValueError("'faces' must be a non-empty list.")
        vertices = read_points(raw_verts, "vertex")
        check_faces(raw_faces, len(vertices), verbose=True)
        normals = p.get("vertex_normals")
        if normals is not None and len(normals) != len(vertices):
            raise ValueError("'vertex_normals' length must match 'vertices' length.")
        colors = p.get("vertex_colors")
        if colors is not None and len(colors) != len(vertices):
            raise ValueError("'vertex_colors' length must match 'vertices' length.")
        data = {
            "vertex_count": len(vertices),
            "face_count": len(raw_faces),
            "colors": colors is not None,
        }
        result = self._add(p, "Mesh", "mesh", "mesh", (BoundingBox.around(vertices), data))
        box = result.pop("bounding_box")
        result.update(
            {"vertex_count": len(vertices), "face_count": len(raw_faces), "bounding_box": box}
        )
        return result

    def create_subd(self, p: Params) -> dict[str, Any]:
        layer = layer_path(self.doc, p.get("layer"))
        if p.get("from_mesh_id") is not None:
            mesh_id = str(p["from_mesh_id"])
            source = find_or_key_error(self.doc, mesh_id)
            if source.object_type != "Mesh":
                raise ValueError(f"Object '{mesh_id}' is not a mesh.")
            bbox = source.bbox
            data = {
                "vertex_count": source.geometry.get("vertex_count", 8),
                "face_count": source.geometry.get("face_count", 6),
            }
        elif "vertices" in p and "faces" in p:
            raw_verts = p["vertices"]
            if not isinstance(raw_verts, (list, tuple)) or len(raw_verts) < 3:
                raise ValueError("'vertices' must have at least 3 entries.")
            vertices = read_points(raw_verts, "vertex")
            check_faces(p["faces"], len(vertices), verbose=False)
            bbox = BoundingBox.around(vertices)
            data = {"vertex_count": len(vertices), "face_count": len(p["faces"])}
        else:
            raise ValueError("create_subd requires 'from_mesh_id' OR 'vertices'+'faces'.")
        return self._add(p, "SubD", "subd", "subd", (bbox, data), layer=layer)

    def create_text(self, p: Params) -> dict[str, Any]:
        text = str(param_or_value_error(p, "text"))
        if not text:
            raise ValueError("'text' must be non-empty.")
        height = float(p.get("height", 1.0))
        require_positive(height=height)
        position = read_origin(
            p, "plane", "point", "position",
            message="create_text requires 'point', 'position', or 'plane'.",
        )  # fmt: skip
        data = text_data(text, position, height)
        return self._add(p, "TextEntity", "text", "text", data, box_in_result=False)

    def create_text_dot(self, p: Params) -> dict[str, Any]:
        text = str(param_or_value_error(p, "text"))
        point = pt3d(param_or_value_error(p, "point"))
        data = (BoundingBox(point, point), {"text": text})
        return self._add(p, "TextDot", "text_dot", "text_dot", data, box_in_result=False)

    def create_dimension(self, p: Params) -> dict[str, Any]:
        dim_type = str(param_or_value_error(p, "type")).lower()
        raw = param_or_value_error(p, "points")
        valid = ("linear", "aligned", "angular", "radial", "diameter")
        if dim_type not in valid:
            raise ValueError(f"'type' must be one of {valid}, got '{dim_type}'.")
        if not isinstance(raw, (list, tuple)):
            raise ValueError("'points' must be a list.")
        layer = layer_path(self.doc, p.get("layer"))
        needed = {"linear": 3, "aligned": 3, "angular": 4, "radial": 2, "diameter": 2}[dim_type]
        if len(raw) < needed:
            shapes = {
                3: f"'{dim_type}' dimension needs 3 points [ref1, ref2, dim_location].",
                4: "'angular' dimension needs 4 points [center, ext1, ext2, arc_loc].",
                2: f"'{dim_type}' dimension needs 2 points [center, point_on_circle].",
            }
            raise ValueError(shapes[needed])
        points = [pt3d(item) for item in raw[:needed]]
        data = (BoundingBox.around(points), {"dimension": dim_type})
        return self._add(
            p, "Dimension", "dimension", "dimension", data, layer=layer, box_in_result=False
        )

    def create_hatch(self, p: Params) -> dict[str, Any]:
        raw_ids = param_or_value_error(p, "curve_ids")
        if not isinstance(raw_ids, (list, tuple)) or len(raw_ids) == 0:
            raise ValueError("'curve_ids' must be a non-empty list of GUID strings.")
        pattern = str(p.get("pattern", "Solid"))
        scale = float(p.get("scale", 1.0))
        float(p.get("rotation", 0.0))
        require_positive(scale=scale)
        if pattern.lower() not in (
            "solid",
            "hatch1",
            "hatch2",
            "hatch3",
            "grid",
            "grid60",
            "plus",
            "squares",
        ):
            raise ValueError(
                f"Hatch pattern '{pattern}' not found in the document. "
                "Load the pattern first or use a built-in name like 'Solid'."
            )
        curves = []
        for cid in raw_ids:
            curve = find_or_key_error(self.doc, cid)
            if curve.object_type != "Curve":
                raise ValueError(f"Object '{cid}' is not a curve.")
            curves.append(curve)
        if not all(c.geometry.get("closed") for c in curves):
            raise RuntimeError(
                "Hatch.Create returned no hatches -- verify that boundary curves are "
                f"closed and planar, and that pattern '{pattern}' exists."
            )
        bbox = curves[0].bbox
        for curve in curves[1:]:
            bbox = bbox.union(curve.bbox)
        return self._add(p, "Hatch", "hatch", "hatch", (bbox, {}), box_in_result=False)
