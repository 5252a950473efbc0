"""The method catalogue model: loading both format versions and the drift of one request."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

import pytest

from golem_core.catalogue import MAX_BYTES, Drift, MethodCatalogue, drift_request, kind_of
from golem_core.messages import Request
from golem_core.profiles import GOLEM, JSONRPC_NDJSON
from golem_core.regular_files import FileTooLarge, NotARegularFile

SHARED_V1 = Path("/work/shared/golem/method-catalogue.json")


def _request(method: str, **params: Any) -> Request:
    body = {"id": "r1", "method": method, "params": params}
    return Request("r1", method, params, body)


def _catalogue() -> MethodCatalogue:
    """A version-2 catalogue in the shape the builder writes, with made-up source lines."""
    return MethodCatalogue.from_json(
        {
            "format": "golem-method-catalogue",
            "version": 2,
            "builtins": ["ping", "shutdown", "list_methods"],
            "plugin_methods": {
                "scene.list_objects": {
                    "module": "plugin/scene.py",
                    "line": 10,
                    "reads": {
                        "layer": {"at": "plugin/scene.py:12", "default": None},
                        "name_pattern": {"at": "plugin/scene.py:13", "default": None},
                        "selected_only": {"at": "plugin/scene.py:14", "casts": ["bool"]},
                    },
                    "required": [],
                },
                "geometry.create_torus": {
                    "module": "plugin/creation.py",
                    "line": 40,
                    "reads": {
                        "base_center": {
                            "at": "plugin/creation.py:44",
                            "accepts": {"kinds": ["array", "null", "object"], "keys": ["x", "y"]},
                        },
                        "base_plane": {"at": "plugin/creation.py:43"},
                        "color": {
                            "at": "plugin/creation.py:50",
                            "accepts": {"kinds": ["array", "null"]},
                        },
                        "major_radius": {"at": "plugin/creation.py:41", "casts": ["float"]},
                    },
                    "required": [
                        {"any_of": ["major_radius"], "at": "plugin/creation.py:41"},
                        {
                            "any_of": ["base_center", "base_plane"],
                            "at": "plugin/creation.py:46",
                            "null_ok": True,
                        },
                    ],
                },
                "scripting.run": {
                    "module": "plugin/scripting.py",
                    "line": 5,
                    "reads": {},
                    "reads_all_at": "plugin/scripting.py:7",
                },
            },
            "client_methods": {
                "scene.list_objects": {
                    "tools": [
                        {
                            "tool": "list_objects",
                            "at": "server/scene.py:30",
                            "params": {
                                "name": {"at": "server/scene.py:32"},
                                "unlocked_only": {"at": "server/scene.py:33"},
                            },
                        }
                    ]
                },
                "scene.hide_objects": {
                    "tools": [{"tool": "hide", "at": "server/scene.py:60", "params": {}}]
                },
            },
        },
        "test",
    )


def test_kind_of_names_json_kinds() -> None:
    kinds = [kind_of(v) for v in (None, True, 1, 1.5, "s", [1], {"r": 1})]
    assert kinds == ["null", "boolean", "number", "number", "string", "array", "object"]


def test_likely_tools_name_each_sending_tool_once_in_order() -> None:
    data = {
        "plugin_methods": {},
        "client_methods": {
            "geometry.create_box": {
                "tools": [
                    {"tool": "create_box", "at": "a.py:1"},
                    {"tool": "create_cube", "at": "a.py:9"},
                    {"tool": "create_box", "at": "b.py:1"},
                ]
            }
        },
    }
    catalogue = MethodCatalogue.from_json(data, "test")
    assert catalogue.likely_tools("geometry.create_box") == ("create_box", "create_cube")
    assert catalogue.likely_tools("ping") == ()
    assert _catalogue().likely_tools("scene.hide_objects") == ("hide",)


def test_unknown_method_names_the_tool_that_sends_it() -> None:
    drift = drift_request(_catalogue(), _request("scene.hide_objects", guids=["g"]))
    assert drift == [
        Drift("unknown-method", "scene.hide_objects", at="server/scene.py:60", side="client")
    ]
    assert _catalogue().drift(_request("ping")) == []  # builtins are registered


def test_a_similar_name_is_a_rename_not_an_unread_param() -> None:
    request = _request("scene.list_objects", layer=None, name="wall", unlocked_only=True)
    drift = _catalogue().drift(request)
    assert [(d.kind, d.param, d.other, d.at) for d in drift] == [
        ("renamed-param", "name", "name_pattern", "server/scene.py:32"),
        # sharing only the qualifier `only` with `selected_only` is no evidence of a rename
        ("unread-param", "unlocked_only", "", "server/scene.py:33"),
    ]


def test_required_alternatives_and_null() -> None:
    catalogue = _catalogue()
    drift = catalogue.drift(_request("geometry.create_torus", center=[0, 0, 0], major_radius=2))
    missing = [d for d in drift if d.kind == "missing-required"]
    assert [(d.param, d.at, d.detail) for d in missing] == [
        ("base_center|base_plane", "plugin/creation.py:46", "never sent")
    ]
    renamed = [d for d in drift if d.kind == "renamed-param"]
    assert [(d.param, d.other) for d in renamed] == [("center", "base_center")]
    # base_plane present (even null) satisfies a presence test; a null major_radius does not
    drift = catalogue.drift(_request("geometry.create_torus", base_plane=None, major_radius=None))
    assert [(d.kind, d.param, d.detail) for d in drift] == [
        ("missing-required", "major_radius", "sent as null")
    ]


def test_shapes_the_handler_does_not_accept() -> None:
    catalogue = _catalogue()
    request = _request(
        "geometry.create_torus",
        base_center={"x": 0, "y": 0},
        major_radius=2,
        color={"r": 1, "g": 2, "b": 3, "a": 255},
    )
    drift = catalogue.drift(request)
    assert [(d.kind, d.param, d.other, d.detail, d.at) for d in drift] == [
        ("shape-mismatch", "color", "array or null", "sent {r,g,b,a}", "plugin/creation.py:50")
    ]
    fine = _request("geometry.create_torus", base_center=[0, 0, 0], major_radius=2, color=None)
    assert catalogue.drift(fine) == []
    other_keys = _request("geometry.create_torus", base_center={"u": 1}, major_radius=2)
    assert [d.kind for d in catalogue.drift(other_keys)] == ["shape-mismatch"]


def test_a_handler_that_hands_params_on_reports_no_unread_param() -> None:
    assert _catalogue().drift(_request("scripting.run", code="x", anything=1)) == []


def test_violations_carry_rule_path_and_source_line() -> None:
    request = _request("scene.list_objects", name="wall", colour="red")
    violations = _catalogue().check_request(request)
    assert [(v.rule, v.path) for v in violations] == [
        ("catalogue.renamed-param", "$.params.name"),
        ("catalogue.unread-param", "$.params.colour"),
    ]
    assert "server/scene.py:32" in violations[0].message


def test_list_methods_with_builtins_only_knows_nothing() -> None:
    live = MethodCatalogue.from_method_list(["ping", "shutdown", "list_methods"], "live")
    assert not live.knows_methods and not live.knows_params
    assert live.drift(_request("geometry.create_box", width=1)) == []
    listed = MethodCatalogue.from_method_list(["ping", "geometry.create_box"], "live")
    assert listed.knows_methods and not listed.knows_params
    assert [d.kind for d in listed.drift(_request("scene.nope"))] == ["unknown-method"]
    assert listed.drift(_request("geometry.create_box", anything=1)) == []


def test_version_1_still_loads(tmp_path: Path) -> None:
    data = {
        "builtins": ["ping"],
        "plugin_methods": {"creation.create_box": {"params": ["width"], "module": "m.py"}},
    }
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(data))
    catalogue = MethodCatalogue.load(str(path))
    assert catalogue.methods == {"creation.create_box": frozenset({"width"}), "ping": None}
    drift = catalogue.drift(_request("creation.create_box", width=1, colour="red"))
    assert [(d.kind, d.param) for d in drift] == [("unread-param", "colour")]
    if SHARED_V1.exists():
        assert "creation.create_box" in MethodCatalogue.load(str(SHARED_V1)).methods


def test_unknown_versions_are_refused() -> None:
    with pytest.raises(ValueError, match="version 3"):
        MethodCatalogue.from_json({"version": 3, "plugin_methods": {}})
    with pytest.raises(ValueError, match="plugin_methods"):
        MethodCatalogue.from_json({"methods": []})


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        '{"plugin_methods": []}',
        "[" * 100_000 + "]" * 100_000,
        '{"plugin_methods": {"a.b": {"reads": [], "required": {"x": 1}, "params": 3}}, '
        '"client_methods": [1], "builtins": "ping"}',
        '{"plugin_methods": {"a.b": {"reads": {"x": {"casts": 1, "via": {}, "accepts": []}}}}, '
        '"client_methods": {"a.b": {"tools": [{"params": [1]}, 2]}}}',
    ],
)
def test_hostile_catalogue_files_load_or_fail_with_a_reason(tmp_path: Path, text: str) -> None:
    path = tmp_path / "hostile.json"
    path.write_text(text)
    try:
        catalogue = MethodCatalogue.load(str(path))
    except ValueError as exc:
        assert str(exc)
        return
    assert catalogue.drift(_request("a.b", x=1, y={"z": []})) is not None


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_a_device_or_a_directory_is_refused_unread(tmp_path: Path) -> None:
    # /dev/null, not /dev/zero or a FIFO: a loader that read them would never end this test
    # (tests/commands/test_catalogue_files_cli.py runs those in a bounded process).
    with pytest.raises(NotARegularFile, match="a character device"):
        MethodCatalogue.load("/dev/null")
    with pytest.raises(NotARegularFile, match="a directory"):
        MethodCatalogue.load(str(tmp_path))


def test_a_file_larger_than_any_catalogue_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with open(path, "wb") as file:
        file.truncate(MAX_BYTES + 1)  # sparse: nothing of it is on disk or read
    with pytest.raises(FileTooLarge):
        MethodCatalogue.load(str(path))


def _names(*methods: str) -> MethodCatalogue:
    return MethodCatalogue.from_method_list(methods, "test")


@pytest.mark.parametrize(
    ("asked", "meant"),
    [
        ("manipulation.move_objects", "manipulation.move"),
        ("manipulation.scale_objects_1d", "manipulation.scale"),
        ("surfaces.sweep_1_rail", "surfaces.sweep1"),
        ("surfaces.offset_surface", "operations.offset_surface"),
        ("manipulation.movement", None),  # a word is matched whole
        ("scene.set_object_name", None),  # likeness alone names nothing
        ("nothing.here", None),
    ],
)
def test_an_unknown_method_names_the_registered_one_it_means(
    asked: str, meant: Optional[str]
) -> None:
    catalogue = _names(
        "manipulation.move",
        "manipulation.scale",
        "surfaces.sweep1",
        "operations.offset_surface",
        "scene.set_current_layer",
    )
    assert catalogue.registered_like(asked) == meant
    (drift,) = drift_request(catalogue, _request(asked))
    assert drift.kind == "unknown-method" and drift.other == (meant or "")
    message = catalogue.check_request(_request(asked))[0].message
    assert (f"it registers `{meant}`" in message) is (meant is not None)


def test_a_channels_builtins_are_never_drift() -> None:
    catalogue = _names("scene.list_objects")
    gh = GOLEM.builtins_of("gh")
    assert gh == ("gh.ping", "gh.shutdown")
    assert drift_request(catalogue, _request("gh.ping"), gh) == []
    # On the main channel gh.ping is not a builtin: the main server does not answer it.
    main = GOLEM.builtins_of("main")
    assert "gh.ping" not in main
    assert [d.kind for d in drift_request(catalogue, _request("gh.ping"), main)] == [
        "unknown-method"
    ]
    # A route named after no channel: any channel's builtin is the server's own.
    assert set(GOLEM.builtins_of("rhino")) == set(main) | set(gh)
    assert JSONRPC_NDJSON.builtins_of("main") == ()
