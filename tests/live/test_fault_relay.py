"""Each fault on the wire, through a real proxy on loopback: what the client and the upstream
really got, and that the recording rebuilds exactly that (`received_streams`)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, Optional

import pytest
import trio

from golem_core.framing import Frame, FrameErrorKind
from golem_core.messages import ErrorResponse, Message, Response, Role
from golem_core.profiles import GOLEM
from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.events import Direction, FaultInjected, FramingErrorSeen
from golem_proxy.live.faults import FaultPlan, received_streams
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.recording.format import read_recording
from golem_proxy.recording.streams import rebuild_streams
from golem_proxy.testing.upstreams import TracingUpstream
from tests.support.harness import RunningProxy, start_proxy, stop_proxy

pytestmark = pytest.mark.trio


class RawClient:
    """Keeps every byte it received; decodes frames from them."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.decoder = GOLEM.new_decoder()
        self.received = bytearray()
        self.chunks = 0
        self.sent = bytearray()
        self.ids = 0

    async def send(self, method: str, params: Optional[dict[str, Any]] = None) -> str:
        self.ids += 1
        ident = f"r{self.ids}"
        frame = GOLEM.encode({"id": ident, "method": method, "params": params or {}})
        self.sent += frame
        await self.stream.send_all(frame)
        return ident

    async def receive(self, timeout: float = 5) -> Optional[Message]:
        """The next response, or None when the proxy closed first (or nothing came in time)."""
        with trio.move_on_after(timeout):
            while True:
                for event in self.decoder.events():
                    if isinstance(event, Frame):
                        return GOLEM.parse(event.payload, Role.RESPONSE)
                try:
                    chunk = await self.stream.receive_some(65536)
                except trio.BrokenResourceError:
                    return None
                if not chunk:
                    return None
                self.chunks += 1
                self.received += chunk
                self.decoder.receive_data(chunk)
        return None


async def session(
    nursery: trio.Nursery, tmp_path: Path, *specs: str, seed: int = 1
) -> tuple[TracingUpstream, RunningProxy, Path]:
    upstream = TracingUpstream()
    await nursery.start(upstream.serve)
    record = tmp_path / "faults.jsonl"
    options = ProxyOptions(drain_timeout=0.5, faults=FaultPlan.parse(specs, seed))
    proxy = await start_proxy(nursery, upstream.address, record=str(record), options=options)
    return upstream, proxy, record


async def open_client(proxy: RunningProxy) -> RawClient:
    return RawClient(await trio.open_tcp_stream(proxy.listen.host, proxy.listen.port))


def assert_recording_matches(
    record: Path, upstream: TracingUpstream, clients: list[RawClient]
) -> None:
    recording = read_recording(str(record))
    streams = received_streams(recording.events, recording.profile)
    for conn, client in enumerate(clients, start=1):
        assert streams.get((conn, Direction.S2C), b"") == bytes(client.received)
        assert streams.get((conn, Direction.C2S), b"") == bytes(upstream.received[conn - 1])
    # The streams as sent (withheld requests in) still agree with what the proxy counted as
    # forwarded (`export --format streams` says "≠" where they do not).
    for stream in rebuild_streams(recording.events, recording.profile).values():
        assert stream.complete is not False, stream


async def test_error_answers_in_place_of_the_plugin(nursery: trio.Nursery, tmp_path: Path) -> None:
    upstream, proxy, record = await session(
        nursery, tmp_path, "error:code=TIMEOUT,message=busy,method=viewport.*"
    )
    client = await open_client(proxy)
    ident = await client.send("viewport.capture")
    reply = await client.receive()
    assert isinstance(reply, ErrorResponse)
    assert (reply.id, reply.error.code, reply.error.message) == (ident, "TIMEOUT", "busy")
    await client.send("echo", {"x": 1})
    assert isinstance(await client.receive(), Response)
    await client.stream.aclose()
    await upstream.wait_ended(0)
    await stop_proxy(proxy)
    assert b"viewport.capture" not in upstream.received[0]  # never forwarded
    assert_recording_matches(record, upstream, [client])
    exchanges = read_recording(str(record)).exchanges()
    assert [(e.method, e.error_code) for e in exchanges] == [
        ("viewport.capture", "TIMEOUT"),
        ("echo", None),
    ]
    flows = FlowTracker(GOLEM)
    for event in proxy.events:
        flows.apply(event)
    faulted = [f for f in flows.flows if f.faults]
    assert [(f.method, f.faults[0].fault) for f in faulted] == [("viewport.capture", "error")]


