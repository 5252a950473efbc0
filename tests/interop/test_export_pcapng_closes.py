"""``export --format pcapng`` ends each connection as the wire ended it: a clean close (a
``--fault truncate`` closes with FIN) is FINs, the side that ended first (the ``end`` line)
first and when it did, a reset is a reset from the side it came from, as the proxy recorded
them (the ``close`` line's ``resets``), against the headless plugin."""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.profiles import GOLEM
from golem_proxy.events import (
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    FrameSeen,
    StreamEnded,
)
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.support.plugin_fixture import plugin_fixture
from tests.support.trace_builder import write_recording
from tests.support.tshark_helpers import needs_tshark, tshark

plugin = plugin_fixture(seed=7)


def _request(method: str) -> bytes:
    return GOLEM.encode({"id": 1, "method": method, "params": {}})


def _read_to_the_end(sock: socket.socket) -> bytes:
    """What the peer sent until it closed cleanly (raises ConnectionResetError on a reset)."""
    received = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return received
        received += chunk


@needs_tshark
@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_each_close_is_exported_as_the_wire_had_it(
    plugin: PluginProcess, tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "closes.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record),
        "--observer", observer,
        "--fault", "truncate:dir=s2c,method=scene.get_document_info,at=0.3",
        "--fault", "reset:method=scene.list_layers",
    )  # fmt: skip
    try:
        address = ("127.0.0.1", cli.port)
        # 1. The answer cut short, then the end of the stream: a clean close.
        with socket.create_connection(address, timeout=20) as sock:
            sock.sendall(_request("scene.get_document_info"))
            cut = _read_to_the_end(sock)
            assert 4 <= len(cut) < 4 + struct.unpack("!I", cut[:4])[0]
        # 2. The proxy resets the client (and the upstream) instead of answering.
        with socket.create_connection(address, timeout=20) as sock:
            sock.sendall(_request("scene.list_layers"))
            with pytest.raises(ConnectionResetError):
                _read_to_the_end(sock)
        # 3. The client resets its connection after an answer.
        sock = socket.create_connection(address, timeout=20)
        sock.sendall(_request("ping"))
        (length,) = struct.unpack("!I", sock.recv(4, socket.MSG_WAITALL))
        sock.recv(length, socket.MSG_WAITALL)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr

    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    closes = [line for line in lines if line["kind"] == "close"]
    assert [(close["abnormal"], close["resets"]) for close in closes] == [
        (True, []),  # a fault, but no reset crossed
        (True, ["s2c", "c2s"]),
        (True, ["c2s"]),
    ]

    capture = tmp_path / "closes.pcapng"
    done = run_cli("export", str(record), "--format", "pcapng", "--out", str(capture))
    assert done.returncode == 0, done.stderr
    fields = ["-T", "fields", "-e", "tcp.stream", "-e", "tcp.dstport", "-e", "frame.time_epoch"]
    fields += ["-e", "tcp.flags.fin", "-e", "tcp.flags.reset"]
    upstream_port = str(plugin.main.port)  # the exported server: the plugin, not the proxy
    ends: dict[str, list[tuple[str, str]]] = {}
    first: dict[str, float] = {}
    server_fin = 0.0
    for row in tshark("-r", str(capture), *fields).splitlines():
        stream, port, at, fin, reset = row.split("\t")
        first.setdefault(stream, float(at))
        toward = "c2s" if port == upstream_port else "s2c"
        for flag, name in ((fin, "FIN"), (reset, "RST")):
            if flag in ("1", "True"):
                ends.setdefault(stream, []).append((name, toward))
                if (stream, name, toward) == ("0", "FIN", "s2c"):
                    server_fin = float(at) - first[stream]
    assert ends == {
        # The plugin's stream ended first, cut by the fault (the `end` line), then the
        # client's: the client read b'', no reset.
        "0": [("FIN", "s2c"), ("FIN", "c2s")],
        "1": [("RST", "s2c"), ("RST", "c2s")],
        "2": [("RST", "c2s")],
    }
    # At the time the recording says the plugin's side ended, not at the connection's close.
    opened = next(line["t"] for line in lines if line["kind"] == "open" and line["conn"] == 1)
    ended = [line for line in lines if line["kind"] == "end" and line["conn"] == 1]
    assert [line["dir"] for line in ended] == ["s2c"]
    assert server_fin == pytest.approx(ended[0]["t"] - opened, abs=2e-6)


