"""The method table of golem-3dmcp@9819b31: every name the real plugin registers, written out
next to the handler that answers it, so grep, mypy and a dead-code scan see each one.
"""

from __future__ import annotations

from golem_core.dispatcher import Handler

from ..document import Document
from .creation import CreationHandlers
from .debug import DebugHandlers
from .envelope import wrapped_table
from .files import FileHandlers
from .geometry import GeometryHandlers
from .geometry_solids import GeometrySolidHandlers
from .grasshopper import GrasshopperHandlers
from .manipulation import ManipulationHandlers
from .manipulation_objects import ObjectManipulationHandlers
from .operations import OperationHandlers
from .operations_curves import CurveSurfaceOperationHandlers
from .scene import SceneHandlers
from .scripting import ScriptingHandlers
from .surfaces import SurfaceHandlers
from .viewport import ViewportHandlers

__all__ = ["handler_table"]


def _add(table: dict[str, Handler], family: dict[str, Handler]) -> None:
    """Add one family's names. A name two families claim is a mistake in this table: the real
    registry keeps the last one silently, and the table must say which one it models."""
    claimed = table.keys() & family.keys()
    if claimed:
        raise ValueError(f"handled twice: {', '.join(sorted(claimed))}")
    table.update(family)


def handler_table(
    document: Document, *, allow_scripts: bool = False, debug_methods: bool = False
) -> dict[str, Handler]:
    """Every registered method name → its handler, over one document (``debug.sleep`` only
    with ``debug_methods``). The families of the real modules that wrap every handler they
    register (manipulation, operations) answer a failure as an error dict in the result."""
    table: dict[str, Handler] = {}
    scene = SceneHandlers(document)
    _add(
        table,
        {
            "scene.get_document_info": scene.get_document_info,
            "scene.list_layers": scene.list_layers,
            "scene.list_objects": scene.list_objects,
            "scene.get_object_info": scene.get_object_info,
            "scene.get_selected_objects": scene.get_selected_objects,
            "scene.get_groups": scene.get_groups,
            "scene.get_blocks": scene.get_blocks,
            "scene.create_layer": scene.create_layer,
            "scene.delete_layer": scene.delete_layer,
            "scene.set_current_layer": scene.set_current_layer,
        },
    )
    creation = CreationHandlers(document)
    _add(
        table,
        {
            "creation.create_box": creation.create_box,
            "creation.create_sphere": creation.create_sphere,
            "creation.create_cylinder": creation.create_cylinder,
            "creation.create_cone": creation.create_cone,
            "creation.create_torus": creation.create_torus,
            "creation.create_line": creation.create_line,
            "creation.create_circle": creation.create_circle,
            "creation.create_arc": creation.create_arc,
            "creation.create_polyline": creation.create_polyline,
            "creation.create_nurbs_curve": creation.create_nurbs_curve,
            "creation.create_point": creation.create_point,
            "creation.create_text": creation.create_text,
        },
    )
    geometry = GeometryHandlers(document)
    _add(
        table,
        {
            "geometry.create_point": geometry.create_point,
            "geometry.create_point_cloud": geometry.create_point_cloud,
            "geometry.create_line": geometry.create_line,
            "geometry.create_polyline": geometry.create_polyline,
            "geometry.create_nurbs_curve": geometry.create_nurbs_curve,
            "geometry.create_interp_curve": geometry.create_interp_curve,
            "geometry.create_arc": geometry.create_arc,
            "geometry.create_circle": geometry.create_circle,
            "geometry.create_ellipse": geometry.create_ellipse,
            "geometry.create_helix": geometry.create_helix,
        },
    )
    solids = GeometrySolidHandlers(document)
    _add(
        table,
        {
            "geometry.create_nurbs_surface": solids.create_nurbs_surface,
            "geometry.create_plane_surface": solids.create_plane_surface,
            "geometry.create_surface_from_points": solids.create_surface_from_points,
            "geometry.create_box": solids.create_box,
            "geometry.create_sphere": solids.create_sphere,
            "geometry.create_cylinder": solids.create_cylinder,
            "geometry.create_cone": solids.create_cone,
            "geometry.create_torus": solids.create_torus,
            "geometry.create_pipe": solids.create_pipe,
            "geometry.create_extrusion": solids.create_extrusion,
            "geometry.create_mesh": solids.create_mesh,
            "geometry.create_subd": solids.create_subd,
            "geometry.create_text": solids.create_text,
            "geometry.create_text_dot": solids.create_text_dot,
            "geometry.create_dimension": solids.create_dimension,
            "geometry.create_hatch": solids.create_hatch,
        },
    )
    operations = OperationHandlers(document)
    _add(
        table,
        wrapped_table(
            {
                "operations.boolean_union": operations.boolean_union,
                "operations.boolean_difference": operations.boolean_difference,
                "operations.boolean_intersection": operations.boolean_intersection,
                "operations.boolean_split": operations.boolean_split,
                "operations.trim": operations.trim,
                "operations.split": operations.split,
            }
        ),
    )
    curve_ops = CurveSurfaceOperationHandlers(document)
    _add(
        table,
        wrapped_table(
            {
                "operations.offset_curve": curve_ops.offset_curve,
                "operations.offset_surface": curve_ops.offset_surface,
                "operations.fillet_edge": curve_ops.fillet_edge,
                "operations.fillet_curves": curve_ops.fillet_curves,
                "operations.chamfer_curves": curve_ops.chamfer_curves,
                "operations.chamfer_edge": curve_ops.chamfer_edge,
                "operations.intersect": curve_ops.intersect,
                "operations.mesh_from_brep": curve_ops.mesh_from_brep,
                "operations.project_curve": curve_ops.project_curve,
                "operations.extend_curve": curve_ops.extend_curve,
                "operations.blend_curves": curve_ops.blend_curves,
                "operations.rebuild_curve": curve_ops.rebuild_curve,
                "operations.rebuild_surface": curve_ops.rebuild_surface,
            }
        ),
    )
    surfaces = SurfaceHandlers(document)
    _add(
        table,
        {
            "surfaces.loft": surfaces.loft,
            "surfaces.sweep1": surfaces.sweep1,
            "surfaces.sweep2": surfaces.sweep2,
            "surfaces.revolve": surfaces.revolve,
            "surfaces.extrude_curve": surfaces.extrude_curve,
            "surfaces.extrude_surface": surfaces.extrude_surface,
            "surfaces.network_surface": surfaces.network_surface,
            "surfaces.patch": surfaces.patch,
            "surfaces.edge_surface": surfaces.edge_surface,
            "surfaces.cap_planar_holes": surfaces.cap_planar_holes,
            "surfaces.unroll": surfaces.unroll,
            "surfaces.planar_surface": surfaces.planar_surface,
        },
    )
    manipulation = ManipulationHandlers(document)
    _add(
        table,
        wrapped_table(
            {
                "manipulation.move": manipulation.move,
                "manipulation.copy": manipulation.copy,
                "manipulation.rotate": manipulation.rotate,
                "manipulation.scale": manipulation.scale,
                "manipulation.mirror": manipulation.mirror,
                "manipulation.orient": manipulation.orient,
                "manipulation.shear": manipulation.shear,
                "manipulation.array_linear": manipulation.array_linear,
                "manipulation.array_polar": manipulation.array_polar,
                "manipulation.array_along_curve": manipulation.array_along_curve,
                "manipulation.apply_transform": manipulation.apply_transform,
            }
        ),
    )
    objects = ObjectManipulationHandlers(document)
    _add(
        table,
        wrapped_table(
            {
                "manipulation.delete": objects.delete,
                "manipulation.group": objects.group,
                "manipulation.ungroup": objects.ungroup,
                "manipulation.join": objects.join,
                "manipulation.explode": objects.explode,
                "manipulation.set_properties": objects.set_properties,
                "manipulation.set_user_text": objects.set_user_text,
                "manipulation.get_user_text": objects.get_user_text,
                "manipulation.select_objects": objects.select_objects,
                "manipulation.unselect_all": objects.unselect_all,
            }
        ),
    )
    grasshopper = GrasshopperHandlers(document)
    _add(
        table,
        {
            "grasshopper.open_definition": grasshopper.open_definition,
            "grasshopper.close_definition": grasshopper.close_definition,
            "grasshopper.list_components": grasshopper.list_components,
            "grasshopper.get_param": grasshopper.get_param,
            "grasshopper.set_param": grasshopper.set_param,
            "grasshopper.recompute": grasshopper.recompute,
            "grasshopper.bake": grasshopper.bake,
            "grasshopper.run_definition": grasshopper.run_definition,
            "grasshopper.get_connections": grasshopper.get_connections,
        },
    )
    viewport = ViewportHandlers(document)
    _add(
        table,
        {
            "viewport.capture": viewport.capture,
            "viewport.set_view": viewport.set_view,
            "viewport.zoom_object": viewport.zoom_object,
            "viewport.zoom_extents": viewport.zoom_extents,
            "viewport.zoom_selected": viewport.zoom_selected,
            "viewport.set_display_mode": viewport.set_display_mode,
            "viewport.set_camera": viewport.set_camera,
            "viewport.create_named_view": viewport.create_named_view,
            "viewport.add_named_view": viewport.add_named_view,
            "viewport.restore_named_view": viewport.restore_named_view,
            "viewport.list_named_views": viewport.list_named_views,
            "viewport.get_view_info": viewport.get_view_info,
            "viewport.set_background_color": viewport.set_background_color,
        },
    )
    files = FileHandlers(document)
    _add(
        table,
        {
            "files.get_document_path": files.get_document_path,
            "files.save_document": files.save_document,
            "files.save_document_as": files.save_document_as,
            "files.new_document": files.new_document,
            "files.import_file": files.import_file,
            "files.export_objects": files.export_objects,
            "files.export_document": files.export_document,
            "files.export_selected": files.export_selected,
            "files.open_document": files.open_document,
        },
    )
    scripting = ScriptingHandlers(document, allow_scripts=allow_scripts)
    _add(
        table,
        {
            "scripting.execute_python": scripting.execute_python,
            "scripting.execute_rhinocommand": scripting.execute_rhinocommand,
            "scripting.evaluate_expression": scripting.evaluate_expression,
            "scripting.run_rhino_script": scripting.run_rhino_script,
        },
    )
    if debug_methods:
        _add(table, {"debug.sleep": DebugHandlers().sleep})
    return table
