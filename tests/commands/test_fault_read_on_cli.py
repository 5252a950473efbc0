"""A request a client pipelines behind one the proxy holds (``--fault delay``, ``--intercept``)
is recorded at the time the client sent it, so its latency is what the client waited for its
answer, as docs/faults.md says: the proxy reads on while it holds a frame (live/read_on.py)
rather than reading the request only once the held one went on. The headless plugin in its own
process, the real CLI, both observers."""

from __future__ import annotations

import json
import re
import socket
import struct
import time
from pathlib import Path
from typing import Any

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.profiles import GOLEM
from golem_proxy.testing.plugin_process import PluginProcess
from tests.commands.test_intercept_cli import InterceptingProxy
from tests.support.cli_helpers import run_cli
from tests.support.plugin_fixture import plugin_fixture
from tests.support.waiting import receive_exactly

plugin = plugin_fixture(seed=59, scope="module")

OBSERVERS = pytest.mark.parametrize("observer", ["in-process", "child-process"])

BEHIND = 0.2
"""How long after the held request the client sends the next one (seconds)."""
TOLERANCE = 0.25
"""How far a recorded time may be from what the client measured (seconds): scheduling on a busy
machine, and the client's own reads. Far below the hold behind which the request waits."""


def _request(ident: str, method: str) -> bytes:
    return GOLEM.frame_payload(json.dumps({"id": ident, "method": method, "params": {}}).encode())


def _answer(client: socket.socket) -> dict[str, Any]:
    size = struct.unpack("!I", receive_exactly(client, 4))[0]
    answer: dict[str, Any] = json.loads(receive_exactly(client, size))
    return answer


def _rows(record: Path) -> list[dict[str, Any]]:
    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    return [json.loads(line) for line in shown.stdout.splitlines()]


class PipeliningClient:
    """Sends a request, then another `BEHIND` seconds later, and measures how long it waits
    for each answer (answers come in order)."""

    def __init__(self, port: int) -> None:
        self.socket = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.sent: dict[str, float] = {}
        self.waited: dict[str, float] = {}

    def send(self, ident: str, method: str) -> None:
        self.socket.sendall(_request(ident, method))
        self.sent[ident] = time.monotonic()

    def read(self, count: int) -> None:
        for _ in range(count):
            answer = _answer(self.socket)
            self.waited[answer["id"]] = time.monotonic() - self.sent[answer["id"]]

    def close(self) -> None:
        self.socket.close()


def _assert_as_the_client_saw_it(record: Path, client: PipeliningClient, held_status: str) -> None:
    rows = _rows(record)
    # The held row says what the proxy did to it; the one behind it was not touched.
    assert [(row["method"], row["status"]) for row in rows] == [
        ("scene.list_layers", held_status),
        ("scene.get_document_info", "ok"),
    ]
    held, behind = rows
    # The request behind waited with the held one: most of the hold, not a millisecond.
    assert client.waited["behind-2"] > 0.8
    assert abs(behind["latency_ms"] / 1000 - client.waited["behind-2"]) < TOLERANCE, (
        behind,
        client.waited,
    )
    assert abs(held["latency_ms"] / 1000 - client.waited["held-1"]) < TOLERANCE
    # Its time is when the client sent it, not when the held one went on.
    sent_apart = client.sent["behind-2"] - client.sent["held-1"]
    assert abs((behind["t"] - held["t"]) - sent_apart) < TOLERANCE, (rows, sent_apart)


@OBSERVERS
def test_a_request_behind_a_delayed_one_is_recorded_when_the_client_sent_it(
    plugin: PluginProcess, tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "delay.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record),
        "--observer", observer, "--fault", "delay:ms=1500,method=scene.list_layers,dir=c2s",
    )  # fmt: skip
    printed = ""
    try:
        client = PipeliningClient(cli.port)
        client.send("held-1", "scene.list_layers")
        time.sleep(BEHIND)  # the client's own pace: it sends the next before the first answer
        client.send("behind-2", "scene.get_document_info")
        client.read(2)
        client.close()
    finally:
        printed = cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    _assert_as_the_client_saw_it(record, client, "ok (+1.5 s --fault delay)")
    # The live log says the same latency, in seconds (µs or ms on main).
    logged = [line for line in printed.splitlines() if "scene.get_document_info" in line]
    assert len(logged) == 1 and re.search(r" 1\.\d\d s ", logged[0]), logged


@OBSERVERS
def test_a_request_behind_an_intercepted_one_is_recorded_when_the_client_sent_it(
    plugin: PluginProcess, tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "intercept.jsonl"
    proxy = InterceptingProxy(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record),
        "--observer", observer, "--intercept", r"~q & ~m ^scene\.list_layers$",
    )  # fmt: skip
    try:
        client = PipeliningClient(proxy.port)
        client.send("held-1", "scene.list_layers")
        held = proxy.wait_for(r"held #(\d+): scene\.list_layers").group(1)
        time.sleep(BEHIND)
        client.send("behind-2", "scene.get_document_info")
        time.sleep(1.0)  # the user takes a second to decide; the request behind waits too
        said = proxy.answer_to(f"accept {held}".encode())
        assert not [line for line in said if "error" in line.lower()], said
        client.read(2)
        client.close()
    finally:
        stderr = proxy.stop()
    assert proxy.process.returncode == 0, stderr
    _assert_as_the_client_saw_it(record, client, "ok (held, accepted by hand)")
