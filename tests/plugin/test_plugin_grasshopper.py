"""Grasshopper on its own channel, sharing the document with the main channel."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable


def test_definition_round_trip_and_bake_shows_in_main_scene(
    plugin: Any, connect: Callable[..., Any], tmp_path: Path
) -> None:
    gh = connect(plugin.gh_address)
    closed = gh.error("grasshopper.list_components")
    assert closed["message"].startswith("Grasshopper canvas is not open.")
    definition = tmp_path / "box.gh"
    definition.write_text("a definition\n", encoding="utf-8")
    opened = gh.call("grasshopper.open_definition", file_path=str(definition))
    assert opened == {"status": "opened", "file_path": str(definition), "component_count": 5}
    components = {c["nickname"]: c for c in gh.call("grasshopper.list_components")["components"]}
    assert set(components) == {"Width", "Depth", "Height", "Box", "Volume"}
    assert len(gh.call("grasshopper.get_connections")["connections"]) == 4

    set_width = gh.call("grasshopper.set_param", component_nickname="Width", value=4)
    assert set_width == {"status": "set", "component": "Width", "value": 4}
    run = gh.call("grasshopper.run_definition", inputs={"Height": 2})
    assert run == {"status": "ok", "outputs": {"Box.B": "Box (volume 80)"}, "baked_guids": []}
    wrong = gh.error("grasshopper.set_param", component_nickname="Width", value="wide")
    assert wrong["message"] == (
        "Failed to set slider 'Width': could not convert string to float: 'wide'"
    )
    missing = gh.error("grasshopper.set_param", component_nickname="Nope", value=1)
    assert missing["message"] == "Component not found in active definition: Nope"

    baked = gh.call("grasshopper.bake", component_nickname="Box")
    assert baked["count"] == 1
    main = connect(plugin.main_address)
    info = main.call("scene.get_object_info", guid=baked["baked_guids"][0])
    assert info["bounding_box"] == {"min": [0.0, 0.0, 0.0], "max": [4.0, 10.0, 2.0]}
    # The real plugin registers grasshopper.* in its one registry: main answers them too.
    assert main.call("grasshopper.bake", component_nickname="Box")["count"] == 1
    assert main.call("scene.list_objects")["total"] == 2
    assert gh.call("grasshopper.close_definition") == {"status": "closed"}


def test_the_gh_channel_answers_every_registered_name(
    plugin: Any, connect: Callable[..., Any]
) -> None:
    gh = connect(plugin.gh_address)
    # One dispatcher behind both servers: scene.* works on the Grasshopper channel too.
    assert gh.call("scene.list_objects")["total"] == 0
    assert gh.request("list_methods")["error"] == {
        "code": -32000,
        "message": "Method not found: list_methods",
    }
