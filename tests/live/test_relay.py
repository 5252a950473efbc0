"""The relay on real loopback sockets: byte-exact both ways, half/abrupt close, failures."""

from __future__ import annotations

import os
import struct
import tempfile

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from golem_core.framing import FrameErrorKind
from golem_core.messages import ErrorResponse, Response
from golem_core.profiles import GOLEM
from golem_proxy.events import (
    BytesDiscarded,
    ConnectionClosed,
    Direction,
    EventsMissed,
    ExchangeCompleted,
    FrameSeen,
    FramingErrorSeen,
    UpstreamStatus,
    ViolationSeen,
)
from golem_proxy.live.hub import EventHub
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.relay import Proxy
from golem_proxy.live.tap import ObserveLimits
from golem_proxy.net.addresses import Address, Route, parse_address
from golem_proxy.net.listeners import connect as open_address
from golem_proxy.testing.upstreams import GolemUpstream
from tests.support.harness import (
    GolemClient,
    connect,
    proxy_to_golem_upstream,
    start_proxy,
    stop_proxy,
)
from tests.support.peers import EchoUpstream

pytestmark = pytest.mark.trio


def frame(obj: object) -> bytes:
    return GOLEM.encode(obj)


async def receive_exactly(stream: trio.SocketStream, size: int) -> bytes:
    data = bytearray()
    with trio.fail_after(10):
        while len(data) < size:
            chunk = await stream.receive_some(65536)
            if not chunk:
                break
            data += chunk
    return bytes(data)


async def test_golem_exchanges_are_paired_and_reported(nursery: trio.Nursery) -> None:
    proxy = await proxy_to_golem_upstream(nursery)
    stream = await connect(proxy.listen)
    client = GolemClient(stream)
    assert isinstance(await client.call({"id": "a", "method": "ping", "params": {}}), Response)
    reply = await client.call({"id": 2, "method": "echo", "params": {"text": "日本"}})
    assert isinstance(reply, Response) and reply.result == {"text": "日本"}
    failed = await client.call({"id": 3, "method": "fail", "params": {}})
    assert isinstance(failed, ErrorResponse) and failed.error.code == "INTERNAL_ERROR"
    await stream.aclose()
    await stop_proxy(proxy)
    exchanges = proxy.of_type(ExchangeCompleted)
    assert [e.method for e in exchanges] == ["ping", "echo", "fail"]
    assert [e.request.message.id for e in exchanges] == ["a", 2, 3]
    assert all(e.latency >= 0 for e in exchanges)
    closed = proxy.of_type(ConnectionClosed)
    assert len(closed) == 1 and closed[0].reason == "client closed" and not closed[0].abnormal


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    payloads=st.lists(st.binary(max_size=300), min_size=1, max_size=8),
    garbage=st.binary(max_size=40),
    cuts=st.lists(st.integers(min_value=1, max_value=97), min_size=1, max_size=12),
)
async def test_bytes_forwarded_exactly_under_random_chunking(
    payloads: list[bytes], garbage: bytes, cuts: list[int]
) -> None:
    stream_bytes = b"".join(struct.pack("!I", len(p)) + p for p in payloads) + garbage
    async with trio.open_nursery() as nursery:
        upstream = EchoUpstream()
        await nursery.start(upstream.serve)
        # Garbage may declare a frame of any size up to the cap: observe up to the cap, so the
        # events hold every byte (a frame over the observation limit is a digest only).
        whole = ProxyOptions(drain_timeout=0.5, observe=ObserveLimits(frame=64 * 1024 * 1024))
        proxy = await start_proxy(nursery, upstream.address, options=whole)
        client = await connect(proxy.listen)
        offset = 0
        index = 0
        while offset < len(stream_bytes):
            size = cuts[index % len(cuts)]
            await client.send_all(stream_bytes[offset : offset + size])
            offset += size
            index += 1
        echoed = await receive_exactly(client, len(stream_bytes))
        await client.send_eof()
        await upstream.wait_eof()
        await client.aclose()
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()
    assert bytes(upstream.received[0]) == stream_bytes
    assert echoed == stream_bytes
    rebuilt = b"".join(
        GOLEM.frame_payload(e.payload) if isinstance(e, FrameSeen) else e.raw
        for e in proxy.events
        if isinstance(e, (FrameSeen, FramingErrorSeen, BytesDiscarded))
        and e.direction is Direction.C2S
    )
    assert rebuilt == stream_bytes


