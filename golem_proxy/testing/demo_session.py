"""The scripted session the demo drives: what a GOLEM MCP server sends while an assistant
models a small scene, including the calls that fail in real life (a typo'd GUID, a missing
parameter, a method the plugin never registered, a tool whose handler is not there)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

from .client import GolemClient, RhinoCommandError

__all__ = ["DemoOutcome", "run_demo_session"]

MISSING_GUID = "00000000-0000-4000-8000-000000000000"


@dataclass
class DemoOutcome:
    calls: int = 0
    failures: list[str] = field(default_factory=list)


def run_demo_session(
    main: tuple[str, int],
    gh: tuple[str, int],
    narrate: Optional[Callable[[str], None]] = None,
) -> DemoOutcome:
    """Drive the scripted session through the proxy's ``main`` and ``gh`` addresses.
    Returns what was called and which calls failed (as the MCP server would see them)."""
    outcome = DemoOutcome()
    say = narrate or (lambda text: None)

    def call(client: GolemClient, method: str, params: dict[str, Any]) -> Any:
        outcome.calls += 1
        try:
            return client.send_command(method, params)
        except RhinoCommandError as exc:
            outcome.failures.append(f"{method}: {exc}")
            return None

    with GolemClient(*main) as rhino:
        say("modelling a small scene on the main channel")
        call(rhino, "scene.get_document_info", {})
        call(rhino, "scene.create_layer", {"name": "Walls", "color": [200, 80, 40]})
        walls = [
            call(
                rhino,
                "geometry.create_box",
                {
                    "corner": [x, 0.0, 0.0],
                    "width": 40.0,
                    "depth": 10.0,
                    "height": 30.0,
                    "layer": "Walls",
                    "name": f"wall-{index}",
                },
            )
            for index, x in enumerate((0.0, 30.0))
        ]
        call(rhino, "geometry.create_sphere", {"center": [20.0, 5.0, 45.0], "radius": 8.0})
        call(rhino, "scene.list_objects", {"layer": "Walls"})
        guids = [w["guid"] for w in walls if isinstance(w, dict) and "guid" in w]
        call(rhino, "manipulation.move_objects", {"guids": guids, "translation": [0, 5, 0]})
        call(rhino, "operations.boolean_union", {"guids": guids, "delete_input": True})
        call(rhino, "viewport.capture", {"width": 320, "height": 200, "view_name": "Perspective"})

        say("the calls that go wrong in real sessions")
        call(rhino, "scene.get_object_info", {"guid": MISSING_GUID})
        call(rhino, "geometry.create_sphere", {"center": [0, 0, 0]})  # no radius
        call(rhino, "creation.create_hexagon", {"radius": 3.0})  # never registered
        call(rhino, "manipulation.align_objects", {"guids": guids, "alignment": "left"})
        call(rhino, "scene.list_objects", {})

    with GolemClient(*gh) as grasshopper:
        say("a Grasshopper definition on the 9877 channel")
        call(grasshopper, "grasshopper.open_definition", {"file_path": "demo/box.gh"})
        call(grasshopper, "grasshopper.list_components", {})
        call(grasshopper, "grasshopper.set_input", {"component_name": "Height", "value": 12.5})
        call(grasshopper, "grasshopper.bake_objects", {"layer": "Walls"})
    return outcome
