"""``proxy --intercept`` against a client that pipelines its requests and reads the answers in
order, as GOLEM's does: an answer typed by hand for a held request goes after the plugin's
answers to the requests sent before it, as a ``--fault error`` answer does, so the client pairs
each answer with its own request. The headless plugin in its own process, both observers."""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path
from typing import Any

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.testing.plugin_process import PluginProcess
from tests.commands.test_intercept_cli import InterceptingProxy
from tests.support.cli_helpers import run_cli
from tests.support.plugin_fixture import plugin_fixture
from tests.support.waiting import receive_exactly

plugin = plugin_fixture(seed=7, scope="module", extra_args=("--debug-methods",))


def _request(ident: str, method: str, params: dict[str, Any]) -> bytes:
    return GOLEM.frame_payload(
        json.dumps({"id": ident, "method": method, "params": params}).encode()
    )


def _answer(client: socket.socket) -> dict[str, Any]:
    size = struct.unpack("!I", receive_exactly(client, 4))[0]
    answer: dict[str, Any] = json.loads(receive_exactly(client, size))
    return answer


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_typed_answer_waits_for_the_plugins_answers_to_earlier_requests(
    plugin: PluginProcess, tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "typed.jsonl"
    proxy = InterceptingProxy(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record),
        "--observer", observer, "--intercept", "~m ping",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as client:
            # The plugin works 2 s on the first; the second is held, and answered by hand
            # while the plugin still works on the first.
            client.sendall(
                _request("slow-1", "debug.sleep", {"seconds": 2})
                + _request("typed-2", "ping", {})
                + _request("ok-3", "scene.list_layers", {})
            )
            held = proxy.wait_for(r"held #(\d+): ping").group(1)
            typed = json.dumps({"success": True, "result": {"typed": True}})
            said = proxy.answer_to(f"answer {held} {typed}".encode())
            assert not [line for line in said if "error" in line.lower()], said
            proxy.wait_for(r"its answer waits for 1 earlier answer")
            answers = [_answer(client) for _ in range(3)]
    finally:
        stderr = proxy.stop()
    assert proxy.process.returncode == 0, stderr
    assert [a["id"] for a in answers] == ["slow-1", "typed-2", "ok-3"]
    assert answers[1]["result"] == {"typed": True}
    # The recording holds them in the order the client got them.
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    sent = [line["id"] for line in lines if line["kind"] == "frame" and line["dir"] == "s2c"]
    assert sent == ["slow-1", "typed-2", "ok-3"]
    # Each step names the message it held: the request it answered by hand.
    steps = [(line["step"], line["id"]) for line in lines if line["kind"] == "intercept"]
    assert steps == [("held", "typed-2"), ("answer", "typed-2")]
    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    assert [(row["method"], row["status"]) for row in rows] == [
        ("debug.sleep", "ok"),
        ("ping", "ok (answered by hand)"),
        ("scene.list_layers", "ok"),
    ]


def test_a_typed_answer_still_held_when_the_connection_ends_is_said_not_sent(
    plugin: PluginProcess, tmp_path: Path
) -> None:
    record = tmp_path / "ended.jsonl"
    proxy = InterceptingProxy(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record),
        "--intercept", "~m ping",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as client:
            client.sendall(
                _request("slow-1", "debug.sleep", {"seconds": 3}) + _request("typed-2", "ping", {})
            )
            held = proxy.wait_for(r"held #(\d+): ping").group(1)
            proxy.answer_to(f"answer {held} {json.dumps({'success': True})}".encode())
            proxy.wait_for(r"its answer waits for 1 earlier answer")
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # The client reset the connection before the plugin answered its first request.
        proxy.wait_for(r"1 answer of --intercept not sent: the connection ended first")
    finally:
        stderr = proxy.stop()
    assert proxy.process.returncode == 0, stderr
