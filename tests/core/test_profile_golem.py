"""The `golem` profile: envelope typing, contract rules, replies and byte-exact encoding."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest

from golem_core.contract import Severity
from golem_core.decoders import LengthPrefixedDecoder
from golem_core.framing import FrameError, FrameErrorKind
from golem_core.messages import (
    ABSENT,
    ErrorResponse,
    Malformed,
    MalformedKind,
    Message,
    Request,
    Response,
    Role,
    RpcError,
)
from golem_core.profiles import GOLEM, get_profile

UUID = "550e8400-e29b-41d4-a716-446655440000"
REQ = GOLEM.parse(b'{"id":"a","method":"ping","params":{}}', Role.REQUEST)


def request(payload: bytes) -> Message:
    return GOLEM.parse(payload, Role.REQUEST)


def response(payload: bytes) -> Message:
    return GOLEM.parse(payload, Role.RESPONSE)


def rule_ids(message: Message, payload: bytes = b"") -> list[str]:
    return [v.rule for v in GOLEM.check_message(message, payload)]


def test_spec_request_example() -> None:
    obj = {
        "id": UUID,
        "method": "creation.create_box",
        "params": {"corner_x": 0.0, "width": 100.0},
    }
    message = request(json.dumps(obj).encode())
    assert isinstance(message, Request)
    assert (message.id, message.method, message.params, message.obj) == (
        UUID,
        "creation.create_box",
        obj["params"],
        obj,
    )
    assert GOLEM.check_message(message) == []


def test_params_absent_is_kept_absent() -> None:
    message = request(b'{"id":1,"method":"ping"}')
    assert isinstance(message, Request)
    assert message.params is ABSENT and message.id == 1


def test_success_and_error_responses() -> None:
    ok = response(b'{"id":"a","result":{"alive":true},"error":null}')
    assert isinstance(ok, Response) and ok.result == {"alive": True}
    err = response(
        b'{"id":"a","result":null,"error":{"code":"INVALID_PARAMS","message":"m",'
        b'"details":{"method":"x"}}}'
    )
    assert isinstance(err, ErrorResponse)
    assert err.error == RpcError("INVALID_PARAMS", "m", {"method": "x"})
    assert GOLEM.check_message(ok) == [] and GOLEM.check_message(err) == []
    null_id = response(b'{"id":null,"result":null,"error":{"code":-32603,"message":"m"}}')
    assert isinstance(null_id, ErrorResponse) and null_id.id is None


# Every MalformedKind the golem profile produces, with the exact payload.
MALFORMED = [
    (Role.REQUEST, b'{"id":"\xff"}', MalformedKind.INVALID_UTF8, None),
    (Role.REQUEST, b"{this is not json", MalformedKind.INVALID_JSON, None),
    (Role.REQUEST, b"", MalformedKind.INVALID_JSON, None),
    (Role.REQUEST, b'["id","method"]', MalformedKind.NOT_AN_OBJECT, None),
    (Role.REQUEST, b'{"method":"ping","params":{}}', MalformedKind.MISSING_ID, None),
    (Role.REQUEST, b'{"id":null,"method":"ping"}', MalformedKind.INVALID_ID, None),
    (Role.REQUEST, b'{"id":1.5,"method":"ping"}', MalformedKind.INVALID_ID, None),
    (Role.REQUEST, b'{"id":true,"method":"ping"}', MalformedKind.INVALID_ID, None),
    (Role.REQUEST, b'{"id":"a","params":{}}', MalformedKind.MISSING_METHOD, "a"),
    (Role.REQUEST, b'{"id":7,"method":["ping"]}', MalformedKind.INVALID_METHOD, 7),
    (Role.REQUEST, b'{"id":"a","method":null}', MalformedKind.INVALID_METHOD, "a"),
    (Role.RESPONSE, b"42", MalformedKind.NOT_AN_OBJECT, None),
    (Role.RESPONSE, b'{"result":{},"error":null}', MalformedKind.MISSING_ID, None),
    (Role.RESPONSE, b'{"id":{},"result":{},"error":null}', MalformedKind.INVALID_ID, None),
    (
        Role.RESPONSE,
        b'{"id":"a","result":{},"error":{"code":"TIMEOUT","message":"m"}}',
        MalformedKind.BOTH_RESULT_AND_ERROR,
        "a",
    ),
    (
        Role.RESPONSE,
        b'{"id":"a","result":null,"error":null}',
        MalformedKind.NEITHER_RESULT_NOR_ERROR,
        "a",
    ),
    (Role.RESPONSE, b'{"id":"a"}', MalformedKind.NEITHER_RESULT_NOR_ERROR, "a"),
    (
        Role.RESPONSE,
        b'{"id":"a","result":null,"error":"boom"}',
        MalformedKind.INVALID_ERROR_OBJECT,
        "a",
    ),
    (Role.RESPONSE, b'{"id":"a","error":{"message":"m"}}', MalformedKind.INVALID_ERROR_OBJECT, "a"),
    (
        Role.RESPONSE,
        b'{"id":"a","error":{"code":true,"message":"m"}}',
        MalformedKind.INVALID_ERROR_OBJECT,
        "a",
    ),
    (
        Role.RESPONSE,
        b'{"id":"a","error":{"code":1.5,"message":"m"}}',
        MalformedKind.INVALID_ERROR_OBJECT,
        "a",
    ),
    (Role.RESPONSE, b'{"id":"a","error":{"code":"X"}}', MalformedKind.INVALID_ERROR_OBJECT, "a"),
    (
        Role.RESPONSE,
        b'{"id":"a","error":{"code":"X","message":3}}',
        MalformedKind.INVALID_ERROR_OBJECT,
        "a",
    ),
]


@pytest.mark.parametrize("role,payload,kind,ident", MALFORMED)
def test_malformed_kinds(role: Role, payload: bytes, kind: MalformedKind, ident: Any) -> None:
    message = GOLEM.parse(payload, role)
    assert isinstance(message, Malformed)
    assert message.kind is kind
    assert message.role is role
    assert message.id == ident
    assert GOLEM.malformed_outcome(kind) == kind.value
    violations = GOLEM.check_message(message, payload)
    assert violations[0].rule == "golem.message.malformed"
    assert violations[0].outcome == kind.value
    assert violations[0].severity is Severity.ERROR


def test_golem_never_produces_jsonrpc_only_kinds() -> None:
    # No version member; a non-object `params` is tolerated (a warning rule), not malformed.
    assert isinstance(request(b'{"jsonrpc":"1.0","id":"a","method":"m","params":[1]}'), Request)


# Each contract rule is triggered by a minimal message and not by a conforming one.

CONFORMING_REQUEST = b'{"id":"a","method":"ping","params":{}}'
CONFORMING_SUCCESS = b'{"id":"a","result":{},"error":null}'
CONFORMING_ERROR = b'{"id":"a","result":null,"error":{"code":"TIMEOUT","message":"m","details":{}}}'


@pytest.mark.parametrize(
    "rule,role,payload",
    [
        ("golem.request.params-object", Role.REQUEST, b'{"id":"a","method":"ping"}'),
        ("golem.request.params-object", Role.REQUEST, b'{"id":"a","method":"ping","params":[]}'),
        ("golem.response.explicit-null-error", Role.RESPONSE, b'{"id":"a","result":{}}'),
        (
            "golem.response.explicit-null-result",
            Role.RESPONSE,
            b'{"id":"a","error":{"code":"TIMEOUT","message":"m"}}',
        ),
        ("golem.response.result-object", Role.RESPONSE, b'{"id":"a","result":[1],"error":null}'),
        (
            "golem.error.unknown-code",
            Role.RESPONSE,
            b'{"id":"a","result":null,"error":{"code":"NOPE","message":"m"}}',
        ),
        (
            "golem.error.unknown-code",
            Role.RESPONSE,
            b'{"id":"a","result":null,"error":{"code":-32700,"message":"m"}}',
        ),
        (
            "golem.error.ok-code",
            Role.RESPONSE,
            b'{"id":"a","result":null,"error":{"code":"OK","message":"m"}}',
        ),
        (
            "golem.error.details-object",
            Role.RESPONSE,
            b'{"id":"a","result":null,"error":{"code":"TIMEOUT","message":"m","details":[1]}}',
        ),
        (
            "golem.envelope.unknown-member",
            Role.REQUEST,
            b'{"id":"a","method":"ping","params":{},"jsonrpc":"2.0"}',
        ),
        (
            "golem.envelope.unknown-member",
            Role.RESPONSE,
            b'{"id":"a","result":{},"error":null,"x":1}',
        ),
        (
            "golem.envelope.unknown-member",
            Role.RESPONSE,
            b'{"id":"a","result":null,"error":{"code":"TIMEOUT","message":"m"},"x":1}',
        ),
        (
            "golem.encoding.ascii-escaped",
            Role.REQUEST,
            b'{"id":"a","method":"ping","params":{"name":"caf\\u00e9"}}',
        ),
        (
            "golem.encoding.ascii-escaped",
            Role.REQUEST,
            b'{"id":"a","method":"ping","params":{"name":"\\u65e5\\u672c"}}',
        ),
        ("golem.message.malformed", Role.REQUEST, b"{this is not json"),
    ],
)
def test_rule_triggered(rule: str, role: Role, payload: bytes) -> None:
    declared = {known.id: known for known in GOLEM.rules}
    assert rule in declared
    message = GOLEM.parse(payload, role)
    violations = GOLEM.check_message(message, payload)
    assert rule in [v.rule for v in violations]
    found = next(v for v in violations if v.rule == rule)
    assert found.severity is declared[rule].severity


def test_unknown_members_past_ten_are_counted_in_one_violation() -> None:
    """A request of 100,000 unexpected members is eleven violations to publish, not 100,000."""
    members = ",".join(f'"k{n}":0' for n in range(100_000))
    payload = ('{"id":"a","method":"ping","params":{},' + members + "}").encode()
    violations = GOLEM.check_message(GOLEM.parse(payload, Role.REQUEST), payload)
    unknown = [v for v in violations if v.rule == "golem.envelope.unknown-member"]
    assert [v.message for v in unknown[:2]] == ["unexpected member `k0`", "unexpected member `k1`"]
    assert len(unknown) == 11
    assert (unknown[-1].message, unknown[-1].path) == ("99990 more unexpected members", "$")


@pytest.mark.parametrize(
    "role,payload",
    [
        (Role.REQUEST, CONFORMING_REQUEST),
        (Role.REQUEST, '{"id":"a","method":"ping","params":{"name":"café 日本"}}'.encode()),
        (Role.REQUEST, b'{"id":"a","method":"ping","params":{"s":"\\u0041\\n"}}'),
        (Role.RESPONSE, CONFORMING_SUCCESS),
        (Role.RESPONSE, CONFORMING_ERROR),
        (Role.RESPONSE, b'{"id":"a","result":null,"error":{"code":-32601,"message":"m"}}'),
        (Role.RESPONSE, b'{"id":"a","result":null,"error":{"code":-32000,"message":"m"}}'),
        (
            Role.RESPONSE,
            b'{"id":"a","result":null,"error":{"code":"TIMEOUT","message":"m","details":null}}',
        ),
    ],
)
def test_conforming_messages_trigger_no_rule(role: Role, payload: bytes) -> None:
    message = GOLEM.parse(payload, role)
    assert GOLEM.check_message(message, payload) == []
    if role is Role.RESPONSE:
        assert GOLEM.check_exchange(REQ, message) == []


def exchange_rules(request_payload: bytes, response_payload: bytes) -> list[str]:
    return [
        v.rule for v in GOLEM.check_exchange(request(request_payload), response(response_payload))
    ]


def test_id_echoed_rule() -> None:
    assert exchange_rules(CONFORMING_REQUEST, CONFORMING_SUCCESS) == []
    assert exchange_rules(CONFORMING_REQUEST, b'{"id":"b","result":{},"error":null}') == [
        "golem.exchange.id-echoed"
    ]
    # Same value, different JSON type: not echoed.
    assert exchange_rules(b'{"id":1,"method":"ping"}', b'{"id":"1","result":{},"error":null}') == [
        "golem.exchange.id-echoed"
    ]
    assert exchange_rules(b'{"id":1,"method":"ping"}', b'{"id":1,"result":{},"error":null}') == []


def test_null_id_rule() -> None:
    null_reply = b'{"id":null,"result":null,"error":{"code":-32603,"message":"m"}}'
    assert exchange_rules(CONFORMING_REQUEST, null_reply) == ["golem.exchange.null-id"]
    # A null id is the documented answer to a request that could not be parsed at all.
    assert exchange_rules(b"{this is not json", null_reply) == []


def test_exchange_skips_responses_whose_id_is_already_malformed() -> None:
    assert exchange_rules(CONFORMING_REQUEST, b'{"result":{},"error":null}') == []
    assert exchange_rules(CONFORMING_REQUEST, b'{"id":[1],"result":{},"error":null}') == []


@pytest.mark.parametrize("garbage", [b"{this is not json", b"\xff\xfe", b"[1,2]", b'"a"'])
def test_exchange_does_not_invent_a_null_id_for_unreadable_responses(garbage: bytes) -> None:
    # The id could not be read at all; the malformed rule covers it, not "null id".
    assert exchange_rules(CONFORMING_REQUEST, garbage) == []


def test_frame_violations() -> None:
    oversized = FrameError(
        FrameErrorKind.OVERSIZED, "too big", b"\x04\x00\x00\x01", True, 2**26 + 1
    )
    truncated = FrameError(FrameErrorKind.TRUNCATED, "eof", b"\0\0", False)
    v = GOLEM.frame_violation(oversized)
    assert (v.rule, v.outcome, v.severity) == ("golem.frame.oversized", "oversized", Severity.ERROR)
    v = GOLEM.frame_violation(truncated)
    assert (v.rule, v.outcome) == ("golem.frame.truncated", "truncated")
    assert GOLEM.frame_error_outcome(FrameErrorKind.OVERSIZED) == "oversized"


def test_default_decoder_is_length_prefixed_with_the_64_mib_cap() -> None:
    decoder = GOLEM.new_decoder()
    assert isinstance(decoder, LengthPrefixedDecoder)
    assert decoder.max_payload == 67_108_864
    decoder.receive_data(struct.pack("!I", 67_108_865))
    event = decoder.next_event()
    assert isinstance(event, FrameError) and event.kind is FrameErrorKind.OVERSIZED
    assert get_profile("golem") is GOLEM
    with pytest.raises(KeyError, match="known: golem, jsonrpc-ndjson"):
        get_profile("nope")


def test_reply_envelopes_match_the_spec() -> None:
    assert GOLEM.success("x", {"alive": True}) == {
        "id": "x",
        "result": {"alive": True},
        "error": None,
    }
    assert GOLEM.method_not_found(UUID, "creation.create_hexagon") == {
        "id": UUID,
        "result": None,
        "error": {"code": -32601, "message": "Method not found: creation.create_hexagon"},
    }
    assert GOLEM.error("x", "INVALID_PARAMS", "m", {"method": "b"}) == {
        "id": "x",
        "result": None,
        "error": {"code": "INVALID_PARAMS", "message": "m", "details": {"method": "b"}},
    }


def test_unparseable_request_answers_internal_error_with_the_readable_id() -> None:
    bad = request(b'{"id":"a","params":{}}')
    assert isinstance(bad, Malformed)
    reply = GOLEM.unparseable_request(bad)
    assert reply is not None
    assert reply["id"] == "a" and reply["result"] is None and reply["error"]["code"] == -32603
    garbage = request(b"{this is not json")
    assert isinstance(garbage, Malformed)
    reply = GOLEM.unparseable_request(garbage)
    assert reply is not None and reply["id"] is None and reply["error"]["code"] == -32603


def test_internal_error_envelope() -> None:
    assert GOLEM.internal_error("a", RuntimeError("boom")) == {
        "id": "a",
        "result": None,
        "error": {"code": -32603, "message": "Internal error: boom"},
    }
    reply = GOLEM.internal_error(None, "bad id", {"stage": "encode"})
    assert reply["id"] is None and reply["error"]["details"] == {"stage": "encode"}


def test_correlation_and_helpers() -> None:
    one = response(b'{"id":1,"result":{},"error":null}')
    text_one = response(b'{"id":"1","result":{},"error":null}')
    assert GOLEM.correlation_key(one) != GOLEM.correlation_key(text_one)
    assert GOLEM.correlation_key(response(b'{"id":null,"result":{},"error":null}')) is None
    assert GOLEM.with_id({"id": "old", "result": {}}, "new") == {"id": "new", "result": {}}
    assert GOLEM.describe(one) == "ok"
    assert GOLEM.describe(REQ) == "request"
    assert (
        GOLEM.describe(response(b'{"id":1,"error":{"code":"TIMEOUT","message":"m"}}')) == "TIMEOUT"
    )
    assert GOLEM.describe(response(b'{"id":1,"error":{"code":-32000,"message":"m"}}')) == (
        "APPLICATION_ERROR"
    )
    assert GOLEM.describe(response(b"[]")) == "malformed:not-an-object"
    assert GOLEM.method_of(REQ) == "ping"
    assert GOLEM.method_of(request(b'{"method":"m"}')) == "m"
    assert GOLEM.method_of(one) is None


def reference_frame(obj: Any) -> bytes:
    p = json.dumps(obj, ensure_ascii=False).encode("utf-8")
    return struct.pack("!I", len(p)) + p


@pytest.mark.parametrize(
    "obj",
    [
        {},
        {"id": UUID, "method": "creation.create_box", "params": {"width": 100.0, "depth": 50}},
        {"id": "a", "result": {"name": "café"}, "error": None},
        {"id": "b", "method": "scene.rename", "params": {"name": "日本"}},
        {
            "id": "c",
            "result": {"emoji": "🦀 🎉", "mixed": ["é", 1, None, True, 2.5]},
            "error": None,
        },
        {"id": 1, "result": None, "error": {"code": "TIMEOUT", "message": "ü", "details": {}}},
    ],
)
def test_encode_matches_the_spec_reference_snippet(obj: Any) -> None:
    assert GOLEM.encode(obj) == reference_frame(obj)
    assert GOLEM.frame_payload(b"xyz") == b"\x00\x00\x00\x03xyz"


def test_golem_types_by_direction_a_method_in_a_reply_does_not_make_it_a_request() -> None:
    # GOLEM servers never ask: every server frame is a response, whatever its members.
    assert not GOLEM.servers_send_requests
    message = GOLEM.parse(b'{"id":"a","method":"ping"}', Role.RESPONSE)
    assert message.role is Role.RESPONSE
    assert GOLEM.parse(b'{"id":"a","result":{},"error":null}', Role.REQUEST).role is Role.REQUEST
