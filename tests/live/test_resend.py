"""Sending a request again to a live upstream (the headless plugin), alone and as a side
connection of a running proxy session."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import trio

from golem_core.messages import ErrorResponse, Response
from golem_core.profiles import GOLEM, JSONRPC_NDJSON
from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.events import ConnectionClosed, ConnectionOpened, ExchangeCompleted, FrameSeen
from golem_proxy.live.resend import ResendError, fresh_request, resend
from golem_proxy.live.resend_connection import RESEND_CLIENT
from golem_proxy.net.addresses import Address
from golem_proxy.recording.format import read_recording
from tests.support.harness import GolemClient, connect, start_proxy, stop_proxy
from tests.support.plugin_fixture import in_process_plugin_fixture
from tests.support.waiting import until

pytestmark = pytest.mark.trio


plugin = in_process_plugin_fixture(seed=9)


def payload(ident: object, method: str, **params: object) -> bytes:
    return GOLEM.encode_payload({"id": ident, "method": method, "params": params})


async def test_resend_uses_a_fresh_id_and_returns_the_answer(plugin: Address) -> None:
    first = await resend(payload("orig", "scene.create_layer", name="Again"), plugin, GOLEM)
    assert first.original_id == "orig" and first.request_id != "orig"
    assert first.method == "scene.create_layer"
    assert isinstance(first.message, Response) and first.message.id == first.request_id
    assert first.message.result["full_path"] == "Again"
    assert json.loads(first.request)["params"] == {"name": "Again"}
    second = await resend(payload("orig", "scene.create_layer", name="Again"), plugin, GOLEM)
    assert second.request_id != first.request_id
    # The plugin really did it twice: the second time the layer exists.
    assert isinstance(second.message, ErrorResponse)
    assert "Rhino failed to create layer 'Again'" in second.message.error.message


async def test_fresh_request_keeps_every_other_member() -> None:
    ids = iter([41])
    new, original = fresh_request(
        b'{"jsonrpc": "2.0", "id": 7, "method": "read", "params": {"path": "a"}}',
        JSONRPC_NDJSON,
        ids,
    )
    assert original.id == 7
    assert json.loads(new) == {
        "jsonrpc": "2.0",
        "id": 41,
        "method": "read",
        "params": {"path": "a"},
    }
    with pytest.raises(ResendError, match="only a well-formed request"):
        fresh_request(b'{"id": "x", "result": {}, "error": null}', GOLEM, iter(["y"]))


async def test_resend_errors_name_the_problem() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(ResendError, match=r"cannot reach 127\.0\.0\.1"):
        await resend(payload("a", "ping"), Address("127.0.0.1", port), GOLEM)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        address = Address("127.0.0.1", silent.getsockname()[1])
        expected = r"did not answer within 0\.05 s \(a server that serves one client"
        with pytest.raises(ResendError, match=expected):
            await resend(payload("a", "ping"), address, GOLEM, timeout=0.05)


async def test_a_proxy_resends_on_a_side_connection_of_its_session(
    nursery: trio.Nursery, plugin: Address, tmp_path: Path
) -> None:
    record = tmp_path / "resend.jsonl"
    proxy = await start_proxy(nursery, plugin, record=str(record))
    client = GolemClient(await connect(proxy.listen))
    reply = await client.call({"id": "c1", "method": "scene.get_document_info", "params": {}})
    assert isinstance(reply, Response)
    observed = await until(
        lambda: [e for e in proxy.of_type(FrameSeen) if e.method == "scene.get_document_info"]
    )
    # The GOLEM plugin serves one client per channel at a time, as the real one does: the
    # side connection is served once the client has gone.
    await client.stream.aclose()
    await until(lambda: proxy.of_type(ConnectionClosed))
    resent = await proxy.session.proxy.resend("main", observed[0].payload)
    assert isinstance(resent.message, Response) and resent.message.id == resent.request_id
    assert resent.message.result == reply.result
    with pytest.raises(ResendError, match="no route named 'gh'"):
        await proxy.session.proxy.resend("gh", observed[0].payload)
    await stop_proxy(proxy)

    opened = [e for e in proxy.of_type(ConnectionOpened) if e.client == RESEND_CLIENT]
    assert len(opened) == 1 and opened[0].upstream == str(plugin)
    side = opened[0].conn
    closed = [e for e in proxy.of_type(ConnectionClosed) if e.conn == side]
    assert closed[0].reason == "resend answered" and not closed[0].abnormal
    flows = FlowTracker(GOLEM)
    for event in read_recording(str(record)).events:
        flows.apply(event)
    pairs = [(f.conn, f.method, f.request.message.id) for f in flows.flows if f.request]
    assert pairs == [
        (1, "scene.get_document_info", "c1"),
        (side, "scene.get_document_info", resent.request_id),
    ]
    assert [e.method for e in proxy.of_type(ExchangeCompleted)] == ["scene.get_document_info"] * 2
