"""How `mcp-verify` compares a tool result: inside the JSON text a tool returns, GUID-aware,
and a recorded GUID in a later call's arguments sent as the live one."""

from __future__ import annotations

import json
from typing import Any

from golem_proxy.replay.diffing import Comparator
from golem_proxy.replay.matching import IgnoreRules
from golem_proxy.replay.mcp_script import ClientStep
from golem_proxy.replay.mcp_verify import compare_tool_result, outgoing_payload

RECORDED_GUID = "11111111-1111-4111-8111-111111111111"
LIVE_GUID = "22222222-2222-4222-8222-222222222222"


def envelope(text: str, ident: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": text}]}}


def test_a_difference_inside_json_text_names_the_field() -> None:
    recorded = envelope(json.dumps({"layers": [{"name": "A"}, {"name": "B"}]}))
    live = envelope(json.dumps({"layers": [{"name": "A"}, {"name": "C"}]}), ident=9)
    found = compare_tool_result(recorded, live, Comparator(), "list_layers")
    assert [d.path for d in found] == ["result.content[0].text.layers[1].name"]


def test_the_same_json_written_differently_is_a_difference_of_the_text() -> None:
    recorded = envelope('{"a": 1}')
    live = envelope('{"a":1}')
    found = compare_tool_result(recorded, live, Comparator(), "t")
    assert [d.path for d in found] == ["result.content[0].text"]


def test_plain_text_differs_as_text() -> None:
    found = compare_tool_result(envelope("ok"), envelope("no"), Comparator(), "t")
    assert [(d.path, d.recorded, d.live) for d in found] == [("result.content[0].text", "ok", "no")]


def test_guids_inside_json_text_are_mapped_and_used_in_later_arguments() -> None:
    comparator = Comparator()
    recorded = envelope(json.dumps({"id": RECORDED_GUID}))
    live = envelope(json.dumps({"id": LIVE_GUID}))
    assert compare_tool_result(recorded, live, comparator, "create_box") == []
    call = {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": "move", "arguments": {"object_id": RECORDED_GUID}},
    }
    payload = json.dumps(call).encode()
    step = ClientStep(payload, 3, "tools/call", 4, call["params"])
    sent = json.loads(outgoing_payload(step, comparator))
    assert sent["params"]["arguments"]["object_id"] == LIVE_GUID
    assert sent["id"] == 4
    untouched = ClientStep(b'{"id":5}', 4, "tools/call", 5, {"name": "x"})
    assert outgoing_payload(untouched, comparator) == b'{"id":5}'


def test_ignore_rules_reach_into_json_text_for_one_tool() -> None:
    comparator = Comparator(IgnoreRules.parse(["list_layers:result.content[0].text.stamp"]))
    recorded = envelope(json.dumps({"stamp": 1, "n": 2}))
    live = envelope(json.dumps({"stamp": 5, "n": 2}))
    assert compare_tool_result(recorded, live, comparator, "list_layers") == []
    assert compare_tool_result(recorded, live, comparator, "other") != []
