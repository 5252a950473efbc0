"""`OutageStandIn` on real loopback sockets: where the recording shows the plugin gone away in
the middle of a call (an ``end`` line naming the request it owed), the stand-in answers that
request with nothing, ends its side (the client reads the end of the stream), and meets the
client's later bytes there with a reset, as the proxy did."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from golem_core.profiles import GOLEM
from golem_proxy.net.addresses import Address
from golem_proxy.net.listeners import connect
from golem_proxy.replay.engine import ReplayEngine
from golem_proxy.replay.index import ReplayIndex, load_exchanges
from golem_proxy.replay.matching import IgnoreRules, Keyer, MatchMode
from golem_proxy.replay.mcp_script import ClientStep
from golem_proxy.replay.outage_plan import OutagePlan, PluginEnd, RouteOutage
from golem_proxy.replay.outage_standin import OutageStandIn
from golem_proxy.replay.server import ReplayServer

from .test_server import Peer
from .traces import modelling_session

pytestmark = pytest.mark.trio

LOOPBACK = Address("127.0.0.1", 0)
# The request the plugin took and never answered, as recorded (another id: keys ignore it).
OWED = b'{"id": "recorded", "method": "scene.list_objects", "params": {}}'


def _step(index: int) -> ClientStep:
    params = {"name": "slow_tool", "arguments": {}}
    return ClientStep(b"{}", index, "tools/call", index, params)


@asynccontextmanager
async def _standin(
    tmp_path: Path, *, reset_after: bool = True
) -> AsyncIterator[tuple[OutageStandIn, Address]]:
    """The stand-in, serving a trace, with a plan that has the plugin end ``main`` in the
    middle of the call whose request frame is 3, owing it OWED; and where main listens."""
    trace = load_exchanges(str(modelling_session(tmp_path / "trace.jsonl")))
    engine = ReplayEngine(ReplayIndex(trace, Keyer(MatchMode.METHOD_PARAMS, IgnoreRules())))
    listen = {"main": LOOPBACK}
    ended = RouteOutage(ends=(PluginEnd((OWED,), reset_after=reset_after),))
    standin = OutageStandIn(ReplayServer(engine, listen), listen, OutagePlan({3: {"main": ended}}))
    try:
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(standin.run)
            yield standin, bound["main"]
            nursery.cancel_scope.cancel()
    finally:
        trace.close()


async def _request(stream: trio.SocketStream, method: str) -> None:
    payload = f'{{"id": "live-{method}", "method": "{method}", "params": {{}}}}'.encode()
    await stream.send_all(GOLEM.frame_payload(payload))


async def _reset_at_next_write(stream: trio.SocketStream, within: float = 5) -> bool:
    """Whether the peer answers our writes with a reset within ``within`` seconds (a write to
    a peer that only ended its side, and reads, never fails)."""
    with trio.move_on_after(within):
        while True:
            try:
                await _request(stream, "scene.list_layers")
            except trio.BrokenResourceError:
                return True
            await trio.sleep(0.02)
    return False


async def test_the_owed_request_gets_the_end_of_the_stream_then_a_reset(tmp_path: Path) -> None:
    async with _standin(tmp_path) as (standin, main):
        await standin.begin(_step(3))
        stream = await connect(main)
        peer = Peer(stream)
        assert (await peer.call("ping"))["result"] == {"alive": True}  # served as recorded
        await _request(stream, "scene.list_objects")
        with trio.fail_after(5):
            assert await peer.read() is None  # the end of the stream, no answer
        assert await _reset_at_next_write(stream)
        await stream.aclose()
        assert standin.server.engine.report.misses == []
        assert [(item.index, item.route) for item in standin.applied] == [(3, "main")]


async def test_later_bytes_are_dropped_where_the_recording_shows_them_taken(
    tmp_path: Path,
) -> None:
    async with _standin(tmp_path, reset_after=False) as (standin, main):
        await standin.begin(_step(3))
        stream = await connect(main)
        await _request(stream, "scene.list_objects")
        with trio.fail_after(5):
            assert await Peer(stream).read() is None
        assert not await _reset_at_next_write(stream, within=0.5)
        await stream.aclose()


async def test_an_owed_request_that_does_not_come_during_its_call_is_let_go(
    tmp_path: Path,
) -> None:
    async with _standin(tmp_path) as (standin, main):
        await standin.begin(_step(3))
        await standin.begin(_step(5))  # the build did not send it: the next call is served
        stream = await connect(main)
        with trio.fail_after(5):
            answer = await Peer(stream).call("scene.list_objects")
        assert answer["result"]["objects"]
        await stream.aclose()
