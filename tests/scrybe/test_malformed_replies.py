"""Every malformed-reply example of the Scrybe 0.6 contract, sent by a misbehaving server
through the proxy: the client gets exactly the server's bytes and types them as the contract
says, and the proxy reports the same outcome name in its events and its recording."""

from __future__ import annotations

import os
from typing import Optional

import pytest
import trio

from golem_core.framing import FrameErrorKind
from golem_core.profiles import JSONRPC_NDJSON
from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.events import (
    ConnectionClosed,
    ExchangeCompleted,
    FramingErrorSeen,
    ObservationLost,
    ViolationSeen,
)
from golem_proxy.recording.format import read_recording
from golem_proxy.testing import scrybe_client as contract_client

from .stack import start_stack

pytestmark = pytest.mark.trio

CAP = 16 * 1024 * 1024
REQUEST = contract_client.request_line("state", {})

# (name, raw reply, the client's typed outcome, the proxy's violation rule or None)
EXAMPLES: list[tuple[str, bytes, str, Optional[str]]] = [
    ("garbage", b"{this is not json\n", "InvalidJson", "jsonrpc.response.json"),
    (
        "invalid-utf8",
        b'{"jsonrpc":"2.0","id":1,"result":"\xff"}\n',
        "InvalidUtf8",
        "jsonrpc.response.utf8",
    ),
    (
        "wrong-id",
        b'{"jsonrpc":"2.0","id":42,"result":{}}\n',
        "MismatchedResponseId { expected: 1, actual: 42 }",
        "jsonrpc.exchange.id-echoed",
    ),
    (
        "both",
        b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":-32000,"message":"x"}}\n',
        "InvalidEnvelope(BothResultAndError)",
        "jsonrpc.response.result-xor-error",
    ),
    (
        "missing-version",
        b'{"id":1,"result":{}}\n',
        "InvalidEnvelope(WrongVersion)",
        "jsonrpc.response.version",
    ),
    (
        "version-1.0",
        b'{"jsonrpc":"1.0","id":1,"result":{}}\n',
        "InvalidEnvelope(WrongVersion)",
        "jsonrpc.response.version",
    ),
    (
        "missing-id",
        b'{"jsonrpc":"2.0","result":{}}\n',
        "InvalidEnvelope(MissingId)",
        "jsonrpc.response.id",
    ),
    (
        "string-id",
        b'{"jsonrpc":"2.0","id":"1","result":{}}\n',
        "InvalidEnvelope(MissingId)",
        "jsonrpc.response.id",
    ),
    (
        "neither",
        b'{"jsonrpc":"2.0","id":1}\n',
        "InvalidEnvelope(NeitherResultNorError)",
        "jsonrpc.response.result-xor-error",
    ),
    (
        "error-not-object",
        b'{"jsonrpc":"2.0","id":1,"error":"boom"}\n',
        "InvalidEnvelope(InvalidErrorObject)",
        "jsonrpc.response.error-object",
    ),
    (
        "error-code-string",
        b'{"jsonrpc":"2.0","id":1,"error":{"code":"E","message":"m"}}\n',
        "InvalidEnvelope(InvalidErrorObject)",
        "jsonrpc.response.error-object",
    ),
    (
        "cross-delivered-parse-error",
        b'{"jsonrpc":"2.0","id":0,"error":{"code":-32700,"message":"parse error"}}\n',
        "MismatchedResponseId { expected: 1, actual: 0 }",
        "jsonrpc.exchange.id-echoed",
    ),
    (
        "closed-mid-frame",
        b'{"jsonrpc":"2.0","id":1,"res',
        "Io(UnexpectedEof)",
        "jsonrpc.frame.truncated",
    ),
    ("no-reply", b"", "Io(UnexpectedEof)", None),
    ("too-large", b"x" * (CAP + 1), "FrameTooLarge", "jsonrpc.frame.too-large"),
]


