"""``--idle-timeout`` counts time with nothing crossing, never time the proxy itself holds a
frame (``--fault delay``, ``--intercept`` waiting for the user): that wait is not the peer's."""

from __future__ import annotations

import pytest
import trio

from golem_core.messages import Response
from golem_proxy.events import ConnectionClosed
from golem_proxy.live.faults import FaultPlan
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.testing.upstreams import GolemUpstream
from tests.support.harness import GolemClient, RunningProxy, connect, start_proxy, stop_proxy


async def delayed_session(nursery: trio.Nursery, delay_ms: int) -> tuple[RunningProxy, GolemClient]:
    """A proxy cutting connections idle for 0.3 s, delaying every frame by ``delay_ms``, and a
    client connected through it."""
    options = ProxyOptions(
        drain_timeout=0.5, idle_timeout=0.3, faults=FaultPlan.parse([f"delay:ms={delay_ms}"], 1)
    )
    upstream = GolemUpstream()
    await nursery.start(upstream.serve)
    proxy = await start_proxy(nursery, upstream.address, options=options)
    return proxy, GolemClient(await connect(proxy.listen))


@pytest.mark.trio
async def test_a_delay_longer_than_the_idle_timeout_is_not_idleness() -> None:
    async with trio.open_nursery() as nursery:
        proxy, client = await delayed_session(nursery, 900)
        answer = await client.call({"id": "slow", "method": "ping", "params": {}})
        assert isinstance(answer, Response) and answer.id == "slow"
        assert not proxy.of_type(ConnectionClosed)
        await client.stream.aclose()
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()


@pytest.mark.trio
async def test_a_connection_idle_after_the_held_frame_went_is_still_cut() -> None:
    async with trio.open_nursery() as nursery:
        proxy, client = await delayed_session(nursery, 500)
        await client.call({"id": "slow", "method": "ping", "params": {}})
        with trio.fail_after(10):
            while not proxy.of_type(ConnectionClosed):  # then nothing crosses: idle
                await trio.sleep(0.02)
        [closed] = proxy.of_type(ConnectionClosed)
        assert "idle for 0.3 s" in closed.reason
        await client.stream.aclose()
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()
