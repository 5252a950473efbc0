"""Playing a conformance table row against a fresh headless plugin (stdlib only; the tables are
in tests/plugin/conformance/ and run on Python 3.11 and 3.9)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from plugin_client import Client

from golem_core.messages import kind_of
from rhino_plugin import HeadlessPlugin, PluginOptions

TABLES = Path(__file__).parent / "conformance"


def load(name: str) -> dict[str, Any]:
    table: dict[str, Any] = json.loads((TABLES / name).read_text(encoding="utf-8"))
    return table


def classify(reply: dict[str, Any]) -> tuple[str, Any]:
    """``(outcome, body)``: error_envelope (body: the error), error_result (a wrapped
    handler's error dict as the result) or success (body: the result)."""
    if reply["error"] is not None:
        return "error_envelope", reply["error"]
    result = reply["result"]
    if (
        isinstance(result, dict)
        and isinstance(result.get("code"), str)
        and "message" in result
        and set(result) <= {"code", "message", "details"}
    ):
        return "error_result", result
    return "success", result


def fixtures(client: Client, tmp: str) -> dict[str, Any]:
    """The placeholders a table's params may use, created through the plugin itself."""
    ids: dict[str, Any] = {"$tmp": tmp}
    ids["$box"] = client.call("creation.create_box", width=10, depth=10, height=10)["guid"]
    ids["$box2"] = client.call(
        "creation.create_box", corner_x=5, corner_y=5, corner_z=5, width=10, depth=10, height=10
    )["guid"]
    ids["$curve"] = client.call("creation.create_line", end_x=10)["guid"]
    ids["$curve2"] = client.call("creation.create_line", start_x=10, end_x=10, end_y=10)["guid"]
    ids["$closed_curve"] = client.call("creation.create_circle", radius=3)["guid"]
    ids["$mesh"] = client.call(
        "geometry.create_mesh",
        vertices=[[0, 0, 0], [4, 0, 0], [4, 4, 0], [0, 4, 0]],
        faces=[[0, 1, 2, 3]],
    )["guid"]
    ids["$surface"] = client.call(
        "geometry.create_plane_surface", origin=[0, 0, 0], width=4, height=4
    )["guid"]
    gh_file = os.path.join(tmp, "box.gh")
    with open(gh_file, "w", encoding="utf-8") as handle:
        handle.write("grasshopper definition placeholder")
    ids["$gh_file"] = gh_file
    return ids


def substitute(value: Any, ids: dict[str, Any]) -> Any:
    if isinstance(value, str):
        if value in ids:
            return ids[value]
        return value.replace("$tmp", ids["$tmp"])
    if isinstance(value, list):
        return [substitute(item, ids) for item in value]
    if isinstance(value, dict):
        return {key: substitute(item, ids) for key, item in value.items()}
    return value


def play(row: dict[str, Any]) -> tuple[str, Any]:
    """Send one row's request to a fresh plugin after its setup calls; returns
    ``(outcome, body)``."""
    outcome, body, _ = play_and_place(row)
    return outcome, body


def play_and_place(row: dict[str, Any]) -> tuple[str, Any, list[str]]:
    """`play`, and when the row has ``results_on_layer``, the layer of every object the
    result names (``guid``, ``guids``), read back with ``scene.get_object_info``."""
    with tempfile.TemporaryDirectory() as tmp:
        plugin = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(seed=1, allow_scripts=True))
        plugin.start()
        client = Client(plugin.main_address)
        channel = client if row.get("channel", "main") == "main" else Client(plugin.gh_address)
        try:
            ids = fixtures(client, tmp)
            for method, params in row.get("setup", []):
                client.call(method, **substitute(params, ids))
            reply = channel.request(row["method"], substitute(row["params"], ids))
            outcome, body = classify(reply)
            layers = []
            if "results_on_layer" in row and outcome == "success":
                made = [body["guid"]] if "guid" in body else list(body.get("guids", []))
                for guid in made:
                    layers.append(client.call("scene.get_object_info", guid=guid)["layer"])
        finally:
            channel.close()
            client.close()
            plugin.stop()
        return outcome, body, layers


def check(row: dict[str, Any]) -> None:
    """Assert the plugin answers ``row`` as the table says (and, with ``results_on_layer``,
    puts every object it makes on that layer)."""
    outcome, body, layers = play_and_place(row)
    assert outcome == row["outcome"], (row, body)
    if "results_on_layer" in row:
        assert layers and set(layers) == {row["results_on_layer"]}, (row["method"], layers)
    if outcome == "success":
        assert isinstance(body, dict), body
        types = {key: kind_of(value) for key, value in body.items()}
        assert types == row["result_keys"], (row["method"], types)
        if "result" in row:
            assert body == row["result"], body
        return
    assert body["code"] == row["code"], body
    if "message" in row:
        assert body["message"] == row["message"], body
    else:
        assert body["message"].startswith(row["message_startswith"]), body
