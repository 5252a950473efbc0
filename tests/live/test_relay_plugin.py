"""Byte-exact relaying with the headless plugin upstream: frames written in random splits,
the plugin's real answers, and the recording rebuilding both streams."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from golem_core.framing import Frame
from golem_core.messages import ErrorResponse, Response, Role
from golem_core.profiles import GOLEM
from golem_proxy.events import BytesDiscarded, Direction, FrameSeen, FramingErrorSeen
from golem_proxy.net.addresses import Address
from golem_proxy.recording.format import read_recording
from tests.support.harness import connect, start_proxy, stop_proxy
from tests.support.plugin_fixture import in_process_plugin_fixture

pytestmark = pytest.mark.trio


plugin = in_process_plugin_fixture(seed=5, scope="module")


requests = st.lists(
    st.sampled_from(
        [
            {"method": "ping", "params": {}},
            {"method": "scene.get_document_info", "params": {}},
            {"method": "scene.list_layers", "params": {}},
            {"method": "geometry.create_point", "params": {"location": [1, 2, 3], "name": "é✓"}},
            {"method": "scene.get_object_info", "params": {"guid": "nope"}},
            {"method": "creation.create_hexagon", "params": {}},
        ]
    ),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(calls=requests, cuts=st.lists(st.integers(1, 40), min_size=1, max_size=8))
async def test_plugin_session_is_byte_exact_both_ways(
    plugin: Address, tmp_path_factory: pytest.TempPathFactory, calls: list[dict], cuts: list[int]
) -> None:
    record = tmp_path_factory.mktemp("rec") / "session.jsonl"
    sent = b"".join(GOLEM.encode({"id": n, **call}) for n, call in enumerate(calls))
    async with trio.open_nursery() as nursery:
        proxy = await start_proxy(nursery, plugin, record=str(record))
        stream = await connect(proxy.listen)
        offset = index = 0
        while offset < len(sent):  # the plugin must reassemble frames split anywhere
            size = cuts[index % len(cuts)]
            await stream.send_all(sent[offset : offset + size])
            offset += size
            index += 1
        received = bytearray()
        decoder = GOLEM.new_decoder()
        replies = []
        with trio.fail_after(20):
            while len(replies) < len(calls):
                chunk = await stream.receive_some(65536)
                assert chunk, "the proxy closed early"
                received += chunk
                decoder.receive_data(chunk)
                replies += [e for e in decoder.events() if isinstance(e, Frame)]
        await stream.aclose()
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()
    messages = [GOLEM.parse(f.payload, Role.RESPONSE) for f in replies]
    assert [m.id for m in messages] == list(range(len(calls)))
    assert all(isinstance(m, (Response, ErrorResponse)) for m in messages)
    rebuilt = rebuild(record)
    assert rebuilt[Direction.C2S] == sent
    assert rebuilt[Direction.S2C] == bytes(received)


def rebuild(path: Path) -> dict[Direction, bytes]:
    recording = read_recording(str(path))
    streams = {Direction.C2S: bytearray(), Direction.S2C: bytearray()}
    for event in recording.events:
        if isinstance(event, FrameSeen):
            streams[event.direction] += recording.profile.frame_payload(event.payload)
        elif isinstance(event, (FramingErrorSeen, BytesDiscarded)):
            streams[event.direction] += event.raw
    return {direction: bytes(data) for direction, data in streams.items()}


async def test_garbage_to_the_plugin_is_forwarded_and_reported(
    plugin: Address, nursery: trio.Nursery
) -> None:
    proxy = await start_proxy(nursery, plugin)
    stream = await connect(proxy.listen)
    garbage = struct.pack("!I", 11) + b"hello world"
    await stream.send_all(garbage)
    # The real plugin drops a connection whose frame is not JSON, unanswered; the proxy
    # forwards that close to the client.
    reply = b""
    with trio.fail_after(10):
        while chunk := await stream.receive_some(65536):
            reply += chunk
    assert reply == b""
    await stream.aclose()
    await stop_proxy(proxy)
    request = next(e for e in proxy.of_type(FrameSeen) if e.direction is Direction.C2S)
    assert request.payload == b"hello world"
