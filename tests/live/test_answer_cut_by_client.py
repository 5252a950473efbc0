"""An answer the proxy stopped reading because its client went away is cut by the proxy, not
truncated by the plugin: the client reads a little of a 16 MiB answer and resets, the proxy
resets the upstream, and the recording says the answer was cut short by the client's reset
(`Connection.ended_by_proxy`), with no framing violation of the plugin's. A plugin that resets
in the middle of its own answer still truncated it. The real command line, real loopback
sockets, each observer."""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path
from typing import Any

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from bench.threaded_server import ThreadedServer
from golem_core.profiles import GOLEM
from tests.live.observer_child_helpers import observed_proxy, wait_for

MIB = 1 << 20


def _request(size: int) -> bytes:
    return GOLEM.encode({"id": 1, "method": "echo", "params": {"b": "x" * size}})


def _lines(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines()[1:]]


def _slow_reader(port: int, half_close: bool = False) -> socket.socket:
    """A client that asks for a 16 MiB answer (``half_close``: then ends its side) and reads
    a little of it, then no more: the answer stalls, the plugin still sending it. Its window
    is small, so the answer cannot all sit in the kernels' buffers meanwhile."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    sock.settimeout(20)
    sock.connect(("127.0.0.1", port))
    sock.sendall(_request(16 * MIB))
    if half_close:
        sock.shutdown(socket.SHUT_WR)
    got = 0
    while got < 200_000:
        got += len(sock.recv(65536))
    return sock


def _reset(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


@pytest.mark.parametrize("observer", ["child-process", "in-process"])
def test_an_answer_whose_client_reset_is_cut_by_the_proxy_not_truncated_by_the_plugin(
    tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "s.jsonl"
    with observed_proxy(record, "--observer", observer) as cli:
        _reset(_slow_reader(cli.port))
        wait_for(lambda: '"kind":"close"' in record.read_text(), what="the close recorded")
        cli.stop()
    lines = _lines(record)
    assert not [line for line in lines if line["kind"] == "violation"], lines
    errors = [line for line in lines if line["kind"] == "frame-error"]
    assert len(errors) == 1 and errors[0]["dir"] == "s2c", errors
    assert errors[0]["cut"] == "the client's reset", errors
    assert errors[0]["detail"].endswith("bytes read before the client's reset"), errors
    ended = [line for line in lines if line["kind"] == "end"]
    assert [(e["dir"], e["cut"], e["unanswered"]) for e in ended] == [
        ("s2c", "the client's reset", [0])
    ]
    assert lines[-1]["kind"] == "session-end" and lines[-1]["violations"] == 0


class _ResettingPlugin(ThreadedServer):
    """Reads a request and resets after the first 100,000 bytes of a 1 MiB answer."""

    def serve(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            conn.sendall(GOLEM.encode({"id": 1, "result": {"b": "y" * MIB}})[:100_000])
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def test_an_answer_its_plugin_reset_inside_is_still_truncated_by_the_plugin(
    tmp_path: Path,
) -> None:
    record = tmp_path / "s.jsonl"
    with _ResettingPlugin() as plugin:
        cli = start_proxy_cli(
            "--route", f"127.0.0.1:0=127.0.0.1:{plugin.port}", "--record", str(record)
        )
        try:
            with socket.create_connection(("127.0.0.1", cli.port), timeout=20) as sock:
                sock.sendall(_request(10))
                while sock.recv(65536):
                    pass
        except ConnectionResetError:
            pass
        finally:
            wait_for(lambda: '"kind":"close"' in record.read_text(), what="the close recorded")
            cli.stop()
    lines = _lines(record)
    errors = [line for line in lines if line["kind"] == "frame-error"]
    assert len(errors) == 1 and "cut" not in errors[0], errors
    violations = [line["rule"] for line in lines if line["kind"] == "violation"]
    assert violations == ["golem.frame.truncated"], lines


def test_an_answer_the_proxy_stopped_reading_at_its_stop_is_cut_by_the_stop(
    tmp_path: Path,
) -> None:
    """Ctrl-C while a client reads a large answer slowly: once the drain timeout is past,
    the proxy cuts the connection, and the answer reads cut by the proxy's stop, not
    truncated by the plugin (nor ``unanswered (upstream closed)``: the plugin never closed)."""
    record = tmp_path / "s.jsonl"
    with observed_proxy(record, "--drain-timeout", "0.5") as cli, _slow_reader(cli.port):
        out = cli.stop()
    assert "golem.frame.truncated" not in out and "upstream ended its stream" not in out, out
    assert "the proxy ended the upstream's stream (the proxy's stop)" in out, out
    lines = _lines(record)
    assert not [line for line in lines if line["kind"] == "violation"], lines
    errors = [line for line in lines if line["kind"] == "frame-error"]
    assert [(e["dir"], e["cut"]) for e in errors] == [("s2c", "the proxy's stop")], errors
    ended = [line for line in lines if line["kind"] == "end"]
    assert [(e["dir"], e["cut"]) for e in ended] == [("s2c", "the proxy's stop")], ended


def _half_closed_reader(port: int) -> socket.socket:
    """`_slow_reader` that ends its side (FIN) after its request."""
    return _slow_reader(port, half_close=True)


def test_an_answer_to_a_client_that_half_closed_is_cut_by_the_stop(tmp_path: Path) -> None:
    """The client ended its side after its request, as a one-shot client may: its close is
    no close of the proxy's, and the answer the stop cut reads cut by the proxy's stop."""
    record = tmp_path / "s.jsonl"
    with observed_proxy(record, "--drain-timeout", "0.5") as cli, _half_closed_reader(cli.port):
        out = cli.stop()
    assert "the proxy ended the upstream's stream (the proxy's stop)" in out, out
    lines = _lines(record)
    errors = [line for line in lines if line["kind"] == "frame-error"]
    assert [(e["dir"], e["cut"]) for e in errors] == [("s2c", "the proxy's stop")], errors
    assert not [line for line in lines if line["kind"] == "violation"], lines


def test_an_answer_idle_past_the_timeout_after_a_half_close_says_the_timeout(
    tmp_path: Path,
) -> None:
    """``--idle-timeout`` closes a connection whose client ended its side and stopped
    reading: the answer it cut reads cut by the proxy's close, and the close says why, the
    timeout, not only that the client closed."""
    record = tmp_path / "s.jsonl"
    with observed_proxy(record, "--idle-timeout", "1") as cli:
        with _half_closed_reader(cli.port):
            wait_for(lambda: '"kind":"close"' in record.read_text(), what="the close recorded")
        cli.stop()
    lines = _lines(record)
    errors = [line for line in lines if line["kind"] == "frame-error"]
    assert [(e["dir"], e["cut"]) for e in errors] == [("s2c", "the proxy's close")], errors
    (close,) = [line for line in lines if line["kind"] == "close"]
    assert close["reason"] == "client closed; idle for 1 s (--idle-timeout)", close
    assert close["abnormal"] is True, close
