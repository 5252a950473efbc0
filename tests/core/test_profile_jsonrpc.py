"""The `jsonrpc-ndjson` profile against the Scrybe 0.6 contract: envelope rules in validation
order, the contract's outcome names, the request side and the method table checks."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from golem_core.decoders import LineDecoder
from golem_core.framing import FrameError, FrameErrorKind
from golem_core.messages import (
    ErrorResponse,
    Malformed,
    MalformedKind,
    Message,
    Notification,
    Request,
    Response,
    Role,
    RpcError,
)
from golem_core.pairing import Correlator
from golem_core.profiles import JSONRPC_NDJSON as J

REQUEST = J.parse(b'{"jsonrpc":"2.0","id":1,"method":"state","params":{}}', Role.REQUEST)


def response(payload: bytes) -> Message:
    return J.parse(payload, Role.RESPONSE)


def request(payload: bytes) -> Message:
    return J.parse(payload, Role.REQUEST)


def outcome(payload: bytes, req: Optional[Message] = REQUEST) -> str:
    return J.client_outcome(req, response(payload))


PINNED = [
    # (payload, kind or None for a well-formed message, client outcome, rule id)
    (b"{this is not json", MalformedKind.INVALID_JSON, "InvalidJson", "jsonrpc.response.json"),
    (
        b'{"jsonrpc":"2.0","id":42,"result":{}}',
        None,
        "MismatchedResponseId { expected: 1, actual: 42 }",
        "jsonrpc.exchange.id-echoed",
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":-32000,"message":"x"}}',
        MalformedKind.BOTH_RESULT_AND_ERROR,
        "InvalidEnvelope(BothResultAndError)",
        "jsonrpc.response.result-xor-error",
    ),
    (
        b'{"id":1,"result":{}}',
        MalformedKind.WRONG_VERSION,
        "InvalidEnvelope(WrongVersion)",
        "jsonrpc.response.version",
    ),
    (
        b'{"jsonrpc":"1.0","id":1,"result":{}}',
        MalformedKind.WRONG_VERSION,
        "InvalidEnvelope(WrongVersion)",
        "jsonrpc.response.version",
    ),
    (
        b'{"jsonrpc":"2.0","id":1}',
        MalformedKind.NEITHER_RESULT_NOR_ERROR,
        "InvalidEnvelope(NeitherResultNorError)",
        "jsonrpc.response.result-xor-error",
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"error":"x"}',
        MalformedKind.INVALID_ERROR_OBJECT,
        "InvalidEnvelope(InvalidErrorObject)",
        "jsonrpc.response.error-object",
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"result":"\xff"}',
        MalformedKind.INVALID_UTF8,
        "InvalidUtf8",
        "jsonrpc.response.utf8",
    ),
    (
        b'{"jsonrpc":"2.0","result":{}}',
        MalformedKind.MISSING_ID,
        "InvalidEnvelope(MissingId)",
        "jsonrpc.response.id",
    ),
]


@pytest.mark.parametrize("payload,kind,expected,rule", PINNED)
def test_pinned_malformed_reply_examples(
    payload: bytes, kind: Optional[MalformedKind], expected: str, rule: str
) -> None:
    message = response(payload)
    assert J.client_outcome(REQUEST, message) == expected
    rules = [v.rule for v in J.check_message(message)] + [
        v.rule for v in J.check_exchange(REQUEST, message)
    ]
    assert rule in rules
    if kind is None:
        assert not isinstance(message, Malformed)
        (mismatch,) = [v for v in J.check_exchange(REQUEST, message) if v.rule == rule]
        assert mismatch.outcome == expected
    else:
        assert isinstance(message, Malformed) and message.kind is kind
        assert J.malformed_outcome(kind) == expected
        violation = J.check_message(message)[0]
        assert (violation.rule, violation.outcome) == (rule, expected)


def test_valid_in_band_error_is_remote_with_code_and_message_intact() -> None:
    message = response(
        b'{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"not open","data":{"p":1}}}'
    )
    assert isinstance(message, ErrorResponse)
    assert message.error == RpcError(-32001, "not open", data={"p": 1})
    assert J.client_outcome(REQUEST, message) == "Remote(RpcError { code: -32001 })"
    assert J.check_message(message) == []
    read = request(b'{"jsonrpc":"2.0","id":1,"method":"read","params":{"path":"a"}}')
    assert J.check_exchange(read, message) == []
    # `state` lists no application code: a contract warning, the outcome is still Remote.
    assert [v.rule for v in J.check_exchange(REQUEST, message)] == ["jsonrpc.error.code-for-method"]
    assert J.describe(message) == "ERR_TAB_NOT_OPEN"


def test_success_is_ok() -> None:
    message = response(b'{"jsonrpc":"2.0","id":1,"result":{"x":1}}')
    assert isinstance(message, Response)
    assert J.client_outcome(REQUEST, message) == "Ok"
    assert J.client_outcome(None, message) == "Ok"


def test_a_line_of_16_mib_with_its_newline_passes_and_one_byte_more_is_frame_too_large() -> None:
    decoder = J.new_decoder()
    assert decoder.max_payload == 16 * 1024 * 1024
    decoder.receive_data(b"x" * (16 * 1024 * 1024 - 1) + b"\n")
    assert not isinstance(decoder.next_event(), FrameError)
    decoder.receive_data(b"x" * (16 * 1024 * 1024))  # the newline would be byte 16 MiB + 1
    event = decoder.next_event()
    assert isinstance(event, FrameError) and event.kind is FrameErrorKind.OVERSIZED
    violation = J.frame_violation(event)
    assert (violation.rule, violation.outcome) == ("jsonrpc.frame.too-large", "FrameTooLarge")
    assert J.frame_error_outcome(FrameErrorKind.OVERSIZED) == "FrameTooLarge"


def test_closed_mid_frame_is_unexpected_eof() -> None:
    decoder = J.new_decoder()
    decoder.receive_data(b'{"jsonrpc":"2.0","id":1,')
    decoder.receive_eof()
    event = decoder.next_event()
    assert isinstance(event, FrameError) and event.kind is FrameErrorKind.TRUNCATED
    violation = J.frame_violation(event)
    assert (violation.rule, violation.outcome) == ("jsonrpc.frame.truncated", "Io(UnexpectedEof)")


@pytest.mark.parametrize(
    "payload,expected",
    [
        # Rule 5 (id echoed) precedes rules 6 and 7.
        (
            b'{"jsonrpc":"2.0","id":42,"result":{},"error":{"code":1,"message":"x"}}',
            "MismatchedResponseId { expected: 1, actual: 42 }",
        ),
        (b'{"jsonrpc":"2.0","id":42}', "MismatchedResponseId { expected: 1, actual: 42 }"),
        (
            b'{"jsonrpc":"2.0","id":42,"error":{"code":"x","message":"m"}}',
            "MismatchedResponseId { expected: 1, actual: 42 }",
        ),
        # Rules 3 and 4 precede rule 5.
        (b'{"jsonrpc":"1.0","id":42,"result":{}}', "InvalidEnvelope(WrongVersion)"),
        (b'{"jsonrpc":"2.0","id":-42,"result":{}}', "InvalidEnvelope(MissingId)"),
        (b'{"jsonrpc":"2.0","id":"42","result":{}}', "InvalidEnvelope(MissingId)"),
        # Rule 3 precedes rule 6, rule 4 precedes rule 6, rule 6 precedes rule 7.
        (b'{"id":1,"result":{},"error":{"code":1,"message":"x"}}', "InvalidEnvelope(WrongVersion)"),
        (b'{"jsonrpc":"2.0","result":{},"error":{}}', "InvalidEnvelope(MissingId)"),
        (
            b'{"jsonrpc":"2.0","id":1,"result":{},"error":"x"}',
            "InvalidEnvelope(BothResultAndError)",
        ),
        # A non-object fails rule 3 first: it has no `jsonrpc` member.
        (b"[1,2]", "InvalidEnvelope(WrongVersion)"),
        (b"null", "InvalidEnvelope(WrongVersion)"),
        # Rules 1 and 2 come first of all.
        (b"\xff", "InvalidUtf8"),
        (b"", "InvalidJson"),
        # ERR_PARSE with id 0, cross-delivered, types as a mismatched id.
        (
            b'{"jsonrpc":"2.0","id":0,"error":{"code":-32700,"message":"parse error"}}',
            "MismatchedResponseId { expected: 1, actual: 0 }",
        ),
    ],
)
def test_validation_order(payload: bytes, expected: str) -> None:
    assert outcome(payload) == expected


def test_mismatch_and_both_reports_the_mismatch_as_a_violation_too() -> None:
    message = response(b'{"jsonrpc":"2.0","id":42,"result":{},"error":{"code":1,"message":"x"}}')
    assert isinstance(message, Malformed) and message.kind is MalformedKind.BOTH_RESULT_AND_ERROR
    assert message.id == 42
    assert [v.rule for v in J.check_exchange(REQUEST, message)] == ["jsonrpc.exchange.id-echoed"]


def test_no_mismatch_reported_before_the_id_is_valid() -> None:
    assert J.check_exchange(REQUEST, response(b'{"jsonrpc":"1.0","id":42,"result":{}}')) == []
    assert J.check_exchange(REQUEST, response(b"{nope")) == []


def test_null_members_count_as_absent() -> None:
    assert outcome(b'{"jsonrpc":null,"id":1,"result":{}}') == "InvalidEnvelope(WrongVersion)"
    assert outcome(b'{"jsonrpc":"2.0","id":null,"result":{}}') == "InvalidEnvelope(MissingId)"
    assert outcome(b'{"jsonrpc":"2.0","id":1,"result":null}') == (
        "InvalidEnvelope(NeitherResultNorError)"
    )
    assert outcome(b'{"jsonrpc":"2.0","id":1,"result":null,"error":null}') == (
        "InvalidEnvelope(NeitherResultNorError)"
    )
    message = response(b'{"jsonrpc":"2.0","id":1,"result":null,"error":{"code":-1,"message":"m"}}')
    assert isinstance(message, ErrorResponse)
    message = response(b'{"jsonrpc":"2.0","id":1,"result":{},"error":null}')
    assert isinstance(message, Response)
    # On a request a null `id` is no `id`: the request is a notification.
    message = request(b'{"jsonrpc":"2.0","id":null,"method":"notifications/initialized"}')
    assert isinstance(message, Notification)


@pytest.mark.parametrize(
    "error",
    [
        b'"x"',
        b"[1]",
        b"{}",
        b'{"code":1}',
        b'{"message":"m"}',
        b'{"code":"1","message":"m"}',
        b'{"code":1.5,"message":"m"}',
        b'{"code":true,"message":"m"}',
        b'{"code":1,"message":null}',
        b'{"code":1,"message":2}',
    ],
)
def test_invalid_error_objects(error: bytes) -> None:
    payload = b'{"jsonrpc":"2.0","id":1,"error":' + error + b"}"
    assert outcome(payload) == "InvalidEnvelope(InvalidErrorObject)"


def test_error_data_is_optional() -> None:
    message = response(b'{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"m"}}')
    assert isinstance(message, ErrorResponse) and message.error.code == -32603


REQUEST_MALFORMED = [
    (b"[]", MalformedKind.NOT_AN_OBJECT, "InvalidEnvelope(WrongVersion)"),
    (b'{"id":1,"method":"state"}', MalformedKind.WRONG_VERSION, "InvalidEnvelope(WrongVersion)"),
    (b'{"jsonrpc":"2.0","params":{}}', MalformedKind.MISSING_ID, "InvalidEnvelope(MissingId)"),
    (
        b'{"jsonrpc":"2.0","id":-1,"method":"state"}',
        MalformedKind.INVALID_ID,
        "InvalidEnvelope(MissingId)",
    ),
    (
        b'{"jsonrpc":"2.0","id":"1","method":"state"}',
        MalformedKind.INVALID_ID,
        "InvalidEnvelope(MissingId)",
    ),
    (
        b'{"jsonrpc":"2.0","id":true,"method":"state"}',
        MalformedKind.INVALID_ID,
        "InvalidEnvelope(MissingId)",
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"params":{}}',
        MalformedKind.MISSING_METHOD,
        "InvalidRequest(MissingMethod)",
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"method":3}',
        MalformedKind.INVALID_METHOD,
        "InvalidRequest(InvalidMethod)",
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"state","params":[1]}',
        MalformedKind.INVALID_PARAMS,
        "InvalidRequest(InvalidParams)",
    ),
]


@pytest.mark.parametrize("payload,kind,name", REQUEST_MALFORMED)
def test_malformed_requests(payload: bytes, kind: MalformedKind, name: str) -> None:
    message = request(payload)
    assert isinstance(message, Malformed) and message.kind is kind
    assert message.role is Role.REQUEST
    assert J.malformed_outcome(kind) == name
    (violation,) = J.check_message(message)
    assert (violation.rule, violation.outcome) == ("jsonrpc.request.envelope", name)


def test_every_malformed_kind_has_an_outcome_name() -> None:
    for kind in MalformedKind:
        assert J.malformed_outcome(kind)


def test_request_with_null_or_absent_params() -> None:
    for payload in (
        b'{"jsonrpc":"2.0","id":1,"method":"state"}',
        b'{"jsonrpc":"2.0","id":1,"method":"state","params":null}',
    ):
        message = request(payload)
        assert isinstance(message, Request) and message.method == "state"
        assert J.check_message(message) == []


def test_server_replies_to_unparseable_requests() -> None:
    for payload in (b"{nope", b"\xff"):
        bad = request(payload)
        assert isinstance(bad, Malformed)
        reply = J.unparseable_request(bad)
        assert reply is not None
        assert reply["id"] == 0 and reply["error"]["code"] == -32700 and reply["jsonrpc"] == "2.0"
    bad = request(b'{"jsonrpc":"2.0","id":5,"params":{}}')
    assert isinstance(bad, Malformed)
    reply = J.unparseable_request(bad)
    assert reply is not None and reply["id"] == 5 and reply["error"]["code"] == -32600
    bad = request(b'{"jsonrpc":"2.0","id":"x","method":"state"}')
    assert isinstance(bad, Malformed)
    reply = J.unparseable_request(bad)
    assert reply is not None and reply["id"] == 0 and reply["error"]["code"] == -32600


@pytest.mark.parametrize(
    ("payload", "answers"),
    [
        (b'{"jsonrpc":"2.0","id":0,"error":{"code":-32700,"message":"parse error"}}', True),
        (b'{"jsonrpc":"2.0","id":0,"error":{"code":-32001,"message":"not open"}}', False),
        # Any other JSON-RPC 2.0 server's: a null id (a contract violation here, the answer
        # all the same), or none; a batch's, an array.
        (b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}', True),
        (b'{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"}}', True),
        (b'[{"jsonrpc":"2.0","id":1,"result":{}}]', True),
        (b'{"jsonrpc":"2.0","id":null,"result":{}}', False),
        (b'{"jsonrpc":"2.0","id":"x","error":{"code":-32600,"message":"bad"}}', False),
    ],
)
def test_which_replies_answer_a_request_that_could_not_be_read(
    payload: bytes, answers: bool
) -> None:
    assert J.answers_unparseable(response(payload)) is answers


def test_a_null_id_answers_a_line_without_an_id_a_server_could_read() -> None:
    """Pipelined: a request with a string id (refused by this contract, typed malformed
    without a key; its server answers it by that id), then a broken line. The server's
    null-id answer is the broken line's, not the oldest malformed request's. One whose id is
    of no id's type (``true``) takes a null id too; with no line that fits, the oldest
    unreadable one does. Scrybe's id-0 answer goes to the oldest malformed line."""
    correlator: Correlator[int] = Correlator(J)
    for index, line in enumerate(
        (
            b'{"jsonrpc":"2.0","id":"a1","method":"m"}',
            b'{"jsonrpc":"2.0",',
            b'{"jsonrpc":"2.0","id":true,"method":"m"}',
        )
    ):
        correlator.add_request(request(line), index)
    null = response(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse"}}')
    answered = [correlator.match_response(null) for _ in range(3)]
    assert [found.context if found else None for found in answered] == [1, 2, 0]
    correlator.add_request(request(b'{"jsonrpc":"2.0","id":"a2","method":"m"}'), 3)
    correlator.add_request(request(b"{nope"), 4)
    scrybe = response(b'{"jsonrpc":"2.0","id":0,"error":{"code":-32600,"message":"bad"}}')
    found = correlator.match_response(scrybe)
    assert found is not None and found.context == 3


def test_a_batch_waits_for_an_answer_even_of_notifications_only() -> None:
    """Scrybe answers any line that is not an object with id 0, a batch of notifications
    too (a JSON-RPC 2.0 server would return nothing for that one; held, such a batch takes
    the next array)."""
    notes = request(b'[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","method":"o"}]')
    assert isinstance(notes, Malformed) and J.expects_response(notes)
    answer = J.unparseable_request(notes)
    assert answer is not None and answer["id"] == 0


def rules_of(payload: bytes) -> list[Any]:
    return [(v.rule, v.path) for v in J.check_message(request(payload))]


def test_method_table_checks() -> None:
    assert rules_of(b'{"jsonrpc":"2.0","id":1,"method":"nope"}') == [
        ("jsonrpc.method.unknown", "$.method")
    ]
    assert rules_of(b'{"jsonrpc":"2.0","id":1,"method":"read","params":{}}') == [
        ("jsonrpc.params.missing", "$.params.path")
    ]
    assert rules_of(b'{"jsonrpc":"2.0","id":1,"method":"read","params":{"path":1}}') == [
        ("jsonrpc.params.type", "$.params.path")
    ]
    assert rules_of(b'{"jsonrpc":"2.0","id":1,"method":"read","params":{"path":"a","x":1}}') == [
        ("jsonrpc.params.unknown", "$.params.x")
    ]
    assert rules_of(b'{"jsonrpc":"2.0","id":1,"method":"view_mode","params":{"mode":"x"}}') == [
        ("jsonrpc.params.type", "$.params.mode")
    ]
    conforming = [
        b'{"jsonrpc":"2.0","id":1,"method":"view_mode","params":{"mode":"cycle"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"find","params":{"pattern":"a","paths":["x"]}}',
        b'{"jsonrpc":"2.0","id":1,"method":"find","params":{"pattern":"a","paths":null}}',
        b'{"jsonrpc":"2.0","id":1,"method":"edit","params":'
        b'{"path":"a","start_line":1,"end_line":2,"content":""}}',
        b'{"jsonrpc":"2.0","id":1,"method":"quit","params":{"force":true}}',
    ]
    for payload in conforming:
        assert rules_of(payload) == []
    assert rules_of(
        b'{"jsonrpc":"2.0","id":1,"method":"edit","params":{"path":"a",'
        b'"start_line":true,"end_line":2,"content":""}}'
    ) == [("jsonrpc.params.type", "$.params.start_line")]


def test_exchange_result_shape_and_code_for_method() -> None:
    read = request(b'{"jsonrpc":"2.0","id":1,"method":"read","params":{"path":"a"}}')

    def rules(payload: bytes, req: Message = read) -> list[str]:
        return [v.rule for v in J.check_exchange(req, response(payload))]

    assert (
        rules(b'{"jsonrpc":"2.0","id":1,"result":{"path":"a","content":"","is_dirty":false}}') == []
    )
    assert rules(b'{"jsonrpc":"2.0","id":1,"result":{"path":"a"}}') == ["jsonrpc.result.shape"]
    assert rules(b'{"jsonrpc":"2.0","id":1,"result":[1]}') == ["jsonrpc.result.shape"]
    assert rules(b'{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"m"}}') == []
    assert rules(b'{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"m"}}') == []
    assert rules(b'{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"m"}}') == [
        "jsonrpc.error.code-for-method"
    ]
    close = request(b'{"jsonrpc":"2.0","id":1,"method":"close","params":{"path":"a"}}')
    assert rules(b'{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"m"}}', close) == [
        "jsonrpc.error.code-for-method"
    ]
    unknown = response(b'{"jsonrpc":"2.0","id":1,"error":{"code":-31999,"message":"m"}}')
    assert [v.rule for v in J.check_message(unknown)] == ["jsonrpc.error.unknown-code"]


def test_encoding_is_one_compact_line() -> None:
    assert J.encode({"jsonrpc": "2.0", "id": 1, "result": {"t": "é\n"}}) == (
        '{"jsonrpc":"2.0","id":1,"result":{"t":"é\\n"}}\n'.encode()
    )
    assert isinstance(J.new_decoder(), LineDecoder)


def test_reply_envelopes() -> None:
    assert J.success(1, {}) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert J.error(1, -32001, "m", {"p": 1}) == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32001, "message": "m", "data": {"p": 1}},
    }
    assert J.method_not_found(3, "x") == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32601, "message": "method not found: x"},
    }