async def test_oversized_frame_is_reported_and_still_forwarded(nursery: trio.Nursery) -> None:
    upstream = EchoUpstream(echo=False)
    await nursery.start(upstream.serve)
    proxy = await start_proxy(nursery, upstream.address, options=ProxyOptions(cap=1024))
    client = await connect(proxy.listen)
    big = struct.pack("!I", 5000) + b"x" * 5000
    after = frame({"id": 1, "method": "ping", "params": {}})
    await client.send_all(big + after)
    await client.send_eof()
    await upstream.wait_eof()
    await stop_proxy(proxy)
    assert bytes(upstream.received[0]) == big + after
    errors = proxy.of_type(FramingErrorSeen)
    assert len(errors) == 1 and errors[0].kind is FrameErrorKind.OVERSIZED
    assert errors[0].recoverable and errors[0].declared_length == 5000
    assert sum(len(d.raw) for d in proxy.of_type(BytesDiscarded)) == 5000
    # Decoding resynchronised: the frame after the oversized one was decoded.
    frames = [f for f in proxy.of_type(FrameSeen) if f.direction is Direction.C2S]
    assert [f.method for f in frames] == ["ping"]
    assert any(v.violation.rule == "golem.frame.oversized" for v in proxy.of_type(ViolationSeen))


async def test_enforce_limits_closes_on_oversized_frame(nursery: trio.Nursery) -> None:
    upstream = EchoUpstream(echo=False)
    await nursery.start(upstream.serve)
    options = ProxyOptions(cap=1024, enforce_limits=True, drain_timeout=0.5)
    proxy = await start_proxy(nursery, upstream.address, options=options)
    client = await connect(proxy.listen)
    ok = frame({"id": 1, "method": "ping", "params": {}})
    await client.send_all(ok)
    await upstream.wait_received(len(ok))
    await client.send_all(struct.pack("!I", 5000) + b"x" * 100)
    with trio.fail_after(10):
        assert await client.receive_some(100) == b""
    await upstream.wait_eof()
    await stop_proxy(proxy)
    assert bytes(upstream.received[0]) == ok  # the oversized frame never reached upstream
    closed = proxy.of_type(ConnectionClosed)
    assert "enforce-limits" in closed[0].reason and closed[0].abnormal


async def test_malformed_frame_is_reported_and_forwarded(nursery: trio.Nursery) -> None:
    proxy = await proxy_to_golem_upstream(nursery)
    stream = await connect(proxy.listen)
    client = GolemClient(stream)
    await stream.send_all(struct.pack("!I", 9) + b"{not json")
    reply = await client.receive()
    assert isinstance(reply, ErrorResponse) and reply.id is None and reply.error.code == -32603
    await stream.aclose()
    await stop_proxy(proxy)
    rules = [v.violation.rule for v in proxy.of_type(ViolationSeen)]
    assert "golem.message.malformed" in rules
    exchange = proxy.of_type(ExchangeCompleted)[0]
    assert exchange.request.payload == b"{not json"  # paired through the null id


async def test_half_close_lets_the_response_through(nursery: trio.Nursery) -> None:
    upstream = GolemUpstream(delay=0.05)
    await nursery.start(upstream.serve)
    proxy = await start_proxy(nursery, upstream.address)
    stream = await connect(proxy.listen)
    await stream.send_all(frame({"id": 1, "method": "echo", "params": {"a": 1}}))
    await stream.send_eof()  # we are done sending, but still want the answer
    reply = await GolemClient(stream).receive()
    assert isinstance(reply, Response) and reply.result == {"a": 1}
    await stream.aclose()
    await stop_proxy(proxy)


