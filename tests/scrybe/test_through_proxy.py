"""A contract-following client, the proxy and the stand-in app, all on Unix sockets: results
are unchanged by the proxy, every one-shot connection is paired, statuses use the registry's
names, and the recording holds the session."""

from __future__ import annotations

import io
import os
import stat

import pytest
import trio
from rich.console import Console

from golem_core.profiles import JSONRPC_NDJSON
from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.events import ConnectionClosed, ConnectionOpened, ExchangeCompleted, ViolationSeen
from golem_proxy.live.log import EventLog
from golem_proxy.recording.format import read_recording
from golem_proxy.testing import scrybe_client as contract_client
from golem_proxy.testing.scrybe_app import ScrybeApp
from golem_proxy.testing.scrybe_session import DISK, SESSION

from .stack import start_stack

pytestmark = pytest.mark.trio


def direct_results() -> list[contract_client.Outcome]:
    """What the session gives without a proxy (the app is deterministic)."""
    app = ScrybeApp(dict(DISK))
    out = []
    for method, params in SESSION:
        line = contract_client.request_line(method, params)
        out.append(contract_client._validate(app.respond(line[:-1]), line))
    return out


async def test_session_through_the_proxy_is_unchanged_and_paired(
    nursery: trio.Nursery, sock_dir: str
) -> None:
    record = os.path.join(sock_dir, "session.jsonl")
    stack = await start_stack(nursery, sock_dir, app=ScrybeApp(dict(DISK)), record=record)
    mode = stat.S_IMODE(os.stat(stack.path).st_mode)
    assert mode == 0o600
    outcomes = [await stack.call(method, params) for method, params in SESSION]
    await stack.stop()
    expected = direct_results()
    assert [o.name for o in outcomes] == [o.name for o in expected]
    assert [o.raw for o in outcomes] == [o.raw for o in expected]
    assert stack.server.received == [o.sent for o in outcomes]
    # The proxy saw one connection per request, each with request id 1, each paired.
    exchanges = stack.proxy.of_type(ExchangeCompleted)
    assert [e.method for e in exchanges] == [method for method, _ in SESSION]
    assert len({e.conn for e in exchanges}) == len(SESSION)
    assert all(e.request.message.id == 1 == e.response.message.id for e in exchanges)
    assert len(stack.proxy.of_type(ConnectionOpened)) == len(SESSION)
    statuses = [JSONRPC_NDJSON.describe(e.response.message) for e in exchanges]
    assert statuses[1] == "ERR_TAB_NOT_OPEN"
    assert statuses[8] == "ERR_SECTION_NOT_FOUND"
    assert statuses[12:14] == ["ERR_DIRTY_RELOAD_REFUSED", "ERR_DIRTY_QUIT_REFUSED"]
    assert statuses[-3:] == ["ERR_METHOD_NOT_FOUND", "ERR_INVALID_PARAMS", "ok"]
    # Only the deliberately bad requests broke the contract; each is named by its rule.
    rules = {(v.violation.rule, v.violation.outcome) for v in stack.proxy.of_type(ViolationSeen)}
    assert rules == {
        ("jsonrpc.method.unknown", "ERR_METHOD_NOT_FOUND"),
        ("jsonrpc.params.missing", "ERR_INVALID_PARAMS"),
    }
    # The recording holds the same exchanges, with statuses named from the registry.
    recording = read_recording(record)
    assert recording.header.profile == "jsonrpc-ndjson"
    assert [e.method for e in recording.exchanges()] == [m for m, _ in SESSION]
    assert [e.response.payload + b"\n" for e in recording.exchanges()] == [o.raw for o in outcomes]
    assert stat.S_IMODE(os.stat(record).st_mode) == 0o600


