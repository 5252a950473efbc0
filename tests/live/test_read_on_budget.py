"""What the proxy reads on behind held frames is bounded across connections (read_on.py,
`ReadOnBudget`): many clients each writing behind a request the proxy holds (``--fault delay``)
never make it hold more than the shared budget, and nothing they sent is lost: past the budget
the bytes wait in the kernel, and go on once the held frames did. Real sockets on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from golem_core.framing import Frame
from golem_core.messages import Role
from golem_core.profiles import GOLEM
from golem_proxy.live.faults import FaultPlan
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.read_on import ReadOnBudget
from golem_proxy.live.session import ProxySession, SessionConfig
from golem_proxy.net.addresses import Address, Route
from golem_proxy.testing.upstreams import TracingUpstream

pytestmark = pytest.mark.trio

CLIENTS = 4
BEHIND = 32
"""Requests each client sends behind its held one."""
PARAM = 16 * 1024
"""Bytes of each of those requests' params: 512 KiB behind each held request."""
BUDGET = 256 * 1024
"""The shared budget: less than one client sends behind its held request."""
HOLD_MS = 1500


def _request(ident: str, method: str, text: str = "") -> bytes:
    return GOLEM.encode({"id": ident, "method": method, "params": {"text": text}})


async def _answers(stream: trio.SocketStream, count: int) -> list[str]:
    """The ids of the next ``count`` answers."""
    decoder = GOLEM.new_decoder()
    ids: list[str] = []
    with trio.fail_after(20):
        while len(ids) < count:
            chunk = await stream.receive_some(65536)
            assert chunk, "the proxy closed before every answer came"
            decoder.receive_data(chunk)
            for event in decoder.events():
                if isinstance(event, Frame):
                    ids.append(str(GOLEM.parse(event.payload, Role.RESPONSE).id))
    return ids


async def test_clients_writing_behind_held_frames_share_one_bound(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    upstream = TracingUpstream()
    await nursery.start(upstream.serve)
    plan = FaultPlan.parse([f"delay:ms={HOLD_MS},method=viewport.capture"], 1)
    config = SessionConfig(
        routes=[Route("main", Address("127.0.0.1", 0), upstream.address)],
        profile=GOLEM,
        options=ProxyOptions(drain_timeout=0.5, faults=plan),
        record_path=str(tmp_path / "held.jsonl"),
    )
    session = ProxySession(config)
    budget = session.proxy.read_on_budget = ReadOnBudget(total_bytes=BUDGET)
    listen = (await nursery.start(session.run))[0].listen

    sent: list[bytes] = []
    streams = []
    for client in range(CLIENTS):
        stream = await trio.open_tcp_stream(listen.host, listen.port)
        streams.append(stream)
        behind = b"".join(_request(f"c{client}-{n}", "echo", "x" * PARAM) for n in range(BEHIND))
        held = _request(f"c{client}-held", "viewport.capture")
        sent.append(held + behind)
        await stream.send_all(held)
        # Blocks on flow control once the proxy stops reading on: a task of its own.
        nursery.start_soon(stream.send_all, behind)

    # While the requests are held, the pumps read on, together never past the budget.
    most = 0
    with trio.move_on_after(HOLD_MS / 1000 * 0.6):
        while True:
            assert budget.bytes <= BUDGET
            most = max(most, budget.bytes)
            await trio.sleep(0.005)
    assert most > BUDGET // 2, "the pumps read on behind the held frames"
    assert not any(upstream.received), "the held requests, and all behind them, wait"

    # Nothing is lost: once the holds end, every request goes on and is answered, in order.
    for client, stream in enumerate(streams):
        ids = await _answers(stream, 1 + BEHIND)
        assert ids == [f"c{client}-held"] + [f"c{client}-{n}" for n in range(BEHIND)]
    assert sorted(bytes(r) for r in upstream.received) == sorted(sent)

    # Each connection's share is given back as what it read went on, or as it ends.
    for stream in streams:
        await stream.aclose()
    with trio.fail_after(10):
        while budget.bytes or budget.chunks:
            await trio.sleep(0.01)
    session.stop()
    with trio.fail_after(10):
        await session.finished.wait()