async def test_fifty_concurrent_connections(nursery: trio.Nursery) -> None:
    proxy = await proxy_to_golem_upstream(nursery)

    async def session(number: int) -> None:
        stream = await connect(proxy.listen)
        client = GolemClient(stream)
        for call in range(5):
            reply = await client.call(
                {"id": f"{number}-{call}", "method": "echo", "params": {"n": number, "c": call}}
            )
            assert isinstance(reply, Response) and reply.result == {"n": number, "c": call}
        await stream.aclose()

    async with trio.open_nursery() as clients:
        for number in range(50):
            clients.start_soon(session, number)
    await stop_proxy(proxy)
    exchanges = proxy.of_type(ExchangeCompleted)
    assert len(exchanges) == 250
    for exchange in exchanges:
        assert exchange.request.message.id == exchange.response.message.id
    assert not proxy.of_type(ViolationSeen)
    assert len({e.conn for e in exchanges}) == 50


async def test_upstream_refused_stops_the_route_listening_until_it_answers(
    nursery: trio.Nursery,
) -> None:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    dead = Address("127.0.0.1", listeners[0].socket.getsockname()[1])
    await listeners[0].aclose()  # nothing listens there any more
    proxy = await start_proxy(nursery, dead)
    client = await connect(proxy.listen)
    with trio.fail_after(10):
        with pytest.raises(trio.BrokenResourceError):
            # The first client sees a reset, as when the plugin is not running.
            await client.send_all(frame({"id": 1, "method": "ping", "params": {}}))
            await trio.sleep(0.05)
            await client.send_all(b"x")
            await client.receive_some(10)
    await client.aclose()
    # From then on the route is refused, as the plugin's own port is: no accept and reset
    # for a reconnecting client to retry.
    with pytest.raises(OSError):
        await connect(proxy.listen)
    (down,) = proxy.of_type(UpstreamStatus)
    assert not down.up and "refuses connections" in down.detail
    # The upstream comes back on its address: the route listens again on its own.
    upstream = EchoUpstream()
    back = await trio.open_tcp_listeners(dead.port, host="127.0.0.1")
    nursery.start_soon(trio.serve_listeners, upstream._handle, back)
    with trio.fail_after(10):
        while True:
            try:
                client = await connect(proxy.listen)
                break
            except OSError:
                await trio.sleep(0.02)
        await client.send_all(b"hello")
        assert await client.receive_some(10) == b"hello"
    await client.aclose()
    await stop_proxy(proxy)
    assert [change.up for change in proxy.of_type(UpstreamStatus)] == [False, True]
    closed = proxy.of_type(ConnectionClosed)
    assert closed[0].abnormal and "unreachable" in closed[0].reason
    assert len(closed) == 2 and not closed[1].abnormal


async def test_upstream_dying_mid_frame_closes_client(nursery: trio.Nursery) -> None:
    async def half_answer(stream: trio.SocketStream) -> None:
        await stream.receive_some(100)
        await stream.send_all(struct.pack("!I", 100) + b'{"id": 1, "res')  # then die
        stream.socket.setsockopt(
            trio.socket.SOL_SOCKET, trio.socket.SO_LINGER, struct.pack("ii", 1, 0)
        )
        stream.socket.close()

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    nursery.start_soon(trio.serve_listeners, half_answer, listeners)
    upstream = Address("127.0.0.1", listeners[0].socket.getsockname()[1])
    proxy = await start_proxy(nursery, upstream)
    client = await connect(proxy.listen)
    await client.send_all(frame({"id": 1, "method": "ping", "params": {}}))
    received = bytearray()
    with trio.fail_after(10):
        try:
            while chunk := await client.receive_some(1000):
                received += chunk
        except trio.BrokenResourceError:
            pass
    assert received.startswith(struct.pack("!I", 100))
    await client.aclose()
    await stop_proxy(proxy)
    closed = proxy.of_type(ConnectionClosed)[0]
    assert closed.abnormal and "upstream" in closed.reason
    truncated = [e for e in proxy.of_type(FramingErrorSeen) if e.kind is FrameErrorKind.TRUNCATED]
    assert truncated and truncated[0].direction is Direction.S2C


