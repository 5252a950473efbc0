"""A full session over the wire against the default behaviour (golem-3dmcp@9819b31): create,
query, transform, Boolean, capture, delete, and the answers the real plugin gives on the way."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

GHOST = "00000000-0000-4000-8000-000000000000"


def _box(client: Any, corner: list[float], size: float, **extra: Any) -> str:
    result = client.call(
        "geometry.create_box", corner=corner, width=size, depth=size, height=size, **extra
    )
    assert result["type"] == "box"
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
    sphere = client.call("creation.create_sphere", center_x=50, center_y=0, center_z=0, radius=2)
    assert list(sphere) == ["guid"]  # the creation.* handlers answer the GUID alone
    line = client.call("geometry.create_line", start=[0, 0, 0], end=[3, 4, 0])
    assert line["bounding_box"] == {"min": [0.0, 0.0, 0.0], "max": [3.0, 4.0, 0.0]}
    listed = client.call("scene.list_objects")
    assert (listed["total"], listed["offset"], listed["limit"]) == (4, 0, 100)
    assert [o["guid"] for o in listed["objects"]][:3] == [first, second, sphere["guid"]]
    assert listed["objects"][0]["name"] == "first"

    moved = client.call("manipulation.move", ids=[sphere["guid"]], translation=[0, 10, 0])
    assert moved == {"moved_ids": [sphere["guid"]], "count": 1}
    info = client.call("scene.get_object_info", guid=sphere["guid"])
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
    assert (capture["success"], capture["width"], capture["height"]) == (True, 120, 80)
    assert capture["view_name"] == "Top"
    png = _decode_png(base64.b64decode(capture["image"]))
    assert (png["width"], png["height"], png["depth"], png["color_type"]) == (120, 80, 8, 2)
    assert len(png["raw"]) == 80 * (1 + 120 * 3)
    assert png["kinds"][0] == b"IHDR" and png["kinds"][-1] == b"IEND"
    assert b"\x00\x00\x00" in png["raw"]  # black wireframe pixels were drawn

    assert client.call("manipulation.delete", ids=[merged, sphere["guid"]]) == {"deleted_count": 2}
    assert client.call("scene.list_objects")["total"] == 1
    assert client.call("scene.get_document_info")["object_count"] == 1


def test_layers_nest_and_take_new_objects(client: Any) -> None:
    red = {"r": 255, "g": 0, "b": 0, "a": 255}
    assert client.call("scene.create_layer", name="Parts", color=red) == {
        "layer_index": 1,
        "full_path": "Parts",
        "success": True,
    }
    child = client.call("scene.create_layer", name="Bolts", parent_name="Parts")
    assert child["full_path"] == "Parts::Bolts"
    client.call("scene.set_current_layer", name="Parts::Bolts")
    point = client.call("creation.create_point", x=1, y=1)["guid"]
    assert client.call("scene.get_object_info", guid=point)["layer"] == "Parts::Bolts"
    layers = {layer["full_path"]: layer for layer in client.call("scene.list_layers")["layers"]}
    assert layers["Parts"]["color"] == red
    assert layers["Parts::Bolts"]["is_current"] and layers["Parts::Bolts"]["object_count"] == 1
    # Rhino refuses a layer with sub-layers, and a second layer of the same name: the handler
    # raises RuntimeError, which the real dispatcher answers as an unhandled exception.
    for method, params in (
        ("scene.delete_layer", {"name": "Parts"}),
        ("scene.create_layer", {"name": "Parts"}),
    ):
        refused = client.error(method, **params)
        assert refused["code"] == -32000
        assert refused["message"].startswith(f"Unhandled exception in handler '{method}'")


def test_list_objects_pages(client: Any) -> None:
    guids = [_box(client, [float(i), 0.0, 0.0], 1.0) for i in range(5)]
    page = client.call("scene.list_objects", name_pattern="*", limit=2, offset=1)
    assert [o["guid"] for o in page["objects"]] == guids[1:3]
    assert (page["total"], page["limit"], page["offset"]) == (5, 2, 1)


def test_rotate_copy_group_and_user_text(client: Any) -> None:
    box = _box(client, [0.0, 0.0, 0.0], 2.0)
    rotated = client.call("manipulation.rotate", ids=[box], center=[0, 0, 0], angle=90)
    assert rotated == {"result_ids": [box], "count": 1}
    bbox = client.call("scene.get_object_info", guid=box)["bounding_box"]
    assert bbox == {"min": [-2.0, 0.0, 0.0], "max": [0.0, 2.0, 2.0]}
    copy = client.call("manipulation.copy", ids=[box], translation=[100, 0, 0])["new_ids"][0]
    assert client.call("scene.get_object_info", guid=copy)["bounding_box"]["min"][0] == 98.0
    assert client.call("manipulation.group", ids=[box, copy], name="pair") == {"group_name": "pair"}
    assert client.call("scene.get_groups")["groups"] == [
        {"name": "pair", "index": 0, "member_count": 2, "member_guids": [box, copy]}
    ]
    client.call("manipulation.set_user_text", id=box, key="rev", value="3")
    assert client.call("manipulation.get_user_text", id=box) == {
        "id": box,
        "user_text": {"rev": "3"},
    }
    # The scale handler reads `origin`: a missing one comes back as an error dict in a result.
    failed = client.call("manipulation.scale", ids=[box], scale=2, center=[0, 0, 0])
    assert (failed["code"], failed["message"]) == ("INVALID_PARAMS", "'origin' [x,y,z] is required")


def test_failures_come_back_as_the_real_plugin_sends_them(client: Any) -> None:
    missing = client.error("geometry.create_sphere", center=[0, 0, 0])
    assert missing == {"code": -32000, "message": "Required parameter 'radius' is missing."}
    ghost = client.error("scene.get_object_info", guid=GHOST)
    assert ghost["message"] == f"\"Object not found in Rhino document: '{GHOST}'\""
    # The manipulation handlers skip GUIDs they cannot find.
    assert client.call("manipulation.move", ids=[GHOST], translation=[1, 0, 0]) == {
        "moved_ids": [],
        "count": 0,
    }
    assert client.call("manipulation.delete", ids=[GHOST]) == {"deleted_count": 0}


def test_list_methods_names_the_builtins_and_unknown_names_are_not_found(client: Any) -> None:
    assert client.call("list_methods") == {"methods": ["list_methods", "ping", "shutdown"]}
    for name in ("creation.create_hexagon", "manipulation.move_objects"):
        unknown = client.request(name)
        assert unknown["error"] == {"code": -32000, "message": f"Method not found: {name}"}
        assert unknown["result"] is None


def test_files_and_views(client: Any) -> None:
    path = client.call("files.get_document_path")
    assert path == {"file_path": None, "file_name": None, "is_modified": False}
    shown = client.call("viewport.set_display_mode", view_name="Perspective", mode="Rendered")
    assert shown == {"success": True, "view_name": "Perspective", "display_mode": "Rendered"}
    info = client.call("viewport.get_view_info", view_name="Perspective")
    assert info["display_mode"] == "Rendered"
    client.call("viewport.add_named_view", name="plan", view_name="Top")
    assert client.call("viewport.list_named_views")["named_views"] == ["plan"]
    assert client.call("viewport.restore_named_view", name="plan") == {
        "success": True,
        "restored": "plan",
    }
    _box(client, [0.0, 0.0, 0.0], 1.0)
    assert client.call("files.new_document")["success"] is True
    assert client.call("scene.list_objects")["total"] == 0


def test_list_objects_filters_and_the_selection_quirk(client: Any) -> None:
    box = _box(client, [0.0, 0.0, 0.0], 1.0)
    line = client.call("geometry.create_line", start=[0, 0, 0], end=[1, 0, 0])["guid"]
    curves = client.call("scene.list_objects", object_type="curve")
    assert [o["guid"] for o in curves["objects"]] == [line] and curves["total"] == 1
    assert client.call("scene.list_objects", name_pattern="x*")["total"] == 0
    # rs.SelectObjects returns a count, which the real handler then iterates: the answer is
    # an error dict, and the objects are selected all the same.
    failed = client.call("manipulation.select_objects", ids=[box])
    assert failed == {
        "code": "INVALID_PARAMS",
        "message": "'int' object is not iterable",
        "details": {"exception_type": "TypeError"},
    }
    selected = client.call("scene.get_selected_objects")["objects"]
    assert [o["guid"] for o in selected] == [box]
    assert client.call("manipulation.unselect_all") == {"unselected_count": 1}
    assert client.call("scene.get_selected_objects") == {"objects": []}
