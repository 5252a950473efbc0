"""Grasshopper on its own channel, sharing the document with the main channel."""

from __future__ import annotations

from typing import Any, Callable


def test_definition_round_trip_and_bake_shows_in_main_scene(
    plugin: Any, connect: Callable[..., Any]
) -> None:
    gh = connect(plugin.gh_address)
    assert gh.error("grasshopper.list_components")["code"] == "OPERATION_FAILED"
    opened = gh.call("grasshopper.open_definition", file_path="C:/defs/box.gh")
    assert opened["status"] == "opened" and opened["component_count"] == 5
    components = {c["nickname"]: c for c in gh.call("grasshopper.list_components")["components"]}
    assert set(components) == {"Width", "Depth", "Height", "Box", "Volume"}
    assert len(gh.call("grasshopper.get_connections")["connections"]) == 4

    gh.call("grasshopper.set_param", component_nickname="Width", value=4)
    gh.call("grasshopper.set_input", component_name="Depth", value=3)
    assert (
        gh.call("grasshopper.get_param", component_guid=components["Volume"]["guid"])["value"]
        == "60"
    )
    run = gh.call("grasshopper.run_definition", inputs={"Height": 2})
    assert run["outputs"]["Volume"] == 24.0
    assert (
        gh.error("grasshopper.set_param", component_nickname="Width", value="wide")["details"][
            "param"
        ]
        == "value"
    )
    assert (
        gh.error("grasshopper.set_param", component_nickname="Nope", value=1)["code"]
        == "OBJECT_NOT_FOUND"
    )

    baked = gh.call("grasshopper.bake", component_nickname="Box")
    assert baked["count"] == 1
    main = connect(plugin.main_address)
    info = main.call("scene.get_object_info", guid=baked["baked_guids"][0])
    assert info["bounding_box"] == {"min": [0.0, 0.0, 0.0], "max": [4.0, 3.0, 2.0]}
    assert main.call("grasshopper.bake_objects")["count"] == 1  # main channel answers too
    assert main.call("scene.list_objects")["total"] == 2
    assert gh.call("grasshopper.close_definition")["status"] == "closed"


def test_gh_channel_serves_only_grasshopper_methods(
    plugin: Any, connect: Callable[..., Any]
) -> None:
    gh = connect(plugin.gh_address)
    assert gh.request("scene.list_objects")["error"]["code"] == -32601
    methods = gh.call("list_methods")["methods"]
    assert all(
        m.startswith("grasshopper.") or m in ("ping", "shutdown", "list_methods") for m in methods
    )
    assert "grasshopper.bake_objects" in methods
