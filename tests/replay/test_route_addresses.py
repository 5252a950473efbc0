"""`RouteAddresses`: a recorded GOLEM route's address in a tool result reads as the same
route's address now, a whole ``HOST:PORT`` only, one to one by route; anything else naming
another address, or the port alone, still differs."""

from __future__ import annotations

import json
from typing import Any

from golem_proxy.net.addresses import Address
from golem_proxy.recording.format import RouteInfo
from golem_proxy.replay.diffing import Comparator
from golem_proxy.replay.mcp_verify import compare_tool_result
from golem_proxy.replay.route_addresses import RouteAddress, RouteAddresses

MAIN_THEN, MAIN_NOW = Address("127.0.0.1", 40429), Address("127.0.0.1", 41523)
GH_THEN, GH_NOW = Address("127.0.0.1", 40431), Address("127.0.0.1", 41525)
GUID_THEN = "11111111-1111-4111-8111-111111111111"
GUID_NOW = "22222222-2222-4222-8222-222222222222"


def _addresses() -> RouteAddresses:
    return RouteAddresses(
        [RouteAddress("main", MAIN_THEN, MAIN_NOW), RouteAddress("gh", GH_THEN, GH_NOW)]
    )


def _error(text: str) -> dict[str, Any]:
    content = [{"type": "text", "text": f"Error executing tool list_layers: {text}"}]
    return {"jsonrpc": "2.0", "id": 3, "result": {"content": content, "isError": True}}


def _compare(recorded: str, live: str, comparator: Comparator) -> list[str]:
    found = compare_tool_result(_error(recorded), _error(live), comparator, "list_layers")
    return [d.path for d in found]


def test_the_recorded_route_address_reads_as_the_routes_address_now() -> None:
    comparator = Comparator(addresses=_addresses())
    then = "Cannot connect to Rhino plugin at 127.0.0.1:40429: [Errno 111] Connection refused"
    now = "Cannot connect to Rhino plugin at 127.0.0.1:41523: [Errno 111] Connection refused"
    assert _compare(then, now, comparator) == []
    assert comparator.addresses.take_applied() == ["main"]
    assert comparator.addresses.take_applied() == []  # told once


def test_another_port_a_bare_port_or_a_longer_one_still_differs() -> None:
    comparator = Comparator(addresses=_addresses())
    then = "Cannot connect to Rhino plugin at 127.0.0.1:40429"
    for now in (
        "Cannot connect to Rhino plugin at 127.0.0.1:9876",  # not the route's port now
        "Cannot connect to Rhino plugin at 127.0.0.1:41525",  # the gh route's, not main's
        "Cannot connect to Rhino plugin at localhost:41523",  # another way to name it
    ):
        assert _compare(then, now, comparator) == ["result.content[0].text"], now
    assert _compare("port 40429 refused", "port 41523 refused", comparator) != []
    assert _compare("at 127.0.0.1:404291", "at 127.0.0.1:415231", comparator) != []
    assert _compare("at 10.127.0.0.1:40429", "at 10.127.0.0.1:41523", comparator) != []
    assert comparator.addresses.take_applied() == []


def test_each_route_reads_as_itself_and_a_text_equal_as_recorded_matches() -> None:
    comparator = Comparator(addresses=_addresses())
    then = "main at 127.0.0.1:40429, gh at 127.0.0.1:40431."
    assert _compare(then, "main at 127.0.0.1:41523, gh at 127.0.0.1:41525.", comparator) == []
    assert comparator.addresses.take_applied() == ["main", "gh"]
    crossed = "main at 127.0.0.1:41525, gh at 127.0.0.1:41523."
    assert _compare(then, crossed, comparator) != []
    assert _compare(then, then, comparator) == []  # echoed as it was: equal, nothing read
    assert comparator.addresses.take_applied() == []


def test_guids_and_addresses_in_one_text_and_inside_json_text() -> None:
    comparator = Comparator(addresses=_addresses())
    comparator.guids.bind(GUID_THEN, GUID_NOW)
    then = f"object {GUID_THEN}: Cannot connect to Rhino plugin at 127.0.0.1:40429"
    now = f"object {GUID_NOW}: Cannot connect to Rhino plugin at 127.0.0.1:41523"
    assert _compare(then, now, comparator) == []
    recorded = _error(json.dumps({"error": "unreachable", "address": "127.0.0.1:40429"}))
    live = _error(json.dumps({"error": "unreachable", "address": "127.0.0.1:41523"}))
    assert compare_tool_result(recorded, live, comparator, "list_layers") == []
    assert comparator.addresses.take_applied() == ["main"]


def test_without_addresses_the_port_is_a_difference() -> None:
    then, now = "at 127.0.0.1:40429", "at 127.0.0.1:41523"
    assert _compare(then, now, Comparator()) == ["result.content[0].text"]


def test_built_from_the_header_routes_that_listened_on_a_port() -> None:
    routes = [
        RouteInfo("main", "127.0.0.1:40429", "127.0.0.1:9876"),
        RouteInfo("gh", "127.0.0.1:40431", "127.0.0.1:9877"),
        RouteInfo("mcp", "stdio", "python server.py", profile="mcp"),
        RouteInfo("other", "unix:/tmp/s.sock", "unix:/tmp/u.sock"),
    ]
    now = {"main": MAIN_NOW, "mcp": MAIN_NOW, "other": MAIN_NOW}
    addresses = RouteAddresses.between(routes, now)
    assert addresses.to_json() == [
        {"route": "main", "recorded": "127.0.0.1:40429", "live": "127.0.0.1:41523"}
    ]
    same = RouteAddresses.between(routes[:1], {"main": MAIN_THEN})
    assert not same and same.to_live("at 127.0.0.1:40429") == ("at 127.0.0.1:40429", ())


def test_an_address_two_routes_were_recorded_at_is_read_as_neither() -> None:
    addresses = RouteAddresses(
        [RouteAddress("main", MAIN_THEN, MAIN_NOW), RouteAddress("gh", MAIN_THEN, GH_NOW)]
    )
    assert addresses.to_live("at 127.0.0.1:40429") == ("at 127.0.0.1:40429", ())


def test_an_ipv6_route_reads_in_both_ways_a_text_writes_it() -> None:
    then, now = Address("::1", 40429), Address("::1", 41523)
    addresses = RouteAddresses([RouteAddress("main", then, now)])
    assert addresses.to_live("at [::1]:40429.") == ("at [::1]:41523.", ("main",))
    assert addresses.to_live("at ::1:40429.") == ("at ::1:41523.", ("main",))
    assert addresses.to_live("at fe80::1:40429.") == ("at fe80::1:40429.", ())
