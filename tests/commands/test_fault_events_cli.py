"""``proxy --fault`` as a user runs it, against the headless plugin in its own process: the
event of a fault follows the frame it hit, so every view shows it on that frame's flow."""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.profiles import GOLEM
from golem_proxy.testing.client import GolemClient
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.support.plugin_fixture import plugin_fixture
from tests.support.waiting import receive_exactly

plugin = plugin_fixture(seed=3, scope="function")


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_delay_is_shown_on_the_flow_it_delayed(
    plugin: PluginProcess, tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "delayed.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record),
        "--observer", observer, "--fault", "delay:ms=150,method=scene.list_layers",
    )  # fmt: skip
    try:
        # The client pings on connect: the delayed request's flow is not the first.
        with GolemClient("127.0.0.1", cli.port) as client:
            client.send_command("scene.list_layers", {})
            client.send_command("scene.get_document_info", {})
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr

    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    # Frames and faults in the order written (exchange lines are derived, skipped here).
    kinds = [
        (line["kind"], line["dir"], line.get("method"))
        for line in lines
        if line["kind"] in ("frame", "fault")
    ]
    request = kinds.index(("frame", "c2s", "scene.list_layers"))
    assert kinds[request + 1 : request + 4] == [
        ("fault", "c2s", "scene.list_layers"),
        ("frame", "s2c", None),
        ("fault", "s2c", "scene.list_layers"),
    ]

    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    flows = [json.loads(line) for line in shown.stdout.splitlines()]
    faults = {flow["method"]: [(f["fault"], f["direction"]) for f in flow.get("faults", [])]
              for flow in flows}  # fmt: skip
    assert faults == {
        "ping": [],
        "scene.list_layers": [("delay", "c2s"), ("delay", "s2c")],
        "scene.get_document_info": [],
    }


def test_an_error_in_place_of_a_request_too_costly_to_parse_carries_its_id(
    plugin: PluginProcess, tmp_path: Path
) -> None:
    """``--fault error`` with no method answers every request, one over
    ``--observe-parse-limit`` too (not parsed: of no method): with the id its bytes hold, so
    that the client can match the answer, not a null one."""
    record = tmp_path / "faulted.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record),
        "--observe-parse-limit", "1", "--fault", "error:code=TIMEOUT,message=busy",
    )  # fmt: skip
    grid = b"[" + b"[]," * 100_000 + b"[]]"
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
            for payload in (
                b'{"id": "big-1", "method": "scene.import", "params": {"grid": %s}}' % grid,
                b'{"id": "small-2", "method": "ping", "params": {}}',
            ):
                client.sendall(GOLEM.frame_payload(payload))
                size = struct.unpack("!I", receive_exactly(client, 4))[0]
                answer = json.loads(receive_exactly(client, size))
                assert answer["error"] == {"code": "TIMEOUT", "message": "busy"}
                assert answer["id"] == json.loads(payload[: payload.index(b", ")] + b"}")["id"]
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    faults = [line["detail"] for line in lines if line["kind"] == "fault"]
    assert faults[0].startswith("withheld request: ? id=big-1 (not parsed: too costly)")
    assert faults[1].startswith("withheld request: ping id=small-2")


def test_export_says_which_bytes_of_a_stream_went_on_and_which_were_withheld(
    plugin: PluginProcess, tmp_path: Path
) -> None:
    """A request ``--fault error`` answered in the plugin's place is in the client's stream (the
    client sent it), not in what the plugin got: the table says how many bytes went on and how
    many frames were withheld, not that the file is what was forwarded."""
    record = tmp_path / "faulted.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record),
        "--fault", "error:code=TIMEOUT,method=ping",
    )  # fmt: skip
    requests = [
        GOLEM.frame_payload(b'{"id": "p1", "method": "ping", "params": {}}'),
        GOLEM.frame_payload(b'{"id": "l1", "method": "scene.list_layers", "params": {}}'),
        GOLEM.frame_payload(b'{"id": "p2", "method": "ping", "params": {}}'),
    ]
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
            for request in requests:
                client.sendall(request)
                size = struct.unpack("!I", receive_exactly(client, 4))[0]
                receive_exactly(client, size)
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr

    out = tmp_path / "streams"
    exported = run_cli("export", str(record), "--format", "streams", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    streams = json.loads((out / "index.json").read_text())["streams"]
    (sent,) = [s for s in streams if s["direction"] == "c2s" and s["bytes"]]
    went_on = len(requests[1])  # the plugin got the one request no fault answered
    assert sent["bytes"] == sum(map(len, requests))
    assert (sent["withheld_frames"], sent["withheld_bytes"]) == (2, len(requests[0]) * 2)
    assert sent["recorded_bytes"] == went_on and sent["complete"] is True
    (row,) = [line for line in exported.stdout.splitlines() if sent["file"] in line]
    assert f"= {went_on} B forwarded + 2 frames withheld" in row
    (answers,) = [line for line in exported.stdout.splitlines() if "-s2c.bin" in line]
    assert answers.endswith("= bytes forwarded")