async def test_many_sequential_one_shot_connections_are_each_paired(
    nursery: trio.Nursery, sock_dir: str
) -> None:
    stack = await start_stack(nursery, sock_dir, app=ScrybeApp(dict(DISK)))
    await stack.call("open", {"path": "/notes/a.md"})
    for number in range(120):
        theme = f"t{number}"
        outcome = await stack.call("set_theme", {"theme": theme})
        assert outcome.ok and outcome.result == {"theme": theme}
    await stack.stop()
    exchanges = stack.proxy.of_type(ExchangeCompleted)
    assert len(exchanges) == 121
    # Each response is paired with the request of its own connection, though all use id 1.
    for exchange in exchanges[1:]:
        assert exchange.request.conn == exchange.response.conn
        request_theme = exchange.request.message.obj["params"]["theme"]
        assert exchange.response.message.obj["result"]["theme"] == request_theme
    assert not stack.proxy.of_type(ViolationSeen)
    closed = stack.proxy.of_type(ConnectionClosed)
    assert len(closed) == 121 and not any(c.abnormal for c in closed)
    tracker = FlowTracker(JSONRPC_NDJSON)
    for event in stack.proxy.events:
        tracker.apply(event)
    assert len(tracker.flows) == 121
    assert {flow.status(JSONRPC_NDJSON) for flow in tracker.flows} == {"ok"}


async def test_concurrent_one_shot_connections_are_each_paired(
    nursery: trio.Nursery, sock_dir: str
) -> None:
    stack = await start_stack(nursery, sock_dir, app=ScrybeApp(dict(DISK)))
    results: dict[int, contract_client.Outcome] = {}

    async def one(number: int) -> None:
        results[number] = await stack.call("set_theme", {"theme": f"c{number}"})

    async with trio.open_nursery() as calls:
        for number in range(30):
            calls.start_soon(one, number)
    await stack.stop()
    assert all(results[n].result == {"theme": f"c{n}"} for n in range(30))
    exchanges = stack.proxy.of_type(ExchangeCompleted)
    assert len(exchanges) == 30
    for exchange in exchanges:
        sent = exchange.request.message.obj["params"]["theme"]
        assert exchange.response.message.obj["result"]["theme"] == sent
    assert not stack.proxy.of_type(ViolationSeen)


async def test_log_line_shows_the_registry_name(nursery: trio.Nursery, sock_dir: str) -> None:
    stack = await start_stack(nursery, sock_dir, app=ScrybeApp(dict(DISK)))
    outcome = await stack.call("read", {"path": "/nowhere.md"})
    assert outcome.name == "Remote(RpcError { code: -32001 })"
    await stack.stop()
    (exchange,) = stack.proxy.of_type(ExchangeCompleted)
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None)
    EventLog(console, JSONRPC_NDJSON).handle(exchange)
    line = buffer.getvalue()
    assert "read" in line and "ERR_TAB_NOT_OPEN" in line and "/nowhere.md is not open" in line


async def test_client_names_the_proxy_socket_peer(nursery: trio.Nursery, sock_dir: str) -> None:
    stack = await start_stack(nursery, sock_dir, app=ScrybeApp())
    await stack.call("state")
    await stack.stop()
    (opened,) = stack.proxy.of_type(ConnectionOpened)
    assert opened.client == f"unix:pid={os.getpid()}"
    assert opened.upstream == f"unix:{stack.server.path}"


async def test_unparseable_request_is_paired_with_its_err_parse_reply(
    nursery: trio.Nursery, sock_dir: str
) -> None:
    stack = await start_stack(nursery, sock_dir, app=ScrybeApp())
    outcome = await stack.call_raw(b"{oops\n")
    # A conforming client never sends this; if it did, id 0 is not the id it expects.
    assert outcome.name == "MismatchedResponseId { expected: 1, actual: 0 }"
    await stack.stop()
    (exchange,) = stack.proxy.of_type(ExchangeCompleted)
    assert JSONRPC_NDJSON.describe(exchange.response.message) == "ERR_PARSE"
    rules = [v.violation.rule for v in stack.proxy.of_type(ViolationSeen)]
    assert rules == ["jsonrpc.request.envelope"]  # the request, not the reply, is at fault
