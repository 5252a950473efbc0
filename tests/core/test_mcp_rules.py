"""The MCP layer's pure rules: a tool result's content shape and a session's order."""

from __future__ import annotations

from golem_core.mcp_rules import (
    R_CONTENT,
    R_INITIALIZE_FIRST,
    R_UNIQUE_ID,
    SessionOrder,
    content_violations,
)


def paths(found: list) -> list:
    return [(v.rule, v.path) for v in found]


def test_a_well_formed_result_has_no_violation() -> None:
    result = {
        "content": [
            {"type": "text", "text": "ok"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///a", "name": "a"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "x"}},
        ],
        "isError": False,
    }
    assert content_violations(result) == []


def test_each_broken_shape_is_named_by_its_path() -> None:
    assert paths(content_violations([])) == [(R_CONTENT.id, "$.result")]
    assert paths(content_violations({})) == [(R_CONTENT.id, "$.result.content")]
    assert paths(content_violations({"content": [], "isError": "no"})) == [
        (R_CONTENT.id, "$.result.isError")
    ]
    broken = {
        "content": [
            "text",
            {"type": "text"},
            {"type": "video"},
            {"type": "image", "data": 1, "mimeType": "image/png"},
            {"type": "resource"},
        ]
    }
    assert paths(content_violations(broken)) == [
        (R_CONTENT.id, "$.result.content[0]"),
        (R_CONTENT.id, "$.result.content[1].text"),
        (R_CONTENT.id, "$.result.content[2].type"),
        (R_CONTENT.id, "$.result.content[3].data"),
        (R_CONTENT.id, "$.result.content[4].resource"),
    ]


def test_a_flood_of_broken_blocks_is_reported_a_few_times() -> None:
    assert len(content_violations({"content": [1] * 100_000})) == 10


def test_initialize_first_and_pings_before_it() -> None:
    order = SessionOrder()
    assert order.request("c2s", "ping", 0, 0.0) == []
    assert order.request("c2s", "initialize", 1, 0.1) == []
    early = order.request("c2s", "tools/list", 2, 0.2)
    assert paths(early) == [(R_INITIALIZE_FIRST.id, "$.method")]
    assert "before `initialize` was answered" in early[0].message
    order.answered("initialize", 0.3)
    assert order.request("c2s", "tools/list", 3, 0.4) == []


def test_ids_are_unique_per_side_and_type() -> None:
    order = SessionOrder()
    order.request("c2s", "initialize", 1, 0.0)
    order.answered("initialize", 0.1)
    assert order.request("c2s", "tools/list", "1", 0.2) == []  # "1" is not 1
    assert order.request("s2c", "roots/list", 1, 0.3) == []  # the server's own ids
    again = order.request("c2s", "tools/call", 1, 0.4)
    assert paths(again) == [(R_UNIQUE_ID.id, "$.id")]


def test_a_session_taken_up_after_a_gap() -> None:
    # Its `initialize` answered before the gap: the rule goes on.
    answered = SessionOrder(initialize_sent=True, initialized_at=0.5)
    answered.gap()
    assert answered.request("c2s", "tools/call", 7, 1.0) == []
    # Not known: silent until an `initialize` is seen, then followed again.
    unknown = SessionOrder(known=False)
    assert unknown.request("c2s", "tools/call", 1, 1.0) == []
    assert unknown.request("c2s", "initialize", 2, 1.1) == []
    assert paths(unknown.request("c2s", "tools/list", 3, 1.2)) == [
        (R_INITIALIZE_FIRST.id, "$.method")
    ]
    # Never initialized before, nothing unseen: flagged; something crossed unseen: silent.
    never = SessionOrder()
    assert paths(never.request("c2s", "tools/call", 1, 1.0)) == [
        (R_INITIALIZE_FIRST.id, "$.method")
    ]
    never.gap()
    assert never.request("c2s", "tools/call", 2, 1.1) == []
