"""Forwarding never shares fate with observation: hostile traffic, a stuck or failing observer,
and the memory every attack of the kind could pin are each bounded, while every byte is still
forwarded exactly and other connections keep working."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import struct
from pathlib import Path

import pytest
import trio

from golem_core.profiles import GOLEM, JSONRPC_NDJSON
from golem_proxy.events import (
    ConnectionClosed,
    ExchangeCompleted,
    FrameSeen,
    GapReason,
    ObservationLost,
)
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.tap import ConnectionTap, ObserveLimits
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.upstreams import GolemUpstream
from tests.support.harness import GolemClient, connect, start_proxy, stop_proxy
from tests.support.peers import EchoUpstream

pytestmark = pytest.mark.trio

MIB = 1024 * 1024


def frame(obj: object) -> bytes:
    return GOLEM.encode(obj)


async def wait_for(predicate: object, what: str, seconds: float = 20) -> None:
    with trio.fail_after(seconds):
        while not predicate():  # type: ignore[operator]
            await trio.sleep(0.01)


async def test_a_frame_over_the_observation_limit_is_forwarded_whole_and_digested(
    tmp_path: Path,
) -> None:
    record = tmp_path / "big.jsonl"
    payload = b"[" + b"[]," * (20 * MIB // 3) + b"[]]"
    big = struct.pack("!I", len(payload)) + payload
    async with trio.open_nursery() as nursery:
        upstream = EchoUpstream(echo=False)
        await nursery.start(upstream.serve)
        options = ProxyOptions(drain_timeout=1.0, observe=ObserveLimits(frame=4 * MIB))
        proxy = await start_proxy(nursery, upstream.address, record=str(record), options=options)
        big_stream = await connect(proxy.listen)
        await big_stream.send_all(big)
        # Another connection is served meanwhile.
        other = await connect(proxy.listen)
        ping = frame({"id": "x", "method": "ping", "params": {}})
        await other.send_all(ping)
        await other.send_eof()
        assert await upstream.wait_eof(1) == ping
        await big_stream.send_eof()
        assert await upstream.wait_eof(0) == big
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()
    lost = proxy.of_type(ObservationLost)
    assert [gap.reason for gap in lost] == [GapReason.FRAME_TOO_LARGE]
    assert lost[0].size == len(big)
    assert lost[0].digest == "sha256:" + hashlib.sha256(payload).hexdigest()
    assert lost[0].header == big[:4]
    recorded = [e for e in read_recording(str(record)).events if isinstance(e, ObservationLost)]
    assert [dataclasses.replace(g, t=0) for g in recorded] == [
        dataclasses.replace(g, t=0) for g in lost
    ]


async def test_an_upstream_that_never_answers_pins_bounded_memory() -> None:
    request = frame({"id": 0, "method": "scene.create_layer", "params": {"x": "y" * MIB}})
    limits = ObserveLimits(pending=8, pending_bytes=4 * MIB)
    async with trio.open_nursery() as nursery:
        upstream = EchoUpstream(echo=False)
        await nursery.start(upstream.serve)
        options = ProxyOptions(drain_timeout=1.0, observe=limits)
        proxy = await start_proxy(nursery, upstream.address, options=options)
        stream = await connect(proxy.listen)
        for _ in range(40):
            await stream.send_all(request)
        await stream.send_eof()
        received = await upstream.wait_eof(0)
        assert received == request * 40
        observer = proxy.session.proxy.observer
        await wait_for(lambda: not observer.backlog, "the observer caught up")
        assert observer.held <= 4 * MIB + len(request)
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()
    # Every request past the limits is let go: evicted by the pairing, or never decoded when
    # an observer loaded by other work sheds (a `behind` gap, its size in bytes).
    gaps = proxy.of_type(ObservationLost)
    evicted = sum(g.size for g in gaps if g.reason is GapReason.EVICTED)
    shed = sum(g.size for g in gaps if g.reason is GapReason.BEHIND) // len(request)
    assert evicted + shed >= 40 - 4 - 1  # a shed span may end inside a request


async def test_jsonrpc_notifications_are_forwarded_and_never_held() -> None:
    taps: list[ConnectionTap] = []
    note = b'{"jsonrpc":"2.0","method":"tick","params":{}}\n'
    async with trio.open_nursery() as nursery:
        upstream = EchoUpstream(echo=False)
        await nursery.start(upstream.serve)
        proxy = await start_proxy(nursery, upstream.address, profile=JSONRPC_NDJSON)
        stream = await connect(proxy.listen)
        await stream.send_all(note * 5000)
        await stream.send_eof()
        assert await upstream.wait_eof(0) == note * 5000
        observer = proxy.session.proxy.observer
        await wait_for(lambda: len(proxy.of_type(FrameSeen)) == 5000, "every frame observed")
        taps = list(observer._tap_held)
        assert all(tap.outstanding() == 0 for tap in taps)
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()


async def test_a_small_budget_sheds_and_records_the_gap_while_forwarding_stays_exact() -> None:
    zero = struct.pack("!I", 0)
    burst = zero * 200_000
    async with trio.open_nursery() as nursery:
        upstream = EchoUpstream(echo=False)
        await nursery.start(upstream.serve)
        options = ProxyOptions(drain_timeout=1.0, observer_memory=64 * 1024)
        proxy = await start_proxy(nursery, upstream.address, options=options)
        stream = await connect(proxy.listen)
        for _ in range(5):
            await stream.send_all(burst)
        await stream.send_eof()
        assert await upstream.wait_eof(0) == burst * 5
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()
    behind = [g for g in proxy.of_type(ObservationLost) if g.reason is GapReason.BEHIND]
    assert behind, "a 64 KiB budget cannot hold a megabyte burst"
    assert proxy.session.proxy.observer.shed_bytes > 0
    assert all("observation lost" in gap.detail for gap in behind)
    closed = proxy.of_type(ConnectionClosed)
    assert closed and closed[0].bytes_c2s == len(burst) * 5


async def test_decoding_resumes_at_the_next_frame_after_a_gap() -> None:
    calls = [{"id": str(n), "method": "scene.list_layers", "params": {}} for n in range(400)]
    async with trio.open_nursery() as nursery:
        upstream = GolemUpstream()
        await nursery.start(upstream.serve)
        options = ProxyOptions(drain_timeout=1.0, observer_memory=4096)
        proxy = await start_proxy(nursery, upstream.address, options=options)
        stream = await connect(proxy.listen)
        client = GolemClient(stream)
        # A pipelined burst overflows the tiny budget, then calls one at a time are observed.
        await stream.send_all(b"".join(frame(call) for call in calls))
        for _ in calls:
            await client.receive()
        observer = proxy.session.proxy.observer
        await wait_for(lambda: not observer.backlog, "caught up")
        for n in range(5):
            answer = await client.call({"id": f"after-{n}", "method": "ping", "params": {}})
            assert answer.id == f"after-{n}"
        await stream.aclose()
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()
    exchanges = proxy.of_type(ExchangeCompleted)
    after = [e for e in exchanges if str(e.request.message.id).startswith("after-")]
    assert len(after) == 5
    assert any(g.reason is GapReason.BEHIND for g in proxy.of_type(ObservationLost))


async def test_a_decoding_failure_costs_that_connection_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = GOLEM.check_message

    def broken_check(message: object, payload: bytes = b"") -> object:
        if b"boom" in payload:
            raise RuntimeError("a bug in a contract check")
        return original(message, payload)  # type: ignore[arg-type]

    monkeypatch.setattr(GOLEM, "check_message", broken_check)
    async with trio.open_nursery() as nursery:
        upstream = GolemUpstream()
        await nursery.start(upstream.serve)
        proxy = await start_proxy(nursery, upstream.address)
        victim = GolemClient(await connect(proxy.listen))
        other = GolemClient(await connect(proxy.listen))
        answer = await victim.call({"id": "boom", "method": "ping", "params": {}})
        assert answer.id == "boom"  # forwarded, though its inspection broke
        answer = await victim.call({"id": "next", "method": "ping", "params": {}})
        assert answer.id == "next"
        for n in range(3):
            answer = await other.call({"id": f"o{n}", "method": "ping", "params": {}})
            assert answer.id == f"o{n}"
        await victim.stream.aclose()
        await other.stream.aclose()
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()
    failed = [g for g in proxy.of_type(ObservationLost) if g.reason is GapReason.OBSERVER_FAILED]
    assert len(failed) == 1 and "a bug in a contract check" in failed[0].detail
    observed = {e.request.message.id for e in proxy.of_type(ExchangeCompleted)}
    assert {"o0", "o1", "o2"} <= observed
    assert "next" not in observed


async def test_redaction_of_a_message_with_a_lone_surrogate_keeps_observing() -> None:
    surrogate = b'{"id": "s", "method": "m", "params": {"code": "x\\ud800y"}}'
    async with trio.open_nursery() as nursery:
        upstream = GolemUpstream()
        await nursery.start(upstream.serve)
        options = ProxyOptions(drain_timeout=1.0, redact=("params.code",))
        proxy = await start_proxy(nursery, upstream.address, options=options)
        client = GolemClient(await connect(proxy.listen))
        await client.stream.send_all(struct.pack("!I", len(surrogate)) + surrogate)
        await client.receive()
        for n in range(4):
            await client.call({"id": str(n), "method": "ping", "params": {}})
        await client.stream.aclose()
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()
    assert len(proxy.of_type(ExchangeCompleted)) == 5
    redacted = proxy.of_type(FrameSeen)[0]
    assert json.loads(redacted.payload)["params"]["code"] != "x\ud800y"
    assert not proxy.of_type(ObservationLost)


async def test_an_upstream_that_closed_resets_a_client_that_sends_again() -> None:
    async with trio.open_nursery() as nursery:
        upstream = EchoUpstream(echo=False, close_after=1)
        await nursery.start(upstream.serve)
        proxy = await start_proxy(nursery, upstream.address)
        stream = await connect(proxy.listen)
        await stream.send_all(b"x")
        with trio.fail_after(10):
            assert await stream.receive_some(10) == b""  # the upstream closed: a FIN
        # As with the plugin itself: the call sent now sees the end of stream, and the
        # client's next send fails (a reset), which is what makes a client reconnect.
        await stream.send_all(frame({"id": "late", "method": "ping", "params": {}}))
        with trio.fail_after(10):
            assert await stream.receive_some(10) == b""
        with trio.fail_after(10), pytest.raises(trio.BrokenResourceError):
            while True:
                await stream.send_all(b"\x00")
                await trio.sleep(0.01)
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()
    closed = proxy.of_type(ConnectionClosed)
    assert "reset" in closed[0].reason


async def test_many_connections_stopping_one_byte_short_stay_within_the_budget() -> None:
    declared = 2 * MIB
    almost = struct.pack("!I", declared) + b"[" + b"0," * ((declared - 2) // 2)
    budget = 8 * MIB
    async with trio.open_nursery() as nursery:
        upstream = EchoUpstream(echo=False)
        await nursery.start(upstream.serve)
        options = ProxyOptions(drain_timeout=1.0, observer_memory=budget)
        proxy = await start_proxy(nursery, upstream.address, options=options)
        observer = proxy.session.proxy.observer
        peak = 0
        streams = []
        for _ in range(16):
            stream = await connect(proxy.listen)
            await stream.send_all(almost)
            streams.append(stream)
            peak = max(peak, observer.used)
        for index in range(16):
            await upstream.wait_received(len(almost), index)
            peak = max(peak, observer.used)
        await wait_for(lambda: not observer.backlog, "the observer caught up")
        peak = max(peak, observer.used)
        assert peak <= budget + 1024 * 1024  # at most one read past the budget
        assert all(bytes(received) == almost for received in upstream.received)
        for stream in streams:
            await stream.aclose()
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()
    assert any(g.reason is GapReason.BEHIND for g in proxy.of_type(ObservationLost))
