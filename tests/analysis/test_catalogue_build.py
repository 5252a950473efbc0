"""``golem-proxy catalogue build``: handlers and tools found by code shape, reads through
helpers, requirements, shapes, the source commit; and the shipped GOLEM-3DMCP catalogue checked
against facts read by hand from the real sources at 9819b31."""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from golem_proxy.analysis.catalogue_build import build_catalogue
from golem_proxy.catalogues import CatalogueNotFound, load_catalogue, shipped
from tests.support.cli_helpers import ROOT, run_cli

SHIPPED = ROOT / "golem_proxy" / "catalogues" / "golem-3dmcp@9819b31.json"
DOCS = ROOT / "docs" / "golem-method-catalogue.json"
MIRROR = Path("/work/.mirror/TheKingHippopotamus+GOLEM-3DMCP-Rhino-/repo")
COMMIT = "9819b314d07f510de83c893dbb068032c4569f29"

PLUGIN = {
    "plug/__init__.py": "",
    "plug/registry.py": """
        _handlers = {}

        def handler(name):
            def wrap(fn):
                _handlers[name] = fn
                return fn
            return wrap

        def register(name, fn):
            _handlers[name] = fn

        def _ping(params):
            return {"alive": True}

        register("ping", _ping)
    """,
    "plug/util.py": """
        def need(params, key):
            if key not in params:
                raise ValueError(key)
            return params[key]

        def need_list(params, key):
            value = need(params, key)
            if not isinstance(value, (list, tuple)):
                raise ValueError(key)
            return list(value)
    """,
    "plug/handlers/__init__.py": "",
    "plug/handlers/shapes.py": """
        from plug.registry import handler
        from plug.util import need, need_list

        def _point(raw):
            if isinstance(raw, (list, tuple)):
                return raw
            if isinstance(raw, dict):
                return [raw["x"], raw["y"], raw["z"]]
            raise ValueError("point")

        def _req(params, key):
            value = params.get(key)
            if value is None:
                raise ValueError(key)
            return value

        def _attrs(params):
            return params.get("name"), params.get("layer")

        @handler("shapes.box")
        def box(params):
            name, layer = _attrs(params)
            if "corners" in params:
                return {"guid": "g", "corners": params["corners"]}
            width = float(_req(params, "width"))
            if "plane" in params and params["plane"] is not None:
                origin = params["plane"]
            else:
                origin = _point(_req(params, "corner"))
            result = {"guid": "g"}
            result["type"] = "box"
            return result

        @handler("shapes.torus")
        def torus(params):
            major = float(params.get("major_radius", 2.0))
            if "base_plane" in params:
                plane = params["base_plane"]
            elif "base_center" in params:
                plane = _point(params["base_center"])
            else:
                raise ValueError("base_center or base_plane")
            return {"guid": "t"}

        @handler("shapes.union")
        def union(params):
            guids = need_list(params, "guids")
            keep = params.get("keep", False)
            return {"guids": guids}

        @handler("layers.create")
        def create_layer(params):
            name = params.get("name", "")
            if not name:
                raise ValueError("name")
            color = params.get("color", {}) or {}
            try:
                rgb = (int(color.get("r", 0)), int(color.get("g", 0)), color.get("b"))
                size = params["size"]
            except Exception:
                rgb = (0, 0, 0)
            return {"index": 1}

        @handler("views.save")
        def save_view(params):
            return _save(params)

        def _save(params):
            name = params.get("name") or params.get("save_as")
            if name is None:
                raise ValueError("name")
            return {"saved": str(name)}

        @handler("script.run")
        def run(params):
            return execute(params)
    """,
}
SERVER = {
    "srv/__init__.py": "",
    "srv/tools.py": """
        from typing import Optional

        def _send(method, params):
            return connection().send_command(method, params)

        @mcp.tool()
        def create_box(x: float = 0.0, width: float = 1.0, layer: Optional[str] = None):
            return _send("shapes.box", {
                "corner": {"x": x, "y": 0.0, "z": 0.0},
                "width": width,
                "layer": layer,
                "tags": [1, 2],
                "note": None,
            })

        @mcp.tool()
        def create_layer(name: str, r: int = 0):
            params = {"name": name}
            params["color"] = {"r": r, "g": 0, "b": 0, "a": 255}
            return _send("layers.create", params)

        @mcp.tool
        def hide(guids: list):
            return _send("shapes.hide", {"guids": guids})

        def not_a_tool():
            return _send("shapes.secret", {})
    """,
}


def write_files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _line(text: str) -> int:
    """The line of plug/handlers/shapes.py holding ``text``."""
    lines = textwrap.dedent(PLUGIN["plug/handlers/shapes.py"]).splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


@pytest.fixture
def built(checkout: Path) -> dict[str, Any]:
    return build_catalogue([str(checkout)])