@needs_tshark
def test_a_plugin_gone_mid_call_sends_its_fin_when_it_went_then_the_reset(
    tmp_path: Path,
) -> None:
    # The plugin died mid-call (its stream ended, the `end` line), and its reset met the
    # client's next bytes 2 s later (the close).
    request = GOLEM.encode_payload({"id": "a", "method": "scene.list_layers", "params": {}})
    events = [
        ConnectionOpened(
            conn=1, route="main", client="127.0.0.1:50001", upstream="127.0.0.1:9876", t=0.0
        ),
        FrameSeen(
            conn=1, route="main", direction=Direction.C2S, index=0, t=0.1,
            size=4 + len(request), payload=request, message=GOLEM.parse(request, None),
        ),
        StreamEnded(conn=1, route="main", direction=Direction.S2C, t=0.5, unanswered=(0,)),
        ConnectionClosed(
            conn=1, route="main", t=2.5, bytes_c2s=4 + len(request), bytes_s2c=0,
            reason="upstream closed; the client's next bytes were refused (reset)",
            abnormal=True, resets=(Direction.S2C,),
        ),
    ]  # fmt: skip
    recording = tmp_path / "gone.jsonl"
    recording.write_bytes(write_recording(events))
    capture = tmp_path / "gone.pcapng"
    done = run_cli("export", str(recording), "--format", "pcapng", "--out", str(capture))
    assert done.returncode == 0, done.stderr
    fields = ["-T", "fields", "-e", "frame.time_relative", "-e", "tcp.srcport"]
    fields += ["-e", "tcp.flags.fin", "-e", "tcp.flags.reset", "-e", "tcp.flags.ack"]
    rows = [row.split("\t") for row in tshark("-r", str(capture), *fields).splitlines()]
    after_request = [(float(at), port, fin, rst) for at, port, fin, rst, _ in rows[4:]]
    is_set = ("1", "True")
    assert [
        (at, "plugin" if port == "9876" else "client", fin in is_set, rst in is_set)
        for at, port, fin, rst in after_request
    ] == [
        (0.5, "plugin", True, False),  # its FIN, when it went
        (0.5, "client", False, False),  # the client's ACK of it
        (2.5, "plugin", False, True),  # the reset, at the close
    ]
    # Nothing tshark finds wrong: the FIN takes its sequence number, the reset the next.
    assert tshark("-r", str(capture), "-Y", "_ws.expert.severity >= error").strip() == ""


@needs_tshark
@pytest.mark.parametrize(
    ("cut", "resets", "ends"),
    [
        # The client reset in the middle of the answer: the proxy stopped reading the plugin
        # and reset it; no FIN of the plugin's, the client's reset at the close.
        ("the client's reset", (Direction.C2S,), [("client", False, True)]),
        # The proxy's stop cut the answer: no FIN when the stream was cut, the FINs at the close.
        (
            "the proxy's stop",
            (),
            [("client", True, False), ("plugin", True, False), ("client", False, False)],
        ),
    ],
)
def test_a_stream_the_proxy_cut_sends_no_fin_of_its_side(
    tmp_path: Path, cut: str, resets: tuple[Direction, ...], ends: list[tuple[str, bool, bool]]
) -> None:
    request = GOLEM.encode_payload({"id": "a", "method": "viewport.capture", "params": {}})
    events = [
        ConnectionOpened(
            conn=1, route="main", client="127.0.0.1:50001", upstream="127.0.0.1:9876", t=0.0
        ),
        FrameSeen(
            conn=1, route="main", direction=Direction.C2S, index=0, t=0.1,
            size=4 + len(request), payload=request, message=GOLEM.parse(request, None),
        ),
        StreamEnded(
            conn=1, route="main", direction=Direction.S2C, t=0.5, unanswered=(0,), cut=cut
        ),
        ConnectionClosed(
            conn=1, route="main", t=0.5, bytes_c2s=4 + len(request), bytes_s2c=0,
            reason="client reset the connection", abnormal=True, resets=resets,
        ),
    ]  # fmt: skip
    recording = tmp_path / "cut.jsonl"
    recording.write_bytes(write_recording(events))
    capture = tmp_path / "cut.pcapng"
    done = run_cli("export", str(recording), "--format", "pcapng", "--out", str(capture))
    assert done.returncode == 0, done.stderr
    fields = ["-T", "fields", "-e", "tcp.srcport", "-e", "tcp.flags.fin", "-e", "tcp.flags.reset"]
    rows = [row.split("\t") for row in tshark("-r", str(capture), *fields).splitlines()]
    is_set = ("1", "True")
    assert [
        ("plugin" if port == "9876" else "client", fin in is_set, rst in is_set)
        for port, fin, rst in rows[4:]
    ] == ends
    assert tshark("-r", str(capture), "-Y", "_ws.expert.severity >= error").strip() == ""
