"""Running a proxy session inside a test's nursery, and a small trio GOLEM client."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import trio

from golem_core.messages import Message, Role
from golem_core.profiles import GOLEM, Profile
from golem_proxy.events import Event
from golem_proxy.live.hub import Subscription
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.session import ProxySession, SessionConfig
from golem_proxy.net.addresses import Address, Route
from golem_proxy.net.framed_stream import FramedStream
from golem_proxy.testing.upstreams import GolemUpstream


@dataclass
class RunningProxy:
    session: ProxySession
    listen: Address
    events: list[Event] = field(default_factory=list)

    def of_type(self, kind: type) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]


async def start_proxy(
    nursery: trio.Nursery,
    upstream: Address,
    *,
    record: Optional[str] = None,
    profile: Profile = GOLEM,
    options: Optional[ProxyOptions] = None,
    listen: Optional[Address] = None,
) -> RunningProxy:
    config = SessionConfig(
        routes=[Route("main", listen or Address("127.0.0.1", 0), upstream)],
        profile=profile,
        options=options or ProxyOptions(drain_timeout=0.5),
        record_path=record,
    )
    session = ProxySession(config)
    running = RunningProxy(session, Address())

    async def collect(subscription: Subscription) -> None:
        async for batch in subscription.batches():
            running.events.extend(batch)

    session.add_consumer("test", collect, buffer=math.inf)
    bound = await nursery.start(session.run)
    running.listen = bound[0].listen
    return running


async def stop_proxy(running: RunningProxy) -> None:
    """Stop and wait until the tap and every consumer have seen everything."""
    running.session.stop()
    with trio.fail_after(10):
        await running.session.finished.wait()


async def connect(address: Address) -> trio.SocketStream:
    return await trio.open_tcp_stream(address.host, address.port)


class GolemClient:
    """Sequential GOLEM calls over one trio stream: each call returns the next frame the
    proxy sends back (whatever it answers: the tests check ids themselves)."""

    def __init__(self, stream: trio.SocketStream, profile: Profile = GOLEM) -> None:
        self.stream = stream
        self.profile = profile
        self.framed = FramedStream(stream, profile)

    async def call(self, obj: Any) -> Message:
        await self.framed.send(self.profile.encode(obj))
        return await self.receive()

    async def receive(self) -> Message:
        """The next frame, read as a response. Raises EOFError when the proxy closes first,
        FramingFailure for bad framing, TooSlowError after 10 s."""
        with trio.fail_after(10):
            frame = await self.framed.receive_frame()
        return self.profile.parse(frame.payload, Role.RESPONSE)


async def proxy_to_golem_upstream(
    nursery: trio.Nursery,
    *,
    record: Optional[str] = None,
    options: Optional[ProxyOptions] = None,
) -> RunningProxy:
    """A ``GolemUpstream`` served in ``nursery`` and a proxy session in front of it."""
    upstream = GolemUpstream()
    await nursery.start(upstream.serve)
    return await start_proxy(nursery, upstream.address, record=record, options=options)
