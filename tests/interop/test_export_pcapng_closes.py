"""``export --format pcapng`` ends each connection as the wire ended it: a clean close (a
``--fault truncate`` closes with FIN) is FINs, a reset is a reset from the side it came from,
as the proxy recorded them (the ``close`` line's ``resets``), against the headless plugin."""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.profiles import GOLEM
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.support.plugin_fixture import plugin_fixture
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
    fields = ["-T", "fields", "-e", "tcp.stream", "-e", "tcp.dstport"]
    fields += ["-e", "tcp.flags.fin", "-e", "tcp.flags.reset"]
    upstream_port = str(plugin.main.port)  # the exported server: the plugin, not the proxy
    ends: dict[str, list[tuple[str, str]]] = {}
    for row in tshark("-r", str(capture), *fields).splitlines():
        stream, port, fin, reset = row.split("\t")
        toward = "c2s" if port == upstream_port else "s2c"
        for flag, name in ((fin, "FIN"), (reset, "RST")):
            if flag in ("1", "True"):
                ends.setdefault(stream, []).append((name, toward))
    assert ends == {
        "0": [("FIN", "c2s"), ("FIN", "s2c")],  # the client read b'': no reset
        "1": [("RST", "s2c"), ("RST", "c2s")],
        "2": [("RST", "c2s")],
    }
