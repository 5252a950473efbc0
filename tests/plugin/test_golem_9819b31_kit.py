"""golem_9819b31.kit and .serialize: the real handlers' readers, failures and object shapes."""

from __future__ import annotations

import pytest

from rhino_plugin.document import Document
from rhino_plugin.geometry import BoundingBox
from rhino_plugin.golem_9819b31.kit import (
    FormatException,
    add_object,
    layer_path,
    list_param,
    opt_float,
    param_or_value_error,
    parse_guid,
    pt3d,
    read_points,
    require_positive,
    validate_guid_or_key_error,
)
from rhino_plugin.golem_9819b31.serialize import serialize_object
from rhino_plugin.golem_9819b31.shapes import arc_data, box_data

GUID = "8f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"


def test_guids_parse_as_dotnet_does() -> None:
    assert parse_guid("{" + GUID.upper() + "}") == GUID
    with pytest.raises(FormatException):
        parse_guid("nope")


def test_the_registry_lookup_fails_as_the_real_one() -> None:
    doc = Document(1)
    with pytest.raises(ValueError, match="GUID cannot be None"):
        validate_guid_or_key_error(doc, None)
    with pytest.raises(ValueError, match="expected 36 characters"):
        validate_guid_or_key_error(doc, "short")
    with pytest.raises(KeyError) as caught:
        validate_guid_or_key_error(doc, GUID)
    # str(KeyError) keeps the quotes: the real dispatcher sends exactly this.
    assert str(caught.value) == f"\"Object not found in Rhino document: '{GUID}'\""


def test_parameter_readers_keep_pythons_messages() -> None:
    with pytest.raises(ValueError, match=r"Required parameter 'points' is missing\."):
        param_or_value_error({"points": None}, "points")
    with pytest.raises(ValueError, match=r"Parameter 'guids' must be a list \(got str\)."):
        list_param({"guids": "x"}, "guids")
    assert opt_float({"d": None}, "d", 2.0) == 2.0
    with pytest.raises(ValueError, match=r"Parameter 'd' must be a number\."):
        opt_float({"d": "far"}, "d", 2.0)
    assert pt3d({"x": 1, "y": 2, "z": 3}) == (1.0, 2.0, 3.0)
    with pytest.raises(ValueError, match=r"Point list needs 3 elements, got 2\."):
        pt3d([1, 2])
    with pytest.raises(ValueError, match="Invalid point at index 1: "):
        read_points([[0, 0, 0], "x"])


def test_dimensions_must_be_positive_checked_in_the_order_given() -> None:
    require_positive(width=1.0, height=0.5)
    with pytest.raises(ValueError, match=r"^'height' must be > 0\.$"):
        require_positive(width=1.0, height=0.0)
    with pytest.raises(ValueError, match=r"^'major_radius' must be > 0\.$"):
        require_positive(major_radius=-1.0, minor_radius=-2.0)


def test_layers_are_found_by_full_path_only() -> None:
    doc = Document(1)
    doc.add_layer("Walls")
    doc.add_layer("Walls::Inner")
    assert layer_path(doc, None) == "Default"
    assert layer_path(doc, "Walls::Inner") == "Walls::Inner"
    with pytest.raises(ValueError, match="Layer not found: 'Inner'"):
        layer_path(doc, "Inner")


def test_a_brep_object_reports_type_unknown_as_the_real_serializer() -> None:
    doc = Document(1)
    bbox, data = box_data((0.0, 0.0, 0.0), 2.0, 3.0, 4.0)
    obj = add_object(doc, "Brep", "box", bbox, name="b", color=[1, 2, 3], **data)
    shape = serialize_object(doc, obj)
    assert shape["type"] == "unknown"
    assert shape["color"] == {"r": 1, "g": 2, "b": 3, "a": 255}
    assert shape["geometry"]["volume"] == 24.0 and shape["geometry"]["face_count"] == 6


def test_an_arc_box_covers_the_quadrants_it_sweeps() -> None:
    bbox, data = arc_data((0.0, 0.0, 0.0), 2.0, 0.0, 180.0)
    assert bbox == BoundingBox((-2.0, 0.0, 0.0), (2.0, 2.0, 0.0))
    assert data["closed"] is False and data["radius"] == 2.0
