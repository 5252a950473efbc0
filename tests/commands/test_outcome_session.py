"""Failures the real plugin reports inside success envelopes, through every view.

The plugin at golem-3dmcp@9819b31 (the headless plugin's default behaviour) answers a failed
``operations.*`` / ``manipulation.*`` call with a success envelope whose result is the
``@wrap_handler`` error dict, and a failed script with ``{"success": false, …}``. A session
through the real proxy CLI must count each of them as a failure everywhere: the live log, the
recording, ``show``, ``stats``, ``~e``, ``~c``, ``check`` and ``call``.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

import pytest

from golem_proxy.testing.client import GolemClient
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.support.plugin_fixture import plugin_fixture
from tests.support.waiting import receive_exactly

from .test_log_cli import ProxyProcess

# (method, params, expected status) for every call the session makes that fails.
FAILING = [
    ("operations.boolean_union", {"guids": []}, "INVALID_PARAMS (in result)"),
    ("operations.boolean_difference", {}, "INVALID_PARAMS (in result)"),
    ("operations.boolean_intersection", {"guid_a": "nope", "guid_b": "nope"}, None),
    ("manipulation.move", {}, "INVALID_PARAMS (in result)"),
    ("manipulation.delete", {"ids": ["not-a-guid"]}, None),
    ("manipulation.scale", {}, "INVALID_PARAMS (in result)"),
    ("manipulation.rotate", {"ids": []}, "INVALID_PARAMS (in result)"),
    ("scripting.execute_python", {"code": "raise ValueError('boom')"}, "success: false"),
    ("scripting.execute_rhinocommand", {"command": "NoSuchCommand"}, "success: false"),
    ("nosuch.method", {}, "APPLICATION_ERROR"),
    ("operations.boolean_union", {"guids": ["only-one"]}, "INVALID_PARAMS (in result)"),
    ("manipulation.move", {"ids": [], "translation": [1, 0, 0]}, None),
]
SUCCEEDING = [
    ("ping", {}),
    ("scripting.execute_python", {"code": "x = 1"}),
    ("geometry.create_box", {"corner": [0, 0, 0], "width": 1, "height": 1, "depth": 1}),
]


plugin = plugin_fixture(seed=3, extra_args=("--allow-scripts",))


def raw_call(client: GolemClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One request on the client's socket; the decoded answer, whatever it says."""
    sock = client._sock
    assert sock is not None
    payload = json.dumps({"id": f"t-{method}", "method": method, "params": params}).encode()
    sock.sendall(struct.pack("!I", len(payload)) + payload)
    header = receive_exactly(sock, 4)
    answer = json.loads(receive_exactly(sock, struct.unpack("!I", header)[0]))
    assert isinstance(answer, dict)
    return answer


@pytest.fixture(scope="module")
def session(plugin: PluginProcess, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recorded session of the calls above, through the proxy CLI. Returns the recording;
    the proxy's log is next to it (``log.txt``)."""
    where = tmp_path_factory.mktemp("outcome")
    trace = where / "session.jsonl"
    proxy = ProxyProcess(where, plugin.main, "--record", str(trace))
    try:
        with GolemClient("127.0.0.1", proxy.port, timeout=20) as client:
            for method, params in SUCCEEDING:
                answer = raw_call(client, method, params)
                assert answer["error"] is None, answer
            for method, params, _ in FAILING:
                raw_call(client, method, params)
            raw_call(client, "scene.list_layers", {})  # the last line the log will show
        # Every exchange is in the log before the proxy is stopped (the last one included).
        proxy.read_until(re.compile(rb"scene\.list_layers\s+ok.*\n"))
        assert proxy.stop() == 0
    finally:
        proxy.kill()
    (where / "log.txt").write_bytes(bytes(proxy.out))
    return trace


def test_the_live_log_says_in_result_failures(session: Path) -> None:
    log = (session.parent / "log.txt").read_text("utf-8")
    assert log.count("(in result)") == sum(
        1 for _, _, status in FAILING if status is None or "(in result)" in status
    )
    assert log.count("success: false") == 2
    assert "boolean_union requires at least 2 GUIDs." in log  # the result's message is shown


def test_the_recording_status_says_it(session: Path) -> None:
    lines = [json.loads(line) for line in session.read_text("utf-8").splitlines()[1:]]
    exchanges = [line for line in lines if line["kind"] == "exchange"]
    failed = [line for line in exchanges if line["outcome"] != "ok"]
    assert len(failed) == len(FAILING)
    assert {line["outcome"] for line in failed} == {"error-in-result", "unsuccessful", "error"}
    for line, (method, _, status) in zip(exchanges[-len(FAILING) - 1 : -1], FAILING):
        assert line["method"] == method
        if status is not None:
            assert line["status"] == status


def test_show_stats_and_filters_count_every_failure(session: Path) -> None:
    failed = run_cli("show", str(session), "--json", "-f", "~e")
    assert failed.returncode == 0, failed.stderr
    rows = [json.loads(line) for line in failed.stdout.splitlines()]
    assert len(rows) == len(FAILING)
    assert [row["method"] for row in rows] == [method for method, _, _ in FAILING]
    for row, (_, _, status) in zip(rows, FAILING):
        assert row["error"] is True
        if status is not None:
            assert row["status"] == status

    stats = run_cli("stats", str(session), "--json")
    assert stats.returncode == 0, stats.stderr
    methods = json.loads(stats.stdout)["methods"]
    assert sum(row["errors"] for row in methods) == len(FAILING)

    in_result = run_cli("show", str(session), "--json", "-f", "~c INVALID_PARAMS")
    codes = [json.loads(line)["status"] for line in in_result.stdout.splitlines()]
    assert codes and all(code == "INVALID_PARAMS (in result)" for code in codes)
    expected = sum(1 for _, _, status in FAILING if status == "INVALID_PARAMS (in result)")
    assert len(codes) >= expected

    shown = run_cli("show", str(session))
    assert shown.returncode == 0, shown.stderr
    assert shown.stderr == ""  # a proxy stopped with Ctrl-C closes its recording
    assert "success: false" in shown.stdout


def test_check_counts_the_failures(session: Path) -> None:
    done = run_cli("check", str(session), "--json")
    report = json.loads(done.stdout)
    assert report["failed_flows"]["count"] == len(FAILING)
    text = run_cli("check", str(session))
    assert f"{len(FAILING)} flows failed:" in text.stdout
    assert re.search(r"\d+ INVALID_PARAMS \(in result\)", text.stdout)


def test_call_exits_1_on_a_failure_in_the_result(plugin: PluginProcess) -> None:
    target = str(plugin.main)
    failed = run_cli("call", "operations.boolean_union", '{"guids": []}', "--target", target)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert '"INVALID_PARAMS"' in failed.stdout
    assert "INVALID_PARAMS (in result)" in failed.stderr
    script = run_cli(
        "call", "scripting.execute_python", '{"code": "raise ValueError(1)"}', "--target", target
    )
    assert script.returncode == 1, script.stdout + script.stderr
    assert run_cli("call", "ping", "--target", target).returncode == 0