def test_handlers_and_tools_are_found_by_shape(built: dict[str, Any]) -> None:
    assert built["format"] == "golem-method-catalogue" and built["version"] == 2
    assert set(built["plugin_methods"]) == {
        "shapes.box",
        "shapes.torus",
        "shapes.union",
        "layers.create",
        "views.save",
        "script.run",
    }
    assert built["builtins"] == ["ping"]
    assert set(built["client_methods"]) == {"shapes.box", "layers.create", "shapes.hide"}
    assert built["client_methods_missing_in_plugin"] == ["shapes.hide"]
    box = built["plugin_methods"]["shapes.box"]
    assert (box["module"], box["function"]) == ("plug/handlers/shapes.py", "box")


def test_reads_through_helpers_and_requirements(built: dict[str, Any]) -> None:
    box = built["plugin_methods"]["shapes.box"]
    assert box["params"] == ["corner", "corners", "layer", "name", "plane", "width"]
    assert box["reads"]["width"]["via"] == ["_req"] and box["reads"]["width"]["casts"] == ["float"]
    assert box["reads"]["name"]["via"] == ["_attrs"]
    # width is needed unless corners are given; corner unless corners or a plane are
    assert [r["any_of"] for r in box["required"]] == [
        ["corners", "width"],
        ["corner", "corners", "plane"],
    ]
    assert box["reads"]["corner"]["accepts"] == {
        "kinds": ["array", "null", "object"],
        "keys": ["x", "y", "z"],
    }
    assert box["result_keys"] == ["corners", "guid", "type"]

    torus = built["plugin_methods"]["shapes.torus"]
    assert torus["reads"]["major_radius"]["default"] == 2.0
    assert [r["any_of"] for r in torus["required"]] == [["base_center", "base_plane"]]

    union = built["plugin_methods"]["shapes.union"]  # transitively, across modules
    assert union["reads"]["guids"]["via"] == ["need_list", "need"]
    assert union["reads"]["guids"]["accepts"]["kinds"] == ["array", "null"]
    # need() tests presence only, but the isinstance check then refuses a null
    line = _line('need_list(params, "guids")')
    at = f"plug/handlers/shapes.py:{line}"
    assert union["required"] == [{"any_of": ["guids"], "at": at}]
    assert "keep" in union["reads"]


def test_validated_reads_shapes_and_swallowed_failures(built: dict[str, Any]) -> None:
    layer = built["plugin_methods"]["layers.create"]
    assert [r["any_of"] for r in layer["required"]] == [["name"]]  # `if not name: raise`
    assert layer["reads"]["color"]["accepts"] == {
        "kinds": ["null", "object"],
        "keys": ["b", "g", "r"],
    }
    assert "size" in layer["reads"]  # read inside a try that swallows failures: not required
    save = built["plugin_methods"]["views.save"]
    assert [r["any_of"] for r in save["required"]] == [["name", "save_as"]]
    assert save["result_keys"] == ["saved"]


def test_params_handed_to_unknown_code_mean_any_may_be_read(built: dict[str, Any]) -> None:
    run = built["plugin_methods"]["script.run"]
    assert run["reads_all_at"] == f"plug/handlers/shapes.py:{_line('return execute(params)')}"


def test_tool_params_and_value_shapes(built: dict[str, Any]) -> None:
    (box,) = built["client_methods"]["shapes.box"]["tools"]
    assert (box["tool"], box["at"]) == ("create_box", "srv/tools.py:9")
    shapes = {name: p.get("shape") for name, p in box["params"].items()}
    assert shapes == {
        "corner": {"kinds": ["object"], "keys": ["x", "y", "z"]},
        "width": {"kinds": ["number"]},
        "layer": {"kinds": ["null", "string"]},
        "tags": {"kinds": ["array"]},
        "note": {"kinds": ["null"]},
    }
    (layer,) = built["client_methods"]["layers.create"]["tools"]
    assert layer["params"]["color"] == {
        "at": "srv/tools.py:20",
        "shape": {"kinds": ["object"], "keys": ["a", "b", "g", "r"]},
    }
    assert "shapes.secret" not in built["client_methods"]  # not a tool


def test_source_commit_from_git_or_given_and_digests(checkout: Path) -> None:
    (checkout / "plug" / "broken.py").write_text("def broken(:\n")
    plain = build_catalogue([str(checkout)])["built_from"]
    assert plain["commit"] is None and plain["unparsed"] == ["plug/broken.py"]
    assert set(plain["files"]) >= {"plug/handlers/shapes.py", "srv/tools.py"}
    assert all(d.startswith("sha256:") for d in plain["files"].values())
    git = checkout / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text("ab" * 20 + "\n")
    found = build_catalogue([str(checkout)])["built_from"]
    assert (found["commit"], found["commit_from"]) == ("ab" * 20, "checkout")
    given = build_catalogue([str(checkout)], commit="cd" * 20)["built_from"]
    assert (given["commit"], given["commit_from"]) == ("cd" * 20, "given")


