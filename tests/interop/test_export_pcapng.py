"""``export --format pcapng``: tshark reads every capture without complaint and its TCP
reassembly gives exactly the bytes ``export --format streams`` rebuilds."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.events import (
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    FrameSeen,
    GapReason,
    ObservationLost,
)
from golem_proxy.interop.pcapng import Endpoint, _checksum, tcp_packet
from golem_proxy.recording.format import RouteInfo
from golem_proxy.recording.samples import samples
from tests.support.cli_helpers import run_cli
from tests.support.trace_builder import TapSimulator, golem_session, write_recording
from tests.support.tshark_helpers import follow, needs_tshark, tshark

SAMPLES = list(samples().values())  # the shipped samples, not a demo's recordings
CHECKSUMS = ["-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE"]
COMPLAINTS = "_ws.malformed || _ws.expert.severity >= warning || tcp.checksum.status == 0"


def export_both(recording: Path, tmp_path: Path) -> tuple[Path, list[tuple[bytes, bytes]]]:
    """The pcapng export of ``recording`` and its streams export, per connection."""
    capture = tmp_path / "x.pcapng"
    done = run_cli("export", str(recording), "--format", "pcapng", "--out", str(capture))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    streams = tmp_path / "streams"
    done = run_cli("export", str(recording), "--format", "streams", "--out", str(streams))
    assert done.returncode in (0, 1), done.stderr
    index = json.loads((streams / "index.json").read_text())
    conns = sorted({entry["conn"] for entry in index["streams"]})
    rebuilt = [
        tuple((streams / f"conn-{conn:04d}-{d}.bin").read_bytes() for d in ("c2s", "s2c"))
        for conn in conns
    ]
    return capture, rebuilt  # type: ignore[return-value]


def assert_clean(capture: Path) -> None:
    """tshark finds no malformed packet, no warning, no bad checksum."""
    out = tshark("-r", str(capture), *CHECKSUMS, "-Y", COMPLAINTS)
    assert out.strip() == "", out


@needs_tshark
@pytest.mark.parametrize("sample", SAMPLES, ids=lambda path: path.stem)
def test_tshark_reassembles_every_sample_exactly(sample: Path, tmp_path: Path) -> None:
    capture, rebuilt = export_both(sample, tmp_path)
    assert stat.S_IMODE(capture.stat().st_mode) == 0o600
    assert follow(capture) == [pair for pair in rebuilt if any(pair)]
    assert_clean(capture)


@needs_tshark
def test_framing_errors_redaction_and_timestamps(tmp_path: Path) -> None:
    tap = golem_session()
    recording = tmp_path / "session.jsonl"
    recording.write_bytes(write_recording(tap.events))
    capture, rebuilt = export_both(recording, tmp_path)
    assert follow(capture) == [pair for pair in rebuilt if any(pair)]
    fed = [(tap.fed(conn, Direction.C2S), tap.fed(conn, Direction.S2C)) for conn in tap.conns]
    assert follow(capture) == [pair for pair in fed if any(pair)]
    times = tshark("-r", str(capture), "-T", "fields", "-e", "frame.time_epoch").split()
    start = 1704067200.0  # the builder's started_at, 2024-01-01T00:00:00Z
    assert float(times[0]) == pytest.approx(start + tap.events[0].t, abs=1e-6)
    assert float(times[-1]) == pytest.approx(start + tap.events[-1].t, abs=1e-6)
    assert_clean(capture)


@needs_tshark
def test_a_large_frame_is_split_into_segments_that_fit(tmp_path: Path) -> None:
    tap = TapSimulator(GOLEM)
    tap.open(1)
    big = {"id": 1, "method": "scene.import", "params": {"blob": "x" * 200_000}}
    tap.request(1, big, chunk=4096)
    tap.respond(1, {"id": 1, "result": {"ok": True}, "error": None})
    tap.close(1)
    recording = tmp_path / "big.jsonl"
    recording.write_bytes(write_recording(tap.events))
    capture, _ = export_both(recording, tmp_path)
    lengths = tshark("-r", str(capture), "-T", "fields", "-e", "tcp.len").split()
    assert max(int(n) for n in lengths) <= 65_000
    assert follow(capture) == [(tap.fed(1, Direction.C2S), tap.fed(1, Direction.S2C))]
    assert_clean(capture)


def _frame(conn: int, direction: Direction, index: int, t: float, obj: object) -> FrameSeen:
    payload = GOLEM.encode_payload(obj)
    role = None
    message = GOLEM.parse(payload, role)
    return FrameSeen(
        conn=conn,
        route="main",
        direction=direction,
        index=index,
        t=t,
        size=4 + len(payload),
        payload=payload,
        message=message,
    )


@needs_tshark
def test_ipv6_unix_routes_gaps_and_resets(tmp_path: Path) -> None:
    request = {"id": 1, "method": "ping", "params": {}}
    answer = {"id": 1, "result": {}, "error": None}
    events = [
        ConnectionOpened(conn=1, route="main", client="[::1]:50001", upstream="[::1]:9876", t=0.0),
        _frame(1, Direction.C2S, 0, 0.1, request),
        ObservationLost(
            conn=1, route="main", direction=Direction.S2C, t=0.2, reason=GapReason.BEHIND, size=1000
        ),
        _frame(1, Direction.S2C, 0, 0.3, answer),
        ConnectionClosed(
            conn=1, route="main", reason="reset", t=0.4, bytes_c2s=0, bytes_s2c=0, abnormal=True
        ),
        ConnectionOpened(
            conn=2, route="gh", client="unix:", upstream="unix:/tmp/golem-gh.sock", t=1.0
        ),
        _frame(2, Direction.C2S, 0, 1.1, request),
        ConnectionClosed(
            conn=2, route="gh", reason="client closed", t=1.2, bytes_c2s=0, bytes_s2c=0
        ),
    ]
    routes = [
        RouteInfo("main", "[::1]:19876", "[::1]:9876"),
        RouteInfo("gh", "unix:/tmp/proxy.sock", "unix:/tmp/golem-gh.sock"),
    ]
    recording = tmp_path / "mixed.jsonl"
    recording.write_bytes(write_recording(events, routes=routes))
    capture, _ = export_both(recording, tmp_path)
    fields = ["-T", "fields", "-e", "tcp.stream", "-e", "ipv6.src", "-e", "ip.src"]
    fields += ["-e", "tcp.dstport", "-e", "tcp.flags.reset", "-e", "tcp.analysis.lost_segment"]
    rows = [line.split("\t") for line in tshark("-r", str(capture), *fields).splitlines()]
    first = [row for row in rows if row[0] == "0"]
    second = [row for row in rows if row[0] == "1"]
    assert {row[1] for row in first} == {"::1"}
    assert first[-1][4] in ("1", "True")  # the abnormal close is a reset
    assert any(row[5] for row in first)  # the unobserved bytes: a segment not captured
    assert {row[2] for row in second} == {"127.0.85.1", "127.0.85.2"}
    assert "9877" in {row[3] for row in second}  # GOLEM's gh port for the unix route
    c2s = GOLEM.encode(request)
    assert follow(capture)[1] == (c2s, b"")


def test_checksum_matches_rfc_1071() -> None:
    def slow(data: bytes) -> int:
        if len(data) % 2:
            data += b"\0"
        total = sum(int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2))
        while total >> 16:
            total = (total & 0xFFFF) + (total >> 16)
        return ~total & 0xFFFF

    for data in (b"", b"\x01", b"\xff\xff", b"\xff\xff\xff\xff", bytes(range(256)) * 3, b"ab"):
        if any(data):
            assert _checksum(data) == slow(data), data


def test_segment_is_the_payload_after_the_headers() -> None:
    import ipaddress

    client = Endpoint(ipaddress.ip_address("127.0.0.1"), 5000)
    server = Endpoint(ipaddress.ip_address("127.0.0.1"), 9876)
    packet = tcp_packet(client, server, 1, 2, 0x18, b"hello")
    assert packet[-5:] == b"hello"
    assert len(packet) == 14 + 20 + 20 + 5


def test_closed_connections_are_forgotten() -> None:
    from golem_proxy.recording.streams import chunks_by_event

    request = {"id": 1, "method": "ping", "params": {}}
    events: list[object] = []
    for conn in range(1, 501):
        events.append(
            ConnectionOpened(
                conn=conn, route="main", client="127.0.0.1:1", upstream="127.0.0.1:9876", t=0.0
            )
        )
        events.append(_frame(conn, Direction.C2S, 0, 0.0, request))
        events.append(
            ConnectionClosed(
                conn=conn, route="main", reason="client closed", t=0.0, bytes_c2s=45, bytes_s2c=0
            )
        )
    events.append(
        ConnectionOpened(
            conn=501, route="main", client="127.0.0.1:1", upstream="127.0.0.1:9876", t=0.0
        )
    )
    reading = chunks_by_event(events, GOLEM)  # type: ignore[arg-type]
    pairs = zip(range(len(events)), reading)
    sent = sum(len(b"".join(chunks)) for _, (_, chunks) in pairs)
    assert sent == 500 * len(GOLEM.encode(request))
    # Only the connection still open is remembered (the generator is paused on it).
    assert reading.gi_frame is not None
    assert len(reading.gi_frame.f_locals["rebuilder"].streams) == 2
