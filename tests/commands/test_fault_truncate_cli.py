"""``proxy --fault truncate`` cuts an answer the plugin gave in full, or a request, and with it
the connection, before the plugin answered an earlier one: the request it leaves unanswered
says the proxy cut it, in the recording, ``show`` and the live log, not that the plugin closed.
The headless plugin in its own process, both observers."""

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

plugin = plugin_fixture(seed=5, scope="module", extra_args=("--debug-methods",))


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_an_answer_the_proxy_truncated_is_not_blamed_on_the_plugin(
    plugin: PluginProcess, tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "truncated.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record),
        "--observer", observer, "--fault", "truncate:dir=s2c,method=scene.list_layers",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
            client.sendall(
                GOLEM.encode({"id": "cut-1", "method": "scene.list_layers", "params": {}})
            )
            got = b""
            while chunk := client.recv(65536):  # until the proxy's FIN
                got += chunk
            assert 4 < len(got) < 4 + struct.unpack("!I", got[:4])[0]
    finally:
        log = cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    (end,) = [line for line in lines if line["kind"] == "end"]
    assert (end["dir"], end["cut"]) == ("s2c", "--fault truncate")
    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    statuses = {row["method"]: row["status"] for row in rows if row.get("method")}
    assert statuses == {"scene.list_layers": "unanswered (truncated by --fault truncate)"}
    # The answer itself is recorded as the client got it (docs/faults.md): a truncated frame,
    # not one the proxy read part of before a cut of its reading (it read all of it).
    (error,) = [line for line in lines if line["kind"] == "frame-error"]
    assert "cut" not in error and error["detail"].startswith("stream ended"), error
    cut_rows = [row["status"] for row in rows if not row.get("method")]
    assert cut_rows == ["truncated (--fault truncate)"], rows
    assert "the proxy ended the upstream's stream (--fault truncate): 1 request" in log
    assert "upstream ended its stream" not in log


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_an_answer_a_truncated_request_cut_off_is_not_blamed_on_the_plugin(
    plugin: PluginProcess, tmp_path: Path, observer: str
) -> None:
    """The proxy truncates a request and ends the connection while the plugin still works on
    the one before it: the proxy reads no more of the plugin's answers, so it cut that one."""
    record = tmp_path / "truncated-c2s.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record),
        "--observer", observer, "--fault", "truncate:dir=c2s,method=ping",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
            client.sendall(
                GOLEM.encode({"id": "slow-1", "method": "debug.sleep", "params": {"seconds": 1}})
                + GOLEM.encode({"id": "cut-2", "method": "ping", "params": {}})
            )
            assert client.recv(65536) == b""  # the proxy's FIN, no answer before it
    finally:
        log = cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    ends = [line for line in lines if line["kind"] == "end"]
    assert [(end["dir"], end["cut"]) for end in ends] == [("s2c", "--fault truncate")]
    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    statuses = {row["method"]: row["status"] for row in rows if row.get("method")}
    assert statuses == {"debug.sleep": "unanswered (truncated by --fault truncate)"}
    (error,) = [line for line in lines if line["kind"] == "frame-error"]
    assert (error["dir"], "cut" in error) == ("c2s", False), error
    cut_rows = [row["status"] for row in rows if not row.get("method")]
    assert cut_rows == ["truncated (--fault truncate)"], rows
    assert "the proxy ended the upstream's stream (--fault truncate): 1 request" in log