def test_a_vendored_copy_is_listed_once(checkout: Path) -> None:
    shutil.copytree(checkout / "plug", checkout / "vendor" / "copy" / "plug")
    built = build_catalogue([str(checkout)])
    box = built["plugin_methods"]["shapes.box"]
    assert box["module"] == "plug/handlers/shapes.py"
    assert box["copies"] == [f"vendor/copy/plug/handlers/shapes.py:{_line('def box(params)')}"]


def test_cli_writes_the_catalogue(checkout: Path, tmp_path: Path) -> None:
    out = tmp_path / "catalogue.json"
    result = run_cli("catalogue", "build", str(checkout), "--out", str(out), "--commit", "c0ffee1")
    assert result.returncode == 0, result.stderr
    assert "6 plugin methods, 3 client methods (1 not registered by the plugin)" in result.stderr
    assert json.loads(out.read_text())["built_from"]["commit"] == "c0ffee1"
    missing = run_cli("catalogue", "build", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "nowhere" in missing.stderr


@pytest.fixture(scope="module")
def golem() -> dict[str, Any]:
    return dict(json.loads(SHIPPED.read_text()))


def test_shipped_catalogue_is_the_docs_copy_and_resolves_by_name() -> None:
    assert json.loads(DOCS.read_text()) == json.loads(SHIPPED.read_text())
    assert shipped() == ["golem-3dmcp@9819b31"]
    for spec in ("golem-3dmcp@9819b31", "golem-3dmcp", f"golem-3dmcp@{COMMIT}"):
        assert "geometry.create_box" in load_catalogue(spec).methods
    with pytest.raises(CatalogueNotFound, match="golem-3dmcp@9819b31"):
        load_catalogue("golem-3dmcp@1234567")


def test_shipped_catalogue_facts_read_by_hand(golem: dict[str, Any]) -> None:
    """Facts checked by reading rhino_plugin/ and mcp_server/ at 9819b31."""
    assert golem["built_from"]["commit"] == COMMIT
    plugin, client = golem["plugin_methods"], golem["client_methods"]
    assert (len(plugin), len(client), len(golem["client_methods_missing_in_plugin"])) == (
        135,
        89,
        40,
    )
    box = plugin["geometry.create_box"]  # reads through _req and _g_attrs
    assert {"corner", "width", "depth", "height", "name", "layer"} <= set(box["params"])
    assert box["reads"]["depth"]["via"] == ["_req"]
    assert box["reads"]["layer"]["via"] == ["_g_attrs"]
    union = plugin["operations.boolean_union"]  # _list_param → _require
    assert union["reads"]["guids"]["via"] == ["_list_param", "_require"]
    assert [r["any_of"] for r in union["required"]] == [["guids"]]
    named = plugin["viewport.add_named_view"]  # through _create_named_view_impl
    assert "save_as" in named["params"]
    assert [r["any_of"] for r in named["required"]] == [["name", "save_as"]]
    offset = plugin["operations.offset_curve"]
    assert offset["reads"]["distance"]["casts"] == ["float"]
    assert ["distance"] in [r["any_of"] for r in offset["required"]]
    torus = plugin["geometry.create_torus"]
    assert ["base_center", "base_plane"] in [r["any_of"] for r in torus["required"]]
    (torus_tool,) = client["geometry.create_torus"]["tools"]
    assert "center" in torus_tool["params"] and "base_center" not in torus_tool["params"]
    assert "name_pattern" in plugin["scene.list_objects"]["params"]
    assert "name" not in plugin["scene.list_objects"]["params"]
    assert "name" in client["scene.list_objects"]["params"]
    layer = plugin["scene.create_layer"]  # reads colour as a dict of r, g, b, a
    assert layer["reads"]["color"]["accepts"]["keys"] == ["a", "b", "g", "r"]
    (layer_tool,) = client["scene.create_layer"]["tools"]
    assert layer_tool["params"]["color"]["shape"] == {
        "kinds": ["object"],
        "keys": ["a", "b", "g", "r"],
    }
    assert golem["builtins"] == ["ping", "shutdown", "list_methods"]


@pytest.mark.skipif(not MIRROR.exists(), reason="the GOLEM-3DMCP mirror is not on this machine")
def test_shipped_catalogue_rebuilds_from_the_commit(tmp_path: Path) -> None:
    names = subprocess.run(
        ["git", f"--git-dir={MIRROR}", "ls-tree", "-r", "--name-only", COMMIT],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    archive = tmp_path / "src.tar"
    subprocess.run(
        ["git", f"--git-dir={MIRROR}", "archive", "-o", str(archive), COMMIT]
        + [n for n in names if n.endswith(".py")],
        check=True,
    )
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "src")
    source = json.loads(SHIPPED.read_text())["source"]
    rebuilt = build_catalogue([str(tmp_path / "src")], COMMIT, source)
    assert rebuilt == json.loads(SHIPPED.read_text())
