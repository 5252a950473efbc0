"""Paths, ignore rules, GUID maps, canonical keys, the tolerant comparator and the index."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem_proxy.recording.format import read_recording
from golem_proxy.replay.diffing import Comparator
from golem_proxy.replay.index import load_exchanges
from golem_proxy.replay.matching import (
    GuidMap,
    IgnoreRule,
    IgnoreRules,
    Keyer,
    MatchMode,
    format_path,
    parse_path,
)
from tests.support.traces import TraceBuilder

A = "11111111-1111-4111-8111-111111111111"
B = "22222222-2222-4222-8222-222222222222"
L1 = "aaaaaaaa-0000-4000-8000-000000000001"
L2 = "aaaaaaaa-0000-4000-8000-000000000002"


def test_paths_parse_and_print() -> None:
    assert parse_path("params.guids[0]") == ("params", "guids", 0)
    assert parse_path("$.result.objects[*].guid") == ("result", "objects", "*", "guid")
    assert format_path(("params", "guids", 0)) == "params.guids[0]"
    assert IgnoreRule.parse("scene.create_layer:params.name") == IgnoreRule(
        ("params", "name"), "scene.create_layer"
    )
    with pytest.raises(ValueError):
        parse_path("")


def test_ignore_rules_drop_paths_per_method_without_mutating() -> None:
    rules = IgnoreRules.parse(["result.objects[*].name", "scene.create_layer:params.name"])
    original = {"result": {"objects": [{"name": "a", "guid": A}, {"name": "b"}]}}
    assert rules.strip(original, None) == {"result": {"objects": [{"guid": A}, {}]}}
    assert original["result"]["objects"][0]["name"] == "a"
    params = {"params": {"name": "x", "color": 1}}
    assert rules.strip(params, "scene.create_layer") == {"params": {"color": 1}}
    assert rules.strip(params, "scene.delete_layer") == params


def test_keys_normalise_order_numbers_ignores_and_guids() -> None:
    keyer = Keyer(MatchMode.METHOD_PARAMS, IgnoreRules.parse(["params.name"]))
    guids = GuidMap()
    guids.bind(A, L1)
    recorded = keyer.key("main", "m", {"guid": A, "w": 40, "name": "x"})
    live = keyer.key("main", "m", {"name": "y", "w": 40, "guid": L1}, guids)
    assert recorded == live
    assert keyer.key("gh", "m", {"guid": A, "w": 40}) != recorded


def test_guid_map_is_one_to_one_and_learns_by_path() -> None:
    guids = GuidMap()
    learned = guids.learn({"guid": A, "list": [B, "x"]}, {"guid": L1, "list": [L2, "x"]})
    assert learned == 2 and guids.to_live({"g": [A, B]}) == {"g": [L1, L2]}
    assert not guids.bind(A, L2)  # A already stands for L1
    assert guids.to_recorded(L2) == B


def test_comparator_tolerances_guids_and_messages() -> None:
    comparator = Comparator(IgnoreRules.parse(["result.time"]), float_tolerance=0.01)
    recorded = {"result": {"guid": A, "size": 1.0, "time": 5, "msg": f"moved {A}"}, "error": None}
    live = {"result": {"guid": L1, "size": 1.005, "time": 9, "msg": f"moved {L1}"}, "error": None}
    assert comparator.compare(recorded, live) == []
    changed = {"result": {"guid": L2, "size": 2, "extra": True, "msg": f"moved {L1}"}}
    found = comparator.compare(recorded, {**changed, "error": None})
    described = [d.describe() for d in found]
    assert described == [
        f"result.guid ('{A}' vs '{L2}')",
        "result.size (1.0 vs 2)",
        "result.extra (absent vs true)",
    ]
    assert [d.kind for d in found] == ["changed", "changed", "added"]
    assert Comparator().compare({"a": True}, {"a": 1})[0].path == "a"


def test_the_fast_loader_reads_what_the_reference_reader_reads(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceBuilder.create(str(path)) as trace:
        trace.call("ping", {}, {"alive": True})
        trace.raw_exchange(
            b"{bad json", b'{"id": null, "result": null, "error": {"code": -32603, "message": "x"}}'
        )
        trace.call("scene.create_layer", {"name": "line\nbreak \u00e9"}, {"ok": True})
        trace.reconnect()
        trace.call("ping", {}, {"alive": True}, route="gh")
    # The malformed request and the payload with a newline are stored base64 (slow path).
    lines = path.read_bytes().splitlines(keepends=True)
    fast = load_exchanges(str(path))
    reference = read_recording(str(path)).exchanges()
    assert [(e.method, e.request, e.response, e.route) for e in fast.exchanges] == [
        (e.method, e.request.payload, e.response.payload, e.route) for e in reference
    ]
    assert [e.request_type for e in fast.exchanges] == [
        "request",
        "malformed",
        "request",
        "request",
    ]
    assert any(b'"raw":' in line for line in lines)
    # Truncated last line: ignored, noted.
    path.write_bytes(b"".join(lines) + b'{"seq":99,"t":1.0,"kind":"fra')
    assert load_exchanges(str(path)).truncated_tail
