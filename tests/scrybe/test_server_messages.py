"""JSON-RPC 2.0 messages a server sends of its own accord, through the proxy: notifications
(MCP's progress and log messages) are typed as such, never violations and never held, and a
request of the server (MCP's ``ping``, ``roots/list``) pairs with the client's answer, even
when the two sides use the same ids."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
import trio

from golem_core.messages import Notification, Request, Response
from golem_core.profiles import JSONRPC_NDJSON
from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.analysis.stats import compute_stats
from golem_proxy.events import Direction, ExchangeCompleted, FrameSeen, ViolationSeen
from golem_proxy.net.addresses import Address
from golem_proxy.recording.format import read_recording
from tests.support.harness import connect, start_proxy, stop_proxy

pytestmark = pytest.mark.trio

NOTES = 500
NOTE = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":%d}}\n'
ASK = b'{"jsonrpc":"2.0","id":1,"method":"roots/list"}\n'
CALL = b'{"jsonrpc":"2.0","id":1,"method":"set_vim","params":{"enabled":true}}\n'
ANSWER_TO_ASK = b'{"jsonrpc":"2.0","id":1,"result":{"roots":[]}}\n'
ANSWER_TO_CALL = b'{"jsonrpc":"2.0","id":1,"result":{"enabled":true}}\n'
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


async def _server(stream: trio.SocketStream) -> None:
    """Asks its client something (id 1, as the client's own call), reports progress, and
    answers the client's call once its own question is answered."""
    await stream.send_all(ASK + b"".join(NOTE % n for n in range(NOTES)))
    buffered = b""
    while buffered.count(b"\n") < 3:  # the client's notification, call and answer
        chunk = await stream.receive_some(4096)
        if not chunk:
            return
        buffered += chunk
    await stream.send_all(ANSWER_TO_CALL)
    await stream.send_eof()
    await stream.receive_some(10)


async def test_notifications_and_server_requests_are_first_class(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    nursery.start_soon(trio.serve_listeners, _server, listeners)
    upstream = Address("127.0.0.1", listeners[0].socket.getsockname()[1])
    record = str(tmp_path / "server.jsonl")
    proxy = await start_proxy(nursery, upstream, profile=JSONRPC_NDJSON, record=record)
    client = await connect(proxy.listen)
    with trio.fail_after(20):
        await client.send_all(INITIALIZED + CALL)
        received = b""
        answered = False
        while True:
            if not answered and ASK in received:
                await client.send_all(ANSWER_TO_ASK)  # as an MCP client answers roots/list
                answered = True
            chunk = await client.receive_some(65536)
            if not chunk:
                break
            received += chunk
    await client.aclose()
    await stop_proxy(proxy)
    assert received.endswith(ANSWER_TO_CALL) and received.count(b"\n") == NOTES + 2

    assert proxy.of_type(ViolationSeen) == []
    frames = proxy.of_type(FrameSeen)
    notes = [f for f in frames if f.is_notification]
    assert len(notes) == NOTES + 1  # the server's progress and the client's "initialized"
    assert all(isinstance(f.message, Notification) for f in notes)
    exchanges = proxy.of_type(ExchangeCompleted)
    asked = {e.method: e for e in exchanges}
    assert set(asked) == {"roots/list", "set_vim"}
    roots = asked["roots/list"]
    assert roots.request.is_server_request and roots.request.direction is Direction.S2C
    assert roots.response.direction is Direction.C2S
    assert isinstance(roots.response.message, Response)
    named = {(v.direction, v.frame_index) for v in proxy.of_type(ViolationSeen)}
    assert (Direction.S2C, roots.request.index) not in named
    assert (Direction.C2S, roots.response.index) not in named
    assert isinstance(asked["set_vim"].request.message, Request)
    assert not asked["set_vim"].request.is_server_request

    # The recording reads back to the same rows: nothing pending, nothing orphaned.
    recording = read_recording(record)
    tracker = FlowTracker(JSONRPC_NDJSON)
    for event in recording.events:
        tracker.apply(event)
    flows = tracker.flows
    assert not [f for f in flows if f.pending or f.has_violation]
    statuses = [f.status(JSONRPC_NDJSON) for f in flows]
    assert statuses.count("notification") == NOTES + 1 and statuses.count("ok") == 2
    assert [f.method for f in flows if f.asked_by_server and not f.is_notification] == [
        "roots/list"
    ]
    stats = compute_stats(flows)
    counted = {row.method: row.count for row in stats.rows}
    assert counted.get("notifications/progress") == NOTES
    kinds = [json.loads(line)["kind"] for line in Path(record).read_text().splitlines()[1:]]
    assert kinds.count("server-exchange") == 1 and kinds.count("exchange") == 1
    assert "violation" not in kinds
    assert os.path.getsize(record) < 6 * len(received) + 4096
    assert not math.isnan(roots.latency) and roots.latency >= 0