async def test_client_dying_mid_frame_is_reported(nursery: trio.Nursery) -> None:
    upstream = EchoUpstream(echo=False)
    await nursery.start(upstream.serve)
    proxy = await start_proxy(nursery, upstream.address)
    client = await connect(proxy.listen)
    partial = struct.pack("!I", 50) + b'{"id": 1'
    await client.send_all(partial)
    await upstream.wait_received(len(partial))
    client.socket.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.socket.close()
    await upstream.wait_eof()
    await stop_proxy(proxy)
    assert bytes(upstream.received[0]) == partial
    closed = proxy.of_type(ConnectionClosed)[0]
    assert closed.abnormal and "client" in closed.reason
    truncated = [e for e in proxy.of_type(FramingErrorSeen) if e.kind is FrameErrorKind.TRUNCATED]
    assert truncated and truncated[0].raw == partial


async def test_slow_consumer_is_told_what_it_missed(nursery: trio.Nursery) -> None:
    proxy = await proxy_to_golem_upstream(nursery)
    slow = proxy.session.hub.subscribe("slow", buffer=3)
    stream = await connect(proxy.listen)
    client = GolemClient(stream)
    for number in range(20):
        await client.call({"id": number, "method": "echo", "params": {}})
    await stream.aclose()
    with trio.fail_after(10):  # every event published while the session runs
        while len(proxy.of_type(ExchangeCompleted)) < 20 or not proxy.of_type(ConnectionClosed):
            await trio.sleep(0.01)
    # (A stopping session widens every queue for what it still publishes: an event published
    # after the stop began would rightly get in, after the note of what was missed.)
    await stop_proxy(proxy)
    received = []
    async for event in slow.receive_channel:
        received.append(event)
    # The buffer (the relay never waited for this consumer), then what it missed since, told
    # at the end of the stream (a consumer is never left not knowing).
    assert len(received) == 4
    missed = received[-1]
    assert isinstance(missed, EventsMissed) and missed.count == slow.total_missed > 0
    assert len(proxy.of_type(ExchangeCompleted)) == 20


async def test_stop_drains_a_call_in_flight_and_refuses_new_clients(
    nursery: trio.Nursery,
) -> None:
    upstream = GolemUpstream(delay=0.3)
    await nursery.start(upstream.serve)
    proxy = await start_proxy(nursery, upstream.address, options=ProxyOptions(drain_timeout=5))
    stream = await connect(proxy.listen)
    client = GolemClient(stream)
    await stream.send_all(frame({"id": 1, "method": "echo", "params": {"late": True}}))
    with trio.fail_after(10):  # forwarded (decoded after it is): the call is in flight
        while not proxy.of_type(FrameSeen):
            await trio.sleep(0.01)
    proxy.session.stop()  # as Ctrl-C does
    reply = await client.receive()  # the answer still comes through the draining proxy
    assert isinstance(reply, Response) and reply.result == {"late": True}
    with pytest.raises(OSError):
        await connect(proxy.listen)
    await stream.aclose()
    with trio.fail_after(10):
        await proxy.session.finished.wait()
    closed = proxy.of_type(ConnectionClosed)
    assert [c.reason for c in closed] == ["client closed"]


async def test_a_proxy_bound_but_not_serving_refuses_clients_and_leaves_nothing() -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "s.sock")
        routes = [
            Route("main", Address("127.0.0.1", 0), Address("127.0.0.1", 9)),
            Route("gh", parse_address(f"unix:{path}"), Address("127.0.0.1", 9)),
        ]
        proxy = Proxy(routes, GOLEM, EventHub())
        tcp, unix = await proxy.bind()
        assert tcp.listen.port != 0  # the banner and the header name the real port already
        # Refused, as with no proxy at all, rather than accepted and kept waiting until the
        # session starts (its observing process may take a second).
        with pytest.raises(ConnectionRefusedError):
            await open_address(tcp.listen)
        with pytest.raises(OSError):
            await open_address(unix.listen)
        async with trio.open_nursery() as nursery:
            await nursery.start(proxy.serve)
            for bound in (tcp, unix):
                stream = await open_address(bound.listen)
                await stream.aclose()
            proxy.stop()
        # A session that fails to start leaves no socket file, staged or not.
        second = Proxy(routes[1:], GOLEM, EventHub())
        await second.bind()
        await second.unbind()
        assert os.listdir(directory) == []
