"""``golem-proxy check`` on sessions it cannot inspect whole, recorded by the proxy in its own
process in front of the headless plugin: frames too large to observe, requests let go past
the pairing limits, answers the proxy dropped on purpose. The check says each (as `show` and
`stats` count them) and never passes such a session silently."""

from __future__ import annotations

import json
import socket
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.profiles import GOLEM
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.support.plugin_fixture import plugin_fixture
from tests.support.waiting import receive_exactly

plugin = plugin_fixture(seed=11)

FRAME_LIMIT_MIB = "0.1"
LARGE = 5
"""Requests over the frame limit, each a gap of its own, their answers dropped."""
PIPELINED = 45
"""Requests of 1 MB sent without waiting, their answers dropped: a waiting request costs
about twice its bytes, so past the first ~32 (64 MiB) the oldest are let go."""


def _request(number: int, pad: int) -> bytes:
    body = {"id": number, "method": "scene.list_objects", "params": {"pad": "x" * pad}}
    return GOLEM.frame_payload(json.dumps(body).encode())


def _session(port: int, requests: int, pad: int, last: bytes) -> None:
    """Send ``requests`` list_objects of ``pad`` bytes, then ``last`` (a ping), and wait for
    the ping's answer: the plugin answers in order, so every answer the proxy drops was
    dropped by then."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
        client.sendall(b"".join(_request(n, pad) for n in range(requests)))
        client.sendall(GOLEM.frame_payload(last))
        size = struct.unpack("!I", receive_exactly(client, 4))[0]
        assert json.loads(receive_exactly(client, size))["id"] == "last"


@pytest.fixture(scope="module")
def too_large(plugin: PluginProcess, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five requests over ``--observe-frame-limit``, their answers dropped, and a ping sent
    without params (a warning)."""
    path = tmp_path_factory.mktemp("check") / "too-large.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(path),
        "--observe-frame-limit", FRAME_LIMIT_MIB, "--fault", "drop:method=scene.list_objects",
    )  # fmt: skip
    try:
        _session(cli.port, LARGE, 200_000, b'{"id": "last", "method": "ping"}')
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    return path


@pytest.fixture(scope="module")
def let_go(plugin: PluginProcess, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`PIPELINED` requests of 1 MB, none answered (dropped): the oldest let go. Returns the
    recording and the proxy's closing line."""
    path = tmp_path_factory.mktemp("check") / "let-go.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(path),
        "--fault", "drop:method=scene.list_objects",
    )  # fmt: skip
    try:
        _session(cli.port, PIPELINED, 1_000_000, b'{"id": "last", "method": "ping", "params": {}}')
    finally:
        printed = cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    said = (printed + cli.stderr).splitlines()
    closing = [line for line in said if line.startswith("golem-proxy proxy:")]
    return path, closing[-1]


def _check(*args: str) -> tuple[int, str, dict[str, Any]]:
    """``check ARGS`` as text (exit code, stdout) and as JSON."""
    text = run_cli("check", *args)
    assert "Traceback" not in text.stderr, text.stderr
    data = run_cli("check", "--json", *args)
    assert data.returncode == text.returncode, data.stderr
    return text.returncode, text.stdout, json.loads(data.stdout)


def _statuses(path: Path) -> Counter[str]:
    shown = run_cli("show", "--json", str(path))
    assert shown.returncode == 0, shown.stderr
    return Counter(json.loads(line)["status"] for line in shown.stdout.splitlines())


def _stats(path: Path) -> dict[str, Any]:
    done = run_cli("stats", "--json", str(path))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_gaps_and_dropped_answers_are_said_and_do_not_pass(too_large: Path) -> None:
    code, out, data = _check(str(too_large))
    assert code == 3, out
    lines = out.splitlines()
    assert "no contract violations" not in lines  # only in what was inspected
    gaps = f"not inspected: {LARGE} gaps in what was observed: {LARGE} unobserved:frame-too-large"
    assert gaps in out
    assert (
        f"not inspected: {LARGE} frames the proxy withheld from the client on purpose "
        f"({LARGE} drop): never recorded"
    ) in lines
    assert lines[-1].startswith(f"0 errors, 1 warning in {LARGE + 1} flows; the session was not")
    assert data["complete"] is False
    assert data["not_inspected"]["withheld"] == {
        "frames": LARGE,
        "by_action": {"drop": LARGE},
        "other_actions": 0,
    }
    assert data["not_inspected"]["evicted"] == 0


def test_the_gaps_are_the_rows_show_and_stats_count(too_large: Path) -> None:
    _, _, data = _check(str(too_large))
    gaps = data["not_inspected"]["unobserved"]
    shown = run_cli("show", "--json", str(too_large))
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    unobserved = [row for row in rows if row["status"].startswith("unobserved:")]
    assert gaps["gaps"] == len(unobserved) == LARGE
    assert gaps["bytes"] == sum(row["request_size"] for row in unobserved)
    assert gaps["bytes_at_least"] is False  # a frame too large to observe: its size is known
    assert gaps["by_reason"] == {
        "frame-too-large": {"gaps": LARGE, "bytes": gaps["bytes"], "bytes_at_least": False}
    }
    stats = _stats(too_large)
    assert [row["count"] for row in stats["methods"] if row["method"] == "<gap>"] == [LARGE]
    assert data["flows"] == len(rows) == stats["overall"]["count"]


def test_the_exit_code_of_an_incomplete_check(too_large: Path) -> None:
    assert run_cli("check", "--allow-incomplete", str(too_large)).returncode == 0
    # A finding fails whether or not everything was inspected.
    assert run_cli("check", "--strict", str(too_large)).returncode == 1
    assert run_cli("check", "--strict", "--allow-incomplete", str(too_large)).returncode == 1


def test_drift_says_the_requests_in_gaps_it_did_not_check(too_large: Path) -> None:
    code, out, data = _check(str(too_large), "--catalogue", "golem-3dmcp@9819b31")
    assert code == 3
    said = f"not checked: {LARGE} requests in gaps ({LARGE} unobserved:frame-too-large, "
    assert said in " ".join(out.replace("│", " ").split())  # in the drift panel, maybe wrapped
    not_checked = data["drift"]["not_checked"]
    assert not_checked["gaps"] == LARGE
    assert not_checked == data["not_inspected"]["unobserved"]  # every gap is the client's


def test_requests_let_go_are_said_as_what_they_are(let_go: tuple[Path, str]) -> None:
    path, closing = let_go
    code, out, data = _check(str(path))
    assert code == 3, out
    statuses = _statuses(path)
    evicted = data["not_inspected"]["evicted"]
    # Every answer was dropped by the proxy, and each status says so after what it is.
    dropped = " (withheld: --fault drop)"
    assert evicted == statuses["evicted" + dropped] == _stats(path)["overall"]["evicted"] > 0
    unanswered = data["failed_flows"]["by_status"]["unanswered" + dropped]
    assert unanswered == statuses["unanswered" + dropped]
    # Together they are every request the proxy saw go without an answer.
    assert evicted + unanswered == PIPELINED
    assert f"{PIPELINED} requests without an answer" in closing
    assert (
        f"not inspected: {evicted} requests let go before an answer came (status evicted"
    ) in out
    withheld = data["not_inspected"]["withheld"]
    assert withheld == {
        "frames": PIPELINED,
        "by_action": {"drop": PIPELINED},
        "other_actions": 0,
    }
    # Their gap rows (unobserved:evicted) count requests, not bytes: not among the gaps.
    assert data["not_inspected"]["unobserved"]["gaps"] == 0
