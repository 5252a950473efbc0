"""Realistic traces for the replay tests, written with TraceBuilder."""

from __future__ import annotations

from pathlib import Path

from tests.support.traces import TraceBuilder

BOX = "bd9c66b3-ad3c-4d6d-9a3d-1fa7bc8960a9"
SPHERE = "17fc695a-07a0-4a6e-8822-e8f36c031199"
UNION = "9a1de644-815e-46d1-bb8f-aa1837f8a88b"


def modelling_session(path: Path, *, layer: str = "walls-4821", step: float = 0.001) -> Path:
    """ping, a layer with a random name, a box and a sphere, a union of the two, two
    listings (one before the union and one after), on the main channel; a Grasshopper ping."""
    with TraceBuilder.create(str(path), step=step) as trace:
        trace.call("ping", {}, {"alive": True})
        trace.call(
            "scene.create_layer",
            {"name": layer, "color": [200, 80, 40]},
            {"success": True, "full_path": layer, "layer_index": 1},
        )
        trace.call(
            "geometry.create_box",
            {"corner": [0.0, 0.0, 0.0], "width": 40.0, "depth": 10.0, "height": 30.0},
            {"guid": BOX, "bounding_box": {"min": [0, 0, 0], "max": [40, 10, 30]}},
            latency=0.25,
        )
        trace.call(
            "geometry.create_sphere",
            {"center": [20.0, 5.0, 45.0], "radius": 8.0},
            {"guid": SPHERE, "bounding_box": {"min": [12, -3, 37], "max": [28, 13, 53]}},
            latency=0.5,
        )
        trace.call("scene.list_objects", {}, {"objects": [{"guid": BOX}, {"guid": SPHERE}]})
        trace.call(
            "operations.boolean_union",
            {"guids": [BOX, SPHERE]},
            {"count": 1, "guids": [UNION]},
        )
        trace.call("scene.list_objects", {}, {"objects": [{"guid": UNION}]})
        trace.call(
            "scene.get_object_info",
            {"guid": "00000000-0000-4000-8000-000000000000"},
            error=("OBJECT_NOT_FOUND", "Object not found: 00000000-0000-4000-8000-000000000000"),
        )
        trace.call("ping", {}, {"alive": True}, route="gh")
        trace.call("grasshopper.list_components", {}, {"components": []}, route="gh")
    return path