@pytest.mark.parametrize(
    "name,raw,outcome,rule", EXAMPLES, ids=[example[0] for example in EXAMPLES]
)
async def test_malformed_reply_is_forwarded_unchanged_and_named(
    nursery: trio.Nursery, sock_dir: str, name: str, raw: bytes, outcome: str, rule: Optional[str]
) -> None:
    record = os.path.join(sock_dir, "bad.jsonl")
    stack = await start_stack(nursery, sock_dir, raw_reply=raw, record=record)
    # Byte-exact: a raw reader behind the proxy gets exactly what the server sent.
    assert await stack.read_all(REQUEST) == raw
    # The contract client types the reply as the contract says, and the profile agrees.
    typed = await stack.call_raw(REQUEST)
    assert typed.name == outcome
    await stack.stop()
    assert stack.server.received == [REQUEST, REQUEST]
    # Envelope-level violations carry an outcome name; result-shape findings (an empty
    # `state` result) are reported too but are not what the client fails on.
    named = [v.violation for v in stack.proxy.of_type(ViolationSeen) if v.violation.outcome]
    if rule is None:
        assert named == []
    else:
        # Both connections report the same violation under the contract's outcome name.
        lost = stack.proxy.of_type(ObservationLost)  # says why, should one be missing
        assert [(v.rule, v.outcome) for v in named] == [(rule, outcome)] * 2, lost
    recorded = read_recording(record)
    recorded_named = [
        (e.violation.rule, e.violation.outcome)
        for e in recorded.events
        if isinstance(e, ViolationSeen) and e.violation.outcome
    ]
    assert recorded_named == [(v.rule, v.outcome) for v in named]
    closed = stack.proxy.of_type(ConnectionClosed)
    assert sum(c.bytes_s2c for c in closed) >= len(raw)
    check_rows(stack.proxy.events, name, outcome)
    for exchange in stack.proxy.of_type(ExchangeCompleted):
        request, response = exchange.request.message, exchange.response.message
        assert JSONRPC_NDJSON.client_outcome(request, response) == outcome


def check_rows(events: list[object], name: str, outcome: str) -> None:
    """The rows every view shows carry the same name (status column)."""
    tracker = FlowTracker(JSONRPC_NDJSON)
    for event in events:
        tracker.apply(event)  # type: ignore[arg-type]
    statuses = [flow.status(JSONRPC_NDJSON) for flow in tracker.flows]
    if name == "too-large":
        assert FrameErrorKind.OVERSIZED.value in statuses
    elif name == "closed-mid-frame":
        assert FrameErrorKind.TRUNCATED.value in statuses
    elif name == "no-reply":
        # The server closed its side first, the request waiting: said when it happened.
        assert statuses == ["unanswered (upstream closed)"] * 2
    else:
        assert statuses == [outcome, outcome]


async def test_oversized_reply_is_reported_once_per_connection(
    nursery: trio.Nursery, sock_dir: str
) -> None:
    raw = b"y" * (CAP + 1)
    stack = await start_stack(nursery, sock_dir, raw_reply=raw)
    typed = await stack.call_raw(REQUEST)
    assert typed.name == "FrameTooLarge"
    # The reference client stops at the cap: it never reads (or allocates) past it.
    assert len(typed.raw) == CAP
    await stack.stop()
    (error,) = stack.proxy.of_type(FramingErrorSeen)
    assert error.kind is FrameErrorKind.OVERSIZED and len(error.raw) == CAP
    assert not stack.proxy.of_type(ExchangeCompleted)


async def test_reply_at_exactly_the_cap_is_accepted(nursery: trio.Nursery, sock_dir: str) -> None:
    prefix = b'{"jsonrpc":"2.0","id":1,"result":{"lines":["'
    suffix = b'"]}}\n'
    raw = prefix + b"z" * (CAP - len(prefix) - len(suffix)) + suffix
    assert len(raw) == CAP
    stack = await start_stack(nursery, sock_dir, raw_reply=raw)
    typed = await stack.call_raw(contract_client.request_line("logs", {}))
    assert typed.name == "Ok" and typed.raw == raw
    await stack.stop()
    assert not stack.proxy.of_type(ViolationSeen)
    assert len(stack.proxy.of_type(ExchangeCompleted)) == 1
