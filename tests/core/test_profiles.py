"""The profile registry, and what callers ask of a profile instead of comparing its name:
request ids and envelopes, channels, built-in methods, the miss and internal error answers."""

from __future__ import annotations

import itertools
import uuid

import pytest

from golem_core.messages import ErrorResponse, Request, Role
from golem_core.profiles import (
    GOLEM,
    JSONRPC_NDJSON,
    MCP,
    PROFILES,
    GolemProfile,
    Profile,
    get_profile,
    profile_table,
)

BOTH = pytest.mark.parametrize("profile", [GOLEM, JSONRPC_NDJSON], ids=lambda p: p.name)


def test_profiles_by_name_is_read_only() -> None:
    assert dict(PROFILES) == {"golem": GOLEM, "jsonrpc-ndjson": JSONRPC_NDJSON, "mcp": MCP}
    with pytest.raises(TypeError):
        PROFILES["other"] = GOLEM  # type: ignore[index]


def test_get_profile_names_the_known_ones() -> None:
    assert get_profile("golem") is GOLEM
    with pytest.raises(
        KeyError, match=r"unknown profile 'grpc' \(known: golem, jsonrpc-ndjson, mcp\)"
    ):
        get_profile("grpc")


def test_profile_table_refuses_two_profiles_with_one_name() -> None:
    assert profile_table(GOLEM, GOLEM)["golem"] is GOLEM
    with pytest.raises(ValueError, match="duplicate profile name 'golem'"):
        profile_table(GOLEM, GolemProfile())


def test_golem_request_ids_are_fresh_uuid4_strings() -> None:
    ids = list(itertools.islice(GOLEM.request_ids(), 50))
    assert len(set(ids)) == 50
    assert all(uuid.UUID(ident).version == 4 and str(uuid.UUID(ident)) == ident for ident in ids)


def test_jsonrpc_request_ids_count_from_one_per_source() -> None:
    first, second = JSONRPC_NDJSON.request_ids(), JSONRPC_NDJSON.request_ids()
    assert [next(first) for _ in range(3)] == [1, 2, 3]
    assert next(second) == 1


@BOTH
def test_a_request_envelope_is_a_conforming_request(profile: Profile) -> None:
    ident = next(profile.request_ids())
    payload = profile.encode_payload(profile.request(ident, "open", {"path": "a.md"}))
    message = profile.parse(payload, Role.REQUEST)
    assert isinstance(message, Request)
    assert (message.id, message.method, message.params) == (ident, "open", {"path": "a.md"})
    # The GOLEM plugin has no method table to check against; Scrybe's knows `open`.
    assert profile.check_message(message, payload) == []


def test_request_envelopes_are_written_as_the_reference_clients_write_them() -> None:
    assert GOLEM.encode_payload(GOLEM.request("a", "ping", {})) == (
        b'{"id": "a", "method": "ping", "params": {}}'
    )
    assert JSONRPC_NDJSON.encode_payload(JSONRPC_NDJSON.request(7, "state", {})) == (
        b'{"jsonrpc":"2.0","id":7,"method":"state","params":{}}'
    )


def test_channels_and_builtins() -> None:
    assert GOLEM.channels == ("main", "gh") and GOLEM.second_channel == "gh"
    assert JSONRPC_NDJSON.channels == ("scrybe",) and JSONRPC_NDJSON.second_channel is None
    assert GOLEM.builtin_methods == ("ping", "shutdown", "list_methods")
    assert JSONRPC_NDJSON.builtin_methods == ()


@BOTH
def test_default_routes_are_named_after_the_channels(profile: Profile) -> None:
    names = tuple(route.name for route in profile.default_routes({}))
    assert names == profile.channels


@BOTH
def test_miss_and_internal_errors_are_answers_the_contract_accepts(profile: Profile) -> None:
    for reply in (
        profile.miss_error(5, "open", "no recorded `open` matches"),
        profile.internal_error(5, ValueError("cannot encode")),
    ):
        payload = profile.encode_payload(reply)
        message = profile.parse(payload, Role.RESPONSE)
        assert isinstance(message, ErrorResponse) and message.id == 5
        assert profile.check_message(message, payload) == []


def test_golem_miss_is_the_dispatchers_not_found_marked_as_a_replay_miss() -> None:
    assert GOLEM.miss_error("a", "scene.info", "nothing recorded") == {
        "id": "a",
        "result": None,
        "error": {
            "code": "NOT_FOUND",
            "message": "nothing recorded",
            "details": {"method": "scene.info", "replay": "miss"},
        },
    }


@BOTH
def test_an_answer_by_hand_starts_as_a_failure_the_contract_accepts(profile: Profile) -> None:
    reply = profile.answer_by_hand(5)
    payload = profile.encode_payload(reply)
    message = profile.parse(payload, Role.RESPONSE)
    assert profile.check_message(message, payload) == []
    assert profile.outcome(None, message).failed


def test_golem_answers_by_hand_as_its_plugin_answers_a_missing_object() -> None:
    # A success envelope around the wrapped handler's error dict: the plugin's server
    # flattens error envelopes to -32000, so a domain code never arrives in one.
    reply = GOLEM.answer_by_hand("a")
    assert reply["error"] is None and reply["result"]["code"] == "OBJECT_NOT_FOUND"
    message = GOLEM.parse(GOLEM.encode_payload(reply), Role.RESPONSE)
    assert GOLEM.outcome(None, message).text == "OBJECT_NOT_FOUND (in result)"


def test_jsonrpc_miss_is_method_not_found() -> None:
    assert JSONRPC_NDJSON.miss_error(3, "x", "nothing recorded") == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32601, "message": "nothing recorded"},
    }


@BOTH
def test_internal_error_is_minus_32603(profile: Profile) -> None:
    reply = profile.internal_error(None, "boom")
    assert reply["id"] is None
    assert reply["error"]["code"] == -32603
    assert reply["error"]["message"] == "Internal error: boom"
