"""An id sent again while a request with it is outstanding: the rule it breaks is decided where
requests are paired, and each answer with that id is ambiguous among the requests that shared
it (placed with the oldest still waiting), until every one of them has had one."""

from __future__ import annotations

from typing import Any

from golem_core.mcp_rules import R_UNIQUE_ID
from golem_core.messages import Message, Role
from golem_core.pairing import IDS_REMEMBERED, R_ID_IN_FLIGHT, Correlator
from golem_core.profiles import GOLEM, JSONRPC_NDJSON, MCP, Profile


def request(profile: Profile, ident: Any, method: str = "state") -> Message:
    return profile.parse_decoded(
        {"jsonrpc": "2.0", "id": ident, "method": method, "params": {}}, Role.REQUEST
    )


def reply(profile: Profile, ident: Any) -> Message:
    return profile.parse_decoded({"jsonrpc": "2.0", "id": ident, "result": {}}, Role.RESPONSE)


def sent(correlator: Correlator[str], profile: Profile, ident: Any, name: str) -> Any:
    message = request(profile, ident)
    found = correlator.reused_id(message)
    correlator.add_request(message, name)
    return found.rule if found is not None else None


def answers(correlator: Correlator[str], profile: Profile, ident: Any) -> tuple[Any, ...]:
    paired = correlator.pair(reply(profile, ident))
    placed = paired.pending.context if paired.pending is not None else None
    return placed, tuple(p.context for p in paired.one_of)


def test_a_reused_id_in_flight_makes_every_answer_with_it_ambiguous_until_all_are_answered() -> (
    None
):
    for profile in (JSONRPC_NDJSON, MCP):
        correlator: Correlator[str] = Correlator(profile)
        assert sent(correlator, profile, 5, "a") is None
        assert sent(correlator, profile, 6, "other") is None
        assert sent(correlator, profile, 5, "b") is not None
        assert answers(correlator, profile, 6) == ("other", ())
        assert answers(correlator, profile, 5) == ("a", ("a", "b"))
        # One of a and b still waits, which one is not known: a third with the id joins them.
        assert sent(correlator, profile, 5, "c") is not None
        assert answers(correlator, profile, 5) == ("b", ("a", "b", "c"))
        assert answers(correlator, profile, 5) == ("c", ("a", "b", "c"))
        assert len(correlator) == 0
        # Once none waits, the id pairs plainly again.
        sent(correlator, profile, 5, "d")
        assert answers(correlator, profile, 5) == ("d", ())


def test_an_id_used_again_after_its_answer_is_a_violation_only_where_ids_are_unique() -> None:
    jsonrpc: Correlator[str] = Correlator(JSONRPC_NDJSON)
    assert sent(jsonrpc, JSONRPC_NDJSON, 1, "a") is None
    assert sent(jsonrpc, JSONRPC_NDJSON, 1, "b") == R_ID_IN_FLIGHT.id
    answers(jsonrpc, JSONRPC_NDJSON, 1)
    answers(jsonrpc, JSONRPC_NDJSON, 1)
    assert sent(jsonrpc, JSONRPC_NDJSON, 1, "c") is None  # JSON-RPC: none outstanding with it

    mcp: Correlator[str] = Correlator(MCP)
    assert sent(mcp, MCP, 1, "a") is None
    assert sent(mcp, MCP, "1", "b") is None  # "1" is not 1
    answers(mcp, MCP, 1)
    again = request(MCP, 1)
    found = mcp.reused_id(again)
    assert found is not None and found.rule == R_UNIQUE_ID.id and found.path == "$.id"
    assert found.message == "id 1 was used before by this side"


def test_a_notification_has_no_id_to_reuse() -> None:
    correlator: Correlator[str] = Correlator(MCP)
    note = MCP.parse_decoded({"jsonrpc": "2.0", "method": "tick"}, Role.REQUEST)
    assert correlator.reused_id(note) is None
    assert correlator.reused_id(note) is None


def test_the_ids_remembered_for_uniqueness_are_bounded() -> None:
    correlator: Correlator[str] = Correlator(MCP)
    for ident in range(IDS_REMEMBERED + 1):
        assert correlator.reused_id(request(MCP, ident)) is None
    assert correlator.reused_id(request(MCP, 0)) is None  # the oldest was let go
    assert correlator.reused_id(request(MCP, IDS_REMEMBERED)) is not None


def test_golem_pairs_a_reused_id_as_ambiguous_too() -> None:
    correlator: Correlator[str] = Correlator(GOLEM)
    for name in ("a", "b"):
        message = GOLEM.parse_decoded({"id": "x", "method": "ping", "params": {}}, Role.REQUEST)
        correlator.add_request(message, name)
    answer = GOLEM.parse_decoded({"id": "x", "result": {}, "error": None}, Role.RESPONSE)
    paired = correlator.pair(answer)
    assert paired.pending is not None and paired.pending.context == "a"
    assert [p.context for p in paired.one_of] == ["a", "b"]