async def test_drop_swallows_only_the_matching_response(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    upstream, proxy, record = await session(nursery, tmp_path, "drop:method=scene.*")
    client = await open_client(proxy)
    await client.send("scene.delete_objects")
    assert await client.receive(timeout=0.3) is None  # the client's own timeout would fire
    await client.send("echo")
    assert isinstance(await client.receive(), Response)
    await client.stream.aclose()
    await upstream.wait_ended(0)
    await stop_proxy(proxy)
    assert b"scene.delete_objects" in upstream.received[0]  # the plugin did the work
    assert_recording_matches(record, upstream, [client])
    faults = proxy.of_type(FaultInjected)
    assert [(f.fault, f.direction, f.method) for f in faults] == [
        ("drop", Direction.S2C, "scene.delete_objects")
    ]


@pytest.mark.parametrize("when", ["before", "after"])
async def test_reset_before_or_after_the_method(
    nursery: trio.Nursery, tmp_path: Path, when: str
) -> None:
    upstream, proxy, record = await session(
        nursery, tmp_path, f"reset:when={when},method=scene.delete_objects"
    )
    client = await open_client(proxy)
    await client.send("echo")
    assert isinstance(await client.receive(), Response)
    await client.send("scene.delete_objects")
    assert await client.receive() is None
    with pytest.raises(trio.BrokenResourceError):  # a reset, not a clean close
        for _ in range(50):
            await client.stream.send_all(b"\0" * 4096)
            await trio.sleep(0.01)
    await upstream.wait_ended(0)
    await stop_proxy(proxy)
    executed = b"scene.delete_objects" in upstream.received[0]
    assert executed == (when == "after")
    assert_recording_matches(record, upstream, [client])


async def test_truncate_cuts_a_response_mid_payload_then_closes(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    upstream, proxy, record = await session(nursery, tmp_path, "truncate:at=0.5,dir=s2c")
    client = await open_client(proxy)
    await client.send("echo", {"text": "x" * 100})
    assert await client.receive() is None
    await upstream.wait_ended(0)
    await stop_proxy(proxy)
    full = upstream.sent[0]
    assert 4 < len(client.received) < len(full)
    assert bytes(client.received) == bytes(full[: len(client.received)])
    assert_recording_matches(record, upstream, [client])
    errors = [e for e in read_recording(str(record)).events if isinstance(e, FramingErrorSeen)]
    assert [e.kind for e in errors] == [FrameErrorKind.TRUNCATED]


async def test_corrupt_flips_payload_bytes_only(nursery: trio.Nursery, tmp_path: Path) -> None:
    upstream, proxy, record = await session(nursery, tmp_path, "corrupt:bytes=3,dir=c2s")
    client = await open_client(proxy)
    await client.send("echo", {"text": "y" * 200})
    await client.receive(timeout=0.5)
    await client.stream.aclose()
    await upstream.wait_ended(0)
    await stop_proxy(proxy)
    sent, got = bytes(client.sent), bytes(upstream.received[0])
    assert len(sent) == len(got) and sent[:4] == got[:4]  # the header is never touched
    assert sum(a != b for a, b in zip(sent, got)) == 3
    assert_recording_matches(record, upstream, [client])


async def test_slice_and_delay_keep_the_bytes(nursery: trio.Nursery, tmp_path: Path) -> None:
    upstream, proxy, record = await session(
        nursery, tmp_path, "slice:size=7,gap=2,dir=s2c", "delay:ms=150,method=echo,dir=s2c"
    )
    client = await open_client(proxy)
    start = trio.current_time()
    await client.send("echo", {"text": "z" * 60})
    reply = await client.receive()
    elapsed = trio.current_time() - start
    assert isinstance(reply, Response) and reply.result == {"text": "z" * 60}
    assert elapsed >= 0.15
    assert client.chunks > 5  # pieces 2 ms apart arrive as separate reads
    await client.stream.aclose()
    await upstream.wait_ended(0)
    await stop_proxy(proxy)
    assert bytes(client.received) == bytes(upstream.sent[0])
    assert_recording_matches(record, upstream, [client])
    exchange = read_recording(str(record)).exchanges()[0]
    assert exchange.latency >= 0.15  # the recording shows the delay the client saw


async def test_random_faults_recording_rebuilds_what_each_side_got(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    upstream, proxy, record = await session(
        nursery,
        tmp_path,
        "corrupt:p=0.2",
        "slice:size=3,p=0.2",
        "delay:ms=1,jitter=1,p=0.3",
        "error:code=TIMEOUT,p=0.2",
        "drop:p=0.1",
        seed=5,
    )
    clients = []
    for _ in range(3):
        client = await open_client(proxy)
        for n in range(30):
            await client.send("echo", {"n": n, "pad": "p" * n})
            await client.receive(timeout=0.2)
        await client.stream.aclose()
        clients.append(client)
    for index in range(3):
        await upstream.wait_ended(index)
    await stop_proxy(proxy)
    assert_recording_matches(record, upstream, clients)
    kinds = {f.fault for f in proxy.of_type(FaultInjected)}
    assert {"corrupt", "slice", "delay", "error", "drop"} <= kinds


async def test_routes_without_faults_stay_on_the_fast_path(nursery: trio.Nursery) -> None:
    """The fast path forwards a lone header at once; a faulted route waits for the frame."""
    upstream = TracingUpstream()
    await nursery.start(upstream.serve)
    for index, (faulted_route, forwarded) in enumerate((("gh", 4), ("main", 0))):
        plan = FaultPlan.parse([f"delay:ms=1,route={faulted_route}"], 1)
        options = ProxyOptions(drain_timeout=0.5, faults=plan)
        proxy = await start_proxy(nursery, upstream.address, options=options)  # route "main"
        stream = await trio.open_tcp_stream(proxy.listen.host, proxy.listen.port)
        await stream.send_all(struct.pack("!I", 10))
        with trio.fail_after(10):  # this proxy's upstream connection, and what it forwards
            while len(upstream.received) <= index or len(upstream.received[index]) < forwarded:
                await trio.sleep(0.01)
        await trio.sleep(0.2)  # and nothing more meanwhile: the faulted route holds the header
        assert len(upstream.received[index]) == forwarded
        await stream.aclose()
        await stop_proxy(proxy)
