"""A plugin that read the first bytes of a request and closed (its read timed out, it crashed
mid-frame): the rest of the request, written after, is refused with a reset. Part of it was
delivered, so its row must not say it was not; and no plugin acts on part of a frame, so it
must not say the plugin may have acted either. Both observers."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.profiles import GOLEM
from tests.support.cli_helpers import run_cli
from tests.support.waiting import receive_exactly

PART = 14
"""The bytes of the request the plugin reads before it closes: the header and 10 more."""


def _plugin_reads_part_and_closes(listener: socket.socket, read: list[bytes]) -> None:
    """Serve one request's first `PART` bytes, then close; skip the proxy's probes, which
    connect and send nothing. Bounded by the listener's timeout."""
    for _ in range(20):
        try:
            peer, _ = listener.accept()
        except OSError:
            return
        with peer:
            peer.settimeout(5)
            try:
                head = receive_exactly(peer, PART)
            except OSError:
                continue  # a probe: closed without a byte
            read.append(head)
            return


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_request_the_plugin_read_part_of_reads_partly_delivered(
    tmp_path: Path, observer: str
) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)
    read: list[bytes] = []
    plugin = threading.Thread(target=_plugin_reads_part_and_closes, args=(listener, read))
    plugin.start()
    record = tmp_path / "part.jsonl"
    upstream = f"127.0.0.1:{listener.getsockname()[1]}"
    payload = json.dumps({"id": "r-1", "method": "scene.list_layers", "params": {"pad": "x" * 40}})
    frame = GOLEM.frame_payload(payload.encode())
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={upstream}", "--record", str(record),
        "--observer", observer,
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
            client.sendall(frame[:PART])
            plugin.join(10)
            assert read == [frame[:PART]]
            time.sleep(0.3)  # the plugin's FIN reaches the proxy
            client.sendall(frame[PART:])
            with pytest.raises(OSError):  # the proxy resets the client
                if not client.recv(100):
                    raise ConnectionResetError("closed")
    finally:
        log = cli.stop()
        listener.close()
        plugin.join(10)
    assert cli.process.returncode == 0, cli.stderr
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    (request,) = [line for line in lines if line["kind"] == "frame"]
    assert (request["undelivered"], request["delivered_bytes"]) == ("upstream gone", PART)
    status = f"partly delivered ({PART} of {len(frame)} bytes; upstream gone)"
    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    assert [json.loads(line)["status"] for line in shown.stdout.splitlines()] == [status]
    assert status in log
    assert "undelivered (upstream gone)" not in log
