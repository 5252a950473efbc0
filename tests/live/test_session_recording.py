"""Recording a live session: the file rebuilds the exact streams, survives truncation, is 0600,
and redaction happens before anything reaches disk."""

from __future__ import annotations

import os
import random
import stat
import struct
from pathlib import Path
from typing import Optional

import pytest
import trio

from golem_core.profiles import GOLEM
from golem_proxy.events import (
    BytesDiscarded,
    Direction,
    ExchangeCompleted,
    FrameSeen,
    FramingErrorSeen,
)
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.redact import REDACTED
from golem_proxy.recording.format import RecordingReader, read_recording
from tests.support.harness import (
    GolemClient,
    RunningProxy,
    connect,
    proxy_to_golem_upstream,
    stop_proxy,
)

pytestmark = pytest.mark.trio


def rebuild_streams(path: Path) -> dict[tuple[int, Direction], bytes]:
    recording = read_recording(str(path))
    streams: dict[tuple[int, Direction], bytearray] = {}
    for event in recording.events:
        if isinstance(event, FrameSeen):
            raw = recording.profile.frame_payload(event.payload)
        elif isinstance(event, (FramingErrorSeen, BytesDiscarded)):
            raw = event.raw
        else:
            continue
        streams.setdefault((event.conn, event.direction), bytearray()).extend(raw)
    return {key: bytes(value) for key, value in streams.items()}


async def recording_proxy(
    nursery: trio.Nursery, record: Path, options: Optional[ProxyOptions] = None
) -> tuple[RunningProxy, trio.SocketStream]:
    """A proxy recording to ``record`` in front of a GOLEM upstream, and a connection to it."""
    proxy = await proxy_to_golem_upstream(nursery, record=str(record), options=options)
    return proxy, await connect(proxy.listen)


async def run_session(
    tmp_path: Path, nursery: trio.Nursery, **options: object
) -> tuple[Path, bytes]:
    record = tmp_path / "session.jsonl"
    proxy_options = ProxyOptions(drain_timeout=0.5, **options)  # type: ignore[arg-type]
    proxy, stream = await recording_proxy(nursery, record, proxy_options)
    client = GolemClient(stream)
    sent = bytearray()
    requests = [
        {"id": "1", "method": "ping", "params": {}},
        {"id": "2", "method": "echo", "params": {"name": "Zürich ✓", "code": "secret()"}},
        {"id": "3", "method": "fail", "params": {}},
    ]
    for request in requests:
        sent += GOLEM.encode(request)
        await client.call(request)
    # A frame the canonical encoder would not produce (spacing, key order, escapes).
    odd = b'{"method":"echo","id":"4","params":{"x":"\\u00e9"}}'
    sent += struct.pack("!I", len(odd)) + odd
    await stream.send_all(struct.pack("!I", len(odd)) + odd)
    await client.receive()
    bad = struct.pack("!I", 6) + b"\xff\xfe{bad"
    sent += bad
    await stream.send_all(bad)
    await client.receive()
    await stream.aclose()
    await stop_proxy(proxy)
    return record, bytes(sent)


async def test_recording_rebuilds_every_byte(tmp_path: Path, nursery: trio.Nursery) -> None:
    record, sent = await run_session(tmp_path, nursery)
    assert stat.S_IMODE(os.stat(record).st_mode) == 0o600
    streams = rebuild_streams(record)
    assert streams[(1, Direction.C2S)] == sent
    recording = read_recording(str(record))
    exchanges = recording.exchanges()
    assert [e.method for e in exchanges] == ["ping", "echo", "fail", "echo", None]
    assert exchanges[1].request.message.obj["params"]["name"] == "Zürich ✓"
    # Readable: decoded messages are JSON objects in the file, not base64.
    text = record.read_text(encoding="utf-8")
    assert '"name": "Zürich ✓"' in text


async def test_truncated_recording_is_read_up_to_last_complete_line(
    tmp_path: Path, nursery: trio.Nursery
) -> None:
    record, _ = await run_session(tmp_path, nursery)
    data = record.read_bytes()
    header_end = data.index(b"\n") + 1
    full = len(read_recording(str(record)).events)
    rng = random.Random(7)
    for cut in sorted(rng.sample(range(header_end, len(data)), 25)):
        partial = tmp_path / f"cut-{cut}.jsonl"
        partial.write_bytes(data[:cut])
        with partial.open("rb") as stream:
            reader = RecordingReader(stream)
            events = list(reader)
        complete_lines = data[:cut].count(b"\n") - 1
        assert len(events) <= complete_lines
        assert len(events) <= full
        assert reader.truncated_tail == (not data[:cut].endswith(b"\n"))


async def test_redaction_happens_before_disk(tmp_path: Path, nursery: trio.Nursery) -> None:
    rules = ("echo:params.code", "echo:result.code")
    record, _ = await run_session(tmp_path, nursery, redact=rules)
    text = record.read_text(encoding="utf-8")
    assert "secret()" not in text
    recording = read_recording(str(record))
    echo = next(e for e in recording.exchanges() if e.method == "echo")
    assert echo.request.message.obj["params"]["code"] == REDACTED
    assert echo.request.redacted == ("echo:params.code",)
    assert echo.response.message.obj["result"]["code"] == REDACTED
    assert echo.response.redacted == ("echo:result.code",)
    assert echo.request.message.obj["params"]["name"] == "Zürich ✓"  # only what was asked
    assert isinstance(echo, ExchangeCompleted)


async def test_a_large_blob_is_elided_live_and_exact_on_disk(
    tmp_path: Path, nursery: trio.Nursery
) -> None:
    record = tmp_path / "blob.jsonl"
    proxy, stream = await recording_proxy(nursery, record)
    image = "iVBORw0KGgo" + "A" * (3 * 1024 * 1024)  # a 3 MiB base64 string
    reply = await GolemClient(stream).call({"id": 1, "method": "echo", "params": {"image": image}})
    assert reply.obj["result"]["image"] == image  # the client got every byte
    await stream.aclose()
    await stop_proxy(proxy)
    live = next(e for e in proxy.of_type(FrameSeen) if e.direction is Direction.S2C)
    assert live.elided == len(image)
    assert live.message.obj["result"]["image"] == f"<{len(image)} bytes elided>"
    recording = read_recording(str(record))
    echo = recording.exchanges()[0]
    assert echo.response.elided == 0
    assert echo.response.message.obj["result"]["image"] == image


async def test_a_lone_surrogate_in_an_id_is_recorded_not_fatal(
    tmp_path: Path, nursery: trio.Nursery
) -> None:
    record = tmp_path / "odd.jsonl"
    proxy, stream = await recording_proxy(nursery, record)
    odd = b'{"id": "\\ud800", "method": "ping\\udfff", "params": {}}'  # legal JSON text
    await stream.send_all(struct.pack("!I", len(odd)) + odd)
    await GolemClient(stream).receive()
    reply = await GolemClient(stream).call({"id": 2, "method": "ping", "params": {}})
    assert reply.id == 2  # the proxy is still relaying
    await stream.aclose()
    await stop_proxy(proxy)
    recording = read_recording(str(record))
    first = recording.events[1]
    assert isinstance(first, FrameSeen) and first.payload == odd
    assert first.message.id == "\ud800"
