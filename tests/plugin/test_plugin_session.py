"""A full session over the wire: create, query, transform, Boolean, capture, delete."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

from rhino_plugin.catalogue import ALL_METHODS


def _box(client: Any, corner: list[float], size: float, **extra: Any) -> str:
    result = client.call(
        "geometry.create_box", corner=corner, width=size, depth=size, height=size, **extra
    )
    assert result["type"] == "Brep"
    assert result["bounding_box"] == {"min": corner, "max": [c + size for c in corner]}
    guid: str = result["guid"]
    return guid


def _decode_png(data: bytes) -> dict[str, Any]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    idat = b""
    while pos < len(data):
        (length,) = struct.unpack("!I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack("!I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        if kind == b"IDAT":
            idat += body
        chunks[kind] = body
        pos += 12 + length
    width, height, depth, color_type = struct.unpack("!IIBB", chunks[b"IHDR"][:10])
    return {
        "width": width,
        "height": height,
        "depth": depth,
        "color_type": color_type,
        "raw": zlib.decompress(idat),
        "kinds": list(chunks),
    }


def test_full_session(client: Any) -> None:
    assert client.call("ping") == {"alive": True}
    first = _box(client, [0.0, 0.0, 0.0], 10.0, name="first")
    second = _box(client, [5.0, 5.0, 5.0], 10.0)
    sphere = client.call("creation.create_sphere", center_x=50, center_y=0, center_z=0, radius=2)[
        "guid"
    ]
    line = client.call("geometry.create_line", start=[0, 0, 0], end=[3, 4, 0])
    assert line["type"] == "Curve"
    listed = client.call("scene.list_objects")
    assert listed["total"] == 4
    assert [o["guid"] for o in listed["objects"]][:3] == [first, second, sphere]

    moved = client.call("manipulation.move_objects", guids=[sphere], translation=[0, 10, 0])
    assert moved == {"count": 1, "moved_ids": [sphere]}
    info = client.call("scene.get_object_info", guid=sphere)
    assert info["bounding_box"] == {"min": [48.0, 8.0, -2.0], "max": [52.0, 12.0, 2.0]}

    union = client.call("operations.boolean_union", guids=[first, second], delete_input=True)
    assert union["count"] == 1
    merged = union["guids"][0]
    assert union["objects"][0]["bounding_box"] == {
        "min": [0.0, 0.0, 0.0],
        "max": [15.0, 15.0, 15.0],
    }
    remaining = {o["guid"] for o in client.call("scene.list_objects")["objects"]}
    assert first not in remaining and second not in remaining and merged in remaining

    capture = client.call("viewport.capture", width=120, height=80, view_name="Top")
    assert (capture["width"], capture["height"], capture["view_name"]) == (120, 80, "Top")
    png = _decode_png(base64.b64decode(capture["image"]))
    assert (png["width"], png["height"], png["depth"], png["color_type"]) == (120, 80, 8, 2)
    assert len(png["raw"]) == 80 * (1 + 120 * 3)
    assert png["kinds"][0] == b"IHDR" and png["kinds"][-1] == b"IEND"
    assert b"\x00\x00\x00" in png["raw"]  # black wireframe pixels were drawn

    deleted = client.call("scene.delete_objects", guids=[merged, sphere])
    assert deleted["deleted_count"] == 2
    assert client.call("scene.list_objects")["total"] == 1
    assert client.call("scene.get_document_info")["object_count"] == 1


def test_plugin_spellings_and_layers(client: Any) -> None:
    client.call("scene.create_layer", name="Parts", color=[255, 0, 0])
    child = client.call("scene.create_layer", name="Bolts", parent="Parts")
    assert child["full_path"] == "Parts::Bolts"
    box = client.call(
        "creation.create_box",
        corner_x=1,
        corner_y=2,
        corner_z=3,
        width=1,
        depth=2,
        height=3,
        layer="Parts",
    )["guid"]
    client.call("scene.set_current_layer", name="Parts::Bolts")
    point = client.call("creation.create_point", x=1, y=1)["guid"]
    assert client.call("scene.get_object_info", guid=point)["layer"] == "Parts::Bolts"
    on_parts = client.call("scene.list_objects", layer="Parts")
    assert [o["guid"] for o in on_parts["objects"]] == [box]
    layers = {layer["full_path"]: layer for layer in client.call("scene.list_layers")["layers"]}
    assert layers["Parts"]["color"] == [255, 0, 0] and layers["Parts::Bolts"]["current"]
    client.call("scene.set_current_layer", name="Default")
    failed = client.error("scene.delete_layer", name="Parts")
    assert failed["code"] == "OPERATION_FAILED"
    assert (
        client.call("scene.delete_layer", name="Parts", delete_objects=True)["deleted_objects"] == 2
    )
    assert client.call("scene.list_objects")["total"] == 0


def test_list_objects_filters_and_paging(client: Any) -> None:
    guids = [
        client.call("geometry.create_sphere", center=[i, 0, 0], radius=1, name=f"ball-{i}")["guid"]
        for i in range(5)
    ]
    client.call("geometry.create_circle", center=[0, 0, 0], radius=1, name="ring")
    assert client.call("scene.list_objects", name_pattern="ball-*")["total"] == 5
    assert client.call("scene.list_objects", object_type="curve")["total"] == 1
    page = client.call("scene.list_objects", limit=2, offset=1)
    assert [o["guid"] for o in page["objects"]] == guids[1:3]
    assert (page["total"], page["limit"], page["offset"]) == (6, 2, 1)
    client.call("scene.hide_objects", guids=guids[:2])
    client.call("scene.lock_objects", guids=[guids[2]])
    assert client.call("scene.list_objects", visible_only=True)["total"] == 4
    assert client.call("scene.list_objects", unlocked_only=True)["total"] == 5
    client.call("manipulation.select_objects", ids=guids[3:])
    assert client.call("scene.list_objects", selected_only=True)["total"] == 2
    assert client.call("scene.get_selected_objects")["count"] == 2
    assert client.call("manipulation.unselect_all") == {"unselected_count": 2}


def test_rotate_scale_mirror_copy(client: Any) -> None:
    box = _box(client, [0.0, 0.0, 0.0], 2.0)
    client.call(
        "manipulation.rotate_objects",
        guids=[box],
        angle_degrees=90,
        center=[0, 0, 0],
        axis=[0, 0, 1],
    )
    bbox = client.call("scene.get_object_info", guid=box)["bounding_box"]
    assert bbox == {"min": [-2.0, 0.0, 0.0], "max": [0.0, 2.0, 2.0]}
    client.call("manipulation.rotate", ids=[box], angle=45)
    bbox = client.call("scene.get_object_info", guid=box)["bounding_box"]
    assert abs(bbox["max"][0] - bbox["min"][0] - 2 * 2**0.5) < 1e-6
    copy = client.call(
        "manipulation.scale_objects", guids=[box], scale=2, center=[0, 0, 0], copy=True
    )["result_ids"][0]
    assert copy != box
    assert client.call("scene.get_object_info", guid=copy)["bounding_box"]["max"][2] == 4.0
    mirrored = client.call(
        "operations.mirror_objects",
        guids=[copy],
        plane_origin=[0, 0, 0],
        plane_normal=[0, 0, 1],
        copy=False,
    )
    assert (
        client.call("scene.get_object_info", guid=mirrored["result_ids"][0])["bounding_box"]["min"][
            2
        ]
        == -4.0
    )
    copies = client.call("manipulation.copy", ids=[box], translation=[100, 0, 0])
    assert client.call("scene.list_objects")["total"] == 3 and copies["count"] == 1


def test_groups_and_user_text(client: Any) -> None:
    a, b = _box(client, [0.0, 0.0, 0.0], 1.0), _box(client, [3.0, 0.0, 0.0], 1.0)
    assert (
        client.call("operations.group_objects", guids=[a, b], group_name="pair")["group_name"]
        == "pair"
    )
    assert client.call("scene.get_groups")["groups"] == [
        {"name": "pair", "object_count": 2, "guids": [a, b]}
    ]
    assert client.call("operations.ungroup_objects", guids=[a])["freed_ids"] == [a, b]
    client.call("manipulation.group", ids=[a])
    assert client.call("manipulation.ungroup", group_name="Group01")["freed_ids"] == [a]
    client.call("scene.set_user_text", guid=a, key="part", value="A-1")
    client.call("manipulation.set_user_text", id=a, key="rev", value="3")
    assert client.call("manipulation.get_user_text", id=a)["user_text"] == {
        "part": "A-1",
        "rev": "3",
    }
    client.call("manipulation.set_properties", ids=[a, b], name="boxy", color=[1, 2, 3])
    assert client.call("scene.get_object_info", guid=b)["color"] == [1, 2, 3]
    assert client.call("scene.list_objects", name="boxy")["total"] == 2


def test_boolean_intersection_and_difference(client: Any) -> None:
    a, b = _box(client, [0.0, 0.0, 0.0], 10.0), _box(client, [5.0, 5.0, 5.0], 10.0)
    far = _box(client, [100.0, 0.0, 0.0], 1.0)
    overlap = client.call("operations.boolean_intersection", guids=[a, b], delete_input=False)
    assert overlap["objects"][0]["bounding_box"] == {
        "min": [5.0, 5.0, 5.0],
        "max": [10.0, 10.0, 10.0],
    }
    assert (
        client.error("operations.boolean_intersection", guids=[a, far])["code"]
        == "OPERATION_FAILED"
    )
    kept = client.call(
        "operations.boolean_difference", target_guids=[a], cutter_guids=[b], delete_input=True
    )
    assert kept["objects"][0]["bounding_box"]["max"] == [10.0, 10.0, 10.0]
    assert client.error("scene.get_object_info", guid=a)["code"] == "OBJECT_NOT_FOUND"
    tiny, big = _box(client, [6.0, 6.0, 6.0], 1.0), _box(client, [0.0, 0.0, 0.0], 50.0)
    swallowed = client.error(
        "operations.boolean_difference", target_guids=[tiny], cutter_guids=[big]
    )
    assert swallowed["code"] == "OPERATION_FAILED"


def test_invalid_params_name_the_parameter(client: Any) -> None:
    missing = client.error("geometry.create_sphere", center=[0, 0, 0])
    assert missing["code"] == "INVALID_PARAMS"
    assert "radius" in missing["message"] and missing["details"]["param"] == "radius"
    for bad in (True, "3"):
        wrong = client.error("creation.create_box", width=bad, depth=1, height=1)
        assert (wrong["code"], wrong["details"]["param"]) == ("INVALID_PARAMS", "width")
    layer = client.error("geometry.create_point", location=[0, 0, 0], layer="Nope")
    assert (layer["code"], layer["details"]["param"]) == ("INVALID_PARAMS", "layer")
    too_big = client.error("viewport.capture", width=5000, height=10)
    assert too_big["details"]["param"] == "width"
    assert (
        client.error("manipulation.move_objects", translation=[1, 0, 0])["details"]["param"]
        == "guids"
    )


def test_unknown_guid_is_object_not_found(client: Any) -> None:
    ghost = "00000000-0000-4000-8000-000000000000"
    for method, params in (
        ("scene.get_object_info", {"guid": ghost}),
        ("manipulation.move", {"ids": [ghost], "translation": [1, 0, 0]}),
        ("scene.delete_objects", {"guids": [ghost]}),
    ):
        error = client.error(method, **params)
        assert error["code"] == "OBJECT_NOT_FOUND" and ghost in error["message"]


def test_catalogue_methods_are_all_listed_and_unmodelled_ones_refuse(client: Any) -> None:
    methods = set(client.call("list_methods")["methods"])
    assert ALL_METHODS | {"ping", "shutdown", "list_methods"} == methods
    error = client.error("surfaces.sweep_2_rails", rail1_guid="x")
    assert error["code"] == "NOT_IMPLEMENTED" and "surfaces.sweep_2_rails" in error["message"]
    unknown = client.request("creation.create_hexagon")
    assert unknown["error"] == {
        "code": -32601,
        "message": "Method not found: creation.create_hexagon",
    }
    assert unknown["result"] is None


def test_files_and_views(client: Any) -> None:
    assert client.call("files.get_document_path")["file_path"] is None
    client.call("viewport.set_display_mode", view_name="Top", mode="shaded")
    assert client.call("viewport.get_view_info", view_name="top")["display_mode"] == "Shaded"
    client.call("viewport.add_named_view", save_as="plan", source_view_name="Top")
    assert client.call("viewport.list_named_views")["named_views"][0]["name"] == "plan"
    client.call("viewport.restore_named_view", named_view="plan", target_view_name="Front")
    views = {v["name"]: v for v in client.call("scene.list_views")["views"]}
    assert views["Front"]["projection"] == "top"
    _box(client, [0.0, 0.0, 0.0], 1.0)
    client.call("files.new_document")
    assert client.call("scene.list_objects")["total"] == 0


def test_the_extended_behaviour_takes_the_colour_the_mcp_server_sends(client: Any) -> None:
    color = {"r": 200, "g": 50, "b": 50, "a": 255}
    assert client.call("scene.create_layer", name="Red", color=color)["success"] is True
    (red,) = [
        layer for layer in client.call("scene.list_layers")["layers"] if layer["name"] == "Red"
    ]
    assert red["color"] == [200, 50, 50]
