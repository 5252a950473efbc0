"""golem_core.messages: the shared first steps (UTF-8, JSON) and the message types."""

from __future__ import annotations

import copy
import pickle

import pytest

from golem_core.messages import (
    ABSENT,
    ErrorResponse,
    Malformed,
    MalformedKind,
    Request,
    Response,
    Role,
    RpcError,
    decode_json,
    is_json_int,
)
from golem_core.profiles import GOLEM, JSONRPC_NDJSON


def test_decode_json_valid() -> None:
    assert decode_json(b'{"a": [1, "\xc3\xa9"]}') == ({"a": [1, "é"]}, None)


def test_decode_json_invalid_utf8_names_the_offset() -> None:
    obj, bad = decode_json(b'{"a": "\xff"}')
    assert obj is None and bad is not None
    assert bad.kind is MalformedKind.INVALID_UTF8
    assert bad.detail == "invalid UTF-8 at byte 7"
    assert bad.role is None and bad.id is None and bad.obj is None


@pytest.mark.parametrize(
    "payload", [b"", b"{this is not json", b"{}{}", b"[1,]", b'{"a":1', b"nul", b"\x00"]
)
def test_decode_json_invalid_json(payload: bytes) -> None:
    obj, bad = decode_json(payload)
    assert obj is None and bad is not None
    assert bad.kind is MalformedKind.INVALID_JSON


def test_decode_json_does_not_guess_utf16() -> None:
    # json.loads(bytes) would sniff UTF-16; the reference decodes as UTF-8 first.
    _obj, bad = decode_json("{}".encode("utf-16"))
    assert bad is not None and bad.kind is MalformedKind.INVALID_UTF8


def test_decode_json_deep_nesting_is_invalid_json_not_a_crash() -> None:
    _obj, bad = decode_json(b"[" * 200_000 + b"]" * 200_000)
    assert bad is not None and bad.kind is MalformedKind.INVALID_JSON


def test_is_json_int() -> None:
    assert is_json_int(0) and is_json_int(-5) and is_json_int(2**70)
    assert not is_json_int(True) and not is_json_int(1.0) and not is_json_int("1")


def test_absent_is_falsy_and_distinct_from_none() -> None:
    assert not ABSENT
    assert ABSENT is not None
    assert repr(ABSENT) == "ABSENT"


def test_message_roles() -> None:
    assert Request.role is Role.REQUEST
    assert Response.role is Role.RESPONSE
    assert ErrorResponse.role is Role.RESPONSE
    assert RpcError(1, "m").details is ABSENT and RpcError(1, "m").data is ABSENT


@pytest.mark.parametrize(
    "payload",
    [
        b'{"id": "a", "method": "ping", "params": {"n": 1}}',
        b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"p": 1}}',
        b'{"id": "a", "result": {"ok": true}, "error": null}',
        b'{"id": "a", "result": null, "error": {"code": "X", "message": "m"}}',
        b"not json",
    ],
)
def test_messages_are_slotted_and_survive_pickle_and_copy(payload: bytes) -> None:
    # Slotted to keep a big recording's messages small; frozen slotted instances need their
    # own pickle state (a forked reader pickles what it read).
    message = JSONRPC_NDJSON.parse(payload, None)
    assert not hasattr(message, "__dict__")
    assert pickle.loads(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)) == message
    assert copy.deepcopy(message) == message


@pytest.mark.parametrize("profile", [GOLEM, JSONRPC_NDJSON], ids=lambda p: p.name)
def test_parse_keeps_the_role_on_utf8_and_json_failures(profile: object) -> None:
    from golem_core.profiles import Profile

    assert isinstance(profile, Profile)
    for role in (Role.REQUEST, Role.RESPONSE, None):
        bad = profile.parse(b"\xff", role)
        assert isinstance(bad, Malformed) and bad.kind is MalformedKind.INVALID_UTF8
        assert bad.role is role
        bad = profile.parse(b"{", role)
        assert isinstance(bad, Malformed) and bad.kind is MalformedKind.INVALID_JSON
        assert bad.role is role


def test_parse_without_role_guesses_from_method() -> None:
    assert isinstance(GOLEM.parse(b'{"id":"a","method":"ping"}', None), Request)
    assert isinstance(GOLEM.parse(b'{"id":"a","result":{},"error":null}', None), Response)
    bad = GOLEM.parse(b"[1]", None)
    assert isinstance(bad, Malformed) and bad.role is Role.RESPONSE
    assert isinstance(
        JSONRPC_NDJSON.parse(b'{"jsonrpc":"2.0","id":1,"method":"state"}', None), Request
    )
