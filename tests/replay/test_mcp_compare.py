"""How `mcp-verify` compares a tool result: inside the JSON text a tool returns, GUID-aware,
a recorded GOLEM route's address read as the route's now (said only of a result that
matched), and a recorded GUID in a later call's arguments sent as the live one."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import trio

from golem_core.profiles import get_profile
from golem_proxy.analysis.two_layers import read_tool_calls
from golem_proxy.events import Direction
from golem_proxy.net.addresses import Address
from golem_proxy.recording.format import RouteInfo
from golem_proxy.replay.diffing import Comparator
from golem_proxy.replay.matching import IgnoreRules
from golem_proxy.replay.mcp_child import McpChild
from golem_proxy.replay.mcp_script import ClientStep, McpScript
from golem_proxy.replay.mcp_verify import (
    McpCheck,
    compare_tool_result,
    outgoing_payload,
    play,
)
from golem_proxy.replay.route_addresses import RouteAddress, RouteAddresses
from golem_proxy.replay.tool_call_diff import compare_sessions
from tests.support.trace_builder import TapSimulator, write_recording

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


RECORDED_AT = Address("127.0.0.1", 40429)
NOW_AT = Address("127.0.0.1", 40555)
CALL = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_layers"}}
ANSWER_SCRIPT = """
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    texts = [f"Cannot connect to Rhino plugin at {sys.argv[1]}: refused", sys.argv[2]]
    content = [{"type": "text", "text": text} for text in texts]
    answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"content": content}}
    print(json.dumps(answer), flush=True)
"""
"""A stand-in for a server build: answers every request with a text naming the address
given as its first argument, then its second argument as a text of its own."""


def _naming(address: Address, then: str) -> dict[str, Any]:
    texts = [f"Cannot connect to Rhino plugin at {address}: refused", then]
    content = [{"type": "text", "text": text} for text in texts]
    return {"jsonrpc": "2.0", "id": 3, "result": {"content": content}}


def _comparator() -> Comparator:
    return Comparator(addresses=RouteAddresses([RouteAddress("main", RECORDED_AT, NOW_AT)]))


def _played(then_now: str) -> McpCheck:
    """`play` of one tool call answered with `_naming` (RECORDED_AT, "A") when recorded, to a
    build that names NOW_AT and then says ``then_now``."""
    step = ClientStep(
        json.dumps(CALL).encode(),
        0,
        "tools/call",
        3,
        CALL["params"],
        answer=_naming(RECORDED_AT, "A"),
    )

    async def main() -> McpCheck:
        argv = [sys.executable, "-c", ANSWER_SCRIPT, str(NOW_AT), then_now]
        child = McpChild(argv, dict(os.environ))
        async with trio.open_nursery() as nursery:
            await child.start(nursery)
            result = await play(McpScript([step]), child, _comparator(), numbers={0: 1}, timeout=20)
            await child.stop(5)
            nursery.cancel_scope.cancel()
        (check,) = result.checks
        return check

    return trio.run(main)


def test_a_result_that_differs_is_never_listed_as_matched_through_a_route_address() -> None:
    check = _played("B")
    assert [d.path for d in check.differences] == ["result.content[1].text"]
    assert check.route_addresses == []
    assert "route_addresses" not in check.to_json()
    matched = _played("A")
    assert matched.ok and matched.route_addresses == ["main"]


def _session(path: Path, answer: dict[str, Any]) -> Path:
    """A `golem-proxy mcp` recording through the real tap of `CALL` answered ``answer``."""
    mcp = get_profile("mcp")
    tap = TapSimulator(mcp)
    tap.open(1, route="mcp")
    tap.send(1, Direction.C2S, mcp.encode(CALL))
    tap.send(1, Direction.S2C, mcp.encode(answer))
    tap.close(1)
    path.write_bytes(
        write_recording(tap.events, routes=[RouteInfo("mcp", "stdio", "stdio", profile="mcp")])
    )
    return path


def test_two_sessions_list_only_matching_calls_as_matched_through_a_route_address(
    tmp_path: Path,
) -> None:
    recorded = read_tool_calls(str(_session(tmp_path / "a.jsonl", _naming(RECORDED_AT, "A"))))
    differs = read_tool_calls(str(_session(tmp_path / "b.jsonl", _naming(NOW_AT, "B"))))
    same = read_tool_calls(str(_session(tmp_path / "c.jsonl", _naming(NOW_AT, "A"))))
    (check,) = compare_sessions(recorded, differs, _comparator())
    assert check.differences and check.route_addresses == []
    (matched,) = compare_sessions(recorded, same, _comparator())
    assert matched.ok and matched.route_addresses == ["main"]
