"""``proxy --fault error`` against a client that pipelines its requests and reads the answers
in order, as GOLEM's does: the answer the proxy makes in the plugin's place goes after the
plugin's answers to the requests sent before it, so the client pairs each answer with the
request it answers. The headless plugin in its own process, both observers."""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path
from typing import Any

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.profiles import GOLEM
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.support.plugin_fixture import plugin_fixture
from tests.support.waiting import receive_exactly

plugin = plugin_fixture(seed=5, scope="module", extra_args=("--debug-methods",))


def _request(ident: str, method: str, params: dict[str, Any]) -> bytes:
    return GOLEM.frame_payload(
        json.dumps({"id": ident, "method": method, "params": params}).encode()
    )


def _answers(client: socket.socket, count: int) -> list[dict[str, Any]]:
    """The next ``count`` answers, in the order the client reads them."""
    answers = []
    for _ in range(count):
        size = struct.unpack("!I", receive_exactly(client, 4))[0]
        answers.append(json.loads(receive_exactly(client, size)))
    return answers


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_an_injected_error_waits_for_the_answers_to_earlier_pipelined_requests(
    plugin: PluginProcess, tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "turns.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record),
        "--observer", observer, "--fault", "error:code=TIMEOUT,message=busy,method=ping",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
            # The plugin takes 0.3 s over the first; the proxy answers the second itself.
            client.sendall(
                _request("slow-1", "debug.sleep", {"seconds": 0.3})
                + _request("err-2", "ping", {})
                + _request("ok-3", "scene.list_layers", {})
                + _request("err-4", "ping", {})
            )
            answers = _answers(client, 4)
            # Nothing waits before it now: the proxy's answer goes at once.
            client.sendall(_request("err-5", "ping", {}))
            answers += _answers(client, 1)
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert [(a["id"], a.get("error") is not None) for a in answers] == [
        ("slow-1", False),
        ("err-2", True),
        ("ok-3", False),
        ("err-4", True),
        ("err-5", True),
    ]
    # The recording holds them in the order the client got them, each paired with its request.
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    sent = [line["id"] for line in lines if line["kind"] == "frame" and line["dir"] == "s2c"]
    assert sent == ["slow-1", "err-2", "ok-3", "err-4", "err-5"]
    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    assert [(row["method"], row["status"]) for row in rows] == [
        ("debug.sleep", "ok"),
        ("ping", "TIMEOUT"),
        ("scene.list_layers", "ok"),
        ("ping", "TIMEOUT"),
        ("ping", "TIMEOUT"),
    ]