# Notifications and requests from the server (JSON-RPC 2.0, as MCP uses them).

NOTIFICATION = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}'


@pytest.mark.parametrize("role", [Role.REQUEST, Role.RESPONSE, None])
def test_a_notification_is_typed_as_one_whichever_way_it_travels(role: Optional[Role]) -> None:
    message = J.parse(NOTIFICATION, role)
    assert isinstance(message, Notification)
    assert message.method == "notifications/progress" and message.params == {"progress": 1}
    assert message.id is None and message.role is Role.REQUEST
    assert J.check_message(message) == []
    assert not J.expects_response(message)
    assert J.describe(message) == "notification"


def test_a_request_from_the_server_is_a_request_and_the_clients_answer_a_response() -> None:
    asked = response(b'{"jsonrpc":"2.0","id":7,"method":"roots/list"}')
    assert isinstance(asked, Request) and asked.id == 7 and J.expects_response(asked)
    answer = request(b'{"jsonrpc":"2.0","id":7,"result":{"roots":[]}}')
    assert isinstance(answer, Response) and answer.id == 7
    failed = request(b'{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}')
    assert isinstance(failed, ErrorResponse)


def test_a_broken_frame_is_judged_by_the_side_it_came_from() -> None:
    # Neither a method nor a result/error: what the direction implies decides the rules.
    assert request(b'{"jsonrpc":"2.0","id":1,"params":{}}').role is Role.REQUEST
    reply = response(b'{"jsonrpc":"2.0","id":1}')
    assert isinstance(reply, Malformed) and reply.role is Role.RESPONSE
    assert reply.kind is MalformedKind.NEITHER_RESULT_NOR_ERROR
