"""What the proxy itself did to an exchange (``--fault``) reads as its doing in every view, not
as the plugin's or the client's: `show`'s status and ``~fault``, `check` (a violation in a
frame the proxy corrupted is not the client's, nor a failure), `stats` (the proxy's answers and
delays are counted apart), `query` (a ``faults`` column) and `diff`. A real proxy in front of
the headless plugin, a raw GOLEM client pipelining its requests."""

from __future__ import annotations

import json
import re
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

FAULTS = (
    "--fault", "error:code=TIMEOUT,message=busy,method=scene.list_layers",
    "--fault", "drop:method=scene.get_document_info",
    "--fault", "delay:ms=300,method=scene.create_layer,dir=s2c,times=1",
    "--fault", "corrupt:method=scene.list_objects,dir=c2s,bytes=3",
    "--fault-seed", "3",
)  # fmt: skip


_HELD = re.compile(r"\+(\d+) ms --fault delay")


def _reads(status: str, expected: str) -> bool:
    """Whether ``status`` reads ``expected`` but for each delay's amount, which is the hold
    the proxy measured: the amount asked, or up to 50 ms more (a busy machine wakes the
    relay late)."""
    held = [int(ms) for ms in _HELD.findall(status)]
    asked = [int(ms) for ms in _HELD.findall(expected)]
    same = _HELD.sub("", status) == _HELD.sub("", expected) and len(held) == len(asked)
    return same and all(a <= h < a + 50 for h, a in zip(held, asked))


def _request(ident: str, method: str, params: dict[str, Any]) -> bytes:
    return GOLEM.frame_payload(
        json.dumps({"id": ident, "method": method, "params": params}).encode()
    )


def _read(client: socket.socket, count: int) -> None:
    for _ in range(count):
        size = struct.unpack("!I", receive_exactly(client, 4))[0]
        receive_exactly(client, size)


def _session(plugin: PluginProcess, record: Path, *faults: str) -> None:
    """One session through a proxy recording to ``record``: four pipelined requests on a
    connection (the third's answer dropped when ``faults``), then on another a layer made
    and the objects listed (that request corrupted when ``faults``: the plugin hangs up)."""
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record), *faults
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
            client.sendall(
                _request("a-1", "debug.sleep", {"seconds": 0.2})
                + _request("a-2", "scene.list_layers", {})
                + _request("a-3", "scene.get_document_info", {})
                + _request("a-4", "ping", {})
            )
            _read(client, 3 if faults else 4)
        with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
            client.sendall(_request("b-1", "scene.create_layer", {"name": record.stem}))
            _read(client, 1)
            client.sendall(_request("b-2", "scene.list_objects", {}))
            if not faults:
                _read(client, 1)
            while faults and client.recv(4096):  # to the plugin's hang-up
                pass
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr


@pytest.fixture(scope="module")
def recordings(plugin: PluginProcess, tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("doing")
    _session(plugin, where / "clean.jsonl")
    _session(plugin, where / "faults.jsonl", *FAULTS)
    return where


def _rows(recording: Path, *extra: str) -> dict[str, str]:
    shown = run_cli("show", "--json", *extra, str(recording))
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    return {f"{row['method']}@{row['conn']}": row["status"] for row in rows}


def test_show_says_what_the_proxy_did_in_the_status(recordings: Path) -> None:
    statuses = _rows(recordings / "faults.jsonl")
    assert statuses["scene.list_layers@1"] == "TIMEOUT (--fault error)"
    assert statuses["scene.get_document_info@1"] == "unanswered (withheld: --fault drop)"
    assert _reads(statuses["scene.create_layer@2"], "ok (+300 ms --fault delay)")
    assert statuses["debug.sleep@1"] == "ok"
    assert statuses["ping@1"] == "ok"
    [corrupted] = [status for key, status in statuses.items() if key.startswith("None@2")]
    assert corrupted.startswith("malformed:") and corrupted.endswith(" (--fault corrupt)")
    table = run_cli("show", str(recordings / "faults.jsonl"))
    assert "TIMEOUT (--fault error)" in table.stdout
    assert "unanswered (withheld: --fault drop)" in table.stdout
    # ~fault: the flows the proxy acted on, and only those.
    assert sorted(_rows(recordings / "faults.jsonl", "--filter", "~fault")) == [
        "None@2",
        "scene.create_layer@2",
        "scene.get_document_info@1",
        "scene.list_layers@1",
    ]
    assert _rows(recordings / "clean.jsonl", "--filter", "~fault") == {}


def test_a_delay_carries_the_hold_the_proxy_measured(recordings: Path) -> None:
    """The relay that held the answer measured the hold: the recording's line and `show
    --json` carry it as a number, and the status says that number (not the words)."""
    record = recordings / "faults.jsonl"
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    [delay] = [line for line in lines if line.get("fault") == "delay"]
    assert 0.3 <= delay["held"] < 0.35, delay
    shown = run_cli("show", "--json", str(record))
    [row] = [
        r for r in map(json.loads, shown.stdout.splitlines()) if r["method"] == "scene.create_layer"
    ]
    [step] = row["faults"]
    assert (step["fault"], step["held"]) == ("delay", delay["held"])
    assert row["status"] == f"ok (+{delay['held'] * 1000:.0f} ms --fault delay)"


def test_check_does_not_blame_the_client_for_a_frame_the_proxy_corrupted(
    recordings: Path,
) -> None:
    checked = run_cli("check", "--allow-incomplete", str(recordings / "faults.jsonl"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    said = " ".join(checked.stdout.split())
    assert "golem.message.malformed by proxy 1" in said
    assert "the proxy's doing (--fault corrupt), not the frame's sender's" in said
    assert "0 errors, 0 warnings" in said
    assert "1 violation made by the proxy itself" in said
    report = json.loads(
        run_cli("check", "--json", "--allow-incomplete", str(recordings / "faults.jsonl")).stdout
    )
    assert (report["errors"], report["by_proxy"]) == (0, 1)
    [finding] = report["rules"][0]["findings"]
    assert finding["by_proxy"] == "--fault corrupt"


def test_stats_counts_the_proxys_answers_and_delays_apart(recordings: Path) -> None:
    stats = run_cli("stats", "--json", str(recordings / "faults.jsonl"))
    assert stats.returncode == 0, stats.stderr
    rows = {row["method"]: row for row in json.loads(stats.stdout)["methods"]}
    injected = rows["scene.list_layers"]
    assert (injected["count"], injected["errors"], injected["by_proxy"]) == (1, 0, 1)
    delayed = rows["scene.create_layer"]
    assert delayed["by_proxy"] == 1
    assert delayed["latency"]["measured"] == 0  # 300 ms of the proxy's are no plugin's
    assert rows["scene.get_document_info"]["errors"] == 0
    assert rows["ping"]["by_proxy"] == 0


def test_query_has_a_faults_column(recordings: Path) -> None:
    sql = "SELECT method, faults FROM flows WHERE len(faults) > 0 ORDER BY n"
    queried = run_cli("query", "--jobs", "1", "--json", sql, str(recordings / "faults.jsonl"))
    assert queried.returncode == 0, queried.stderr
    rows = [json.loads(line) for line in queried.stdout.splitlines()]
    assert rows == [
        {"method": "scene.list_layers", "faults": ["--fault error"]},
        {"method": "scene.get_document_info", "faults": ["--fault drop"]},
        {"method": "scene.create_layer", "faults": ["--fault delay"]},
        {"method": None, "faults": ["--fault corrupt"]},
    ]


def test_diff_says_a_difference_is_the_proxys_doing(recordings: Path) -> None:
    diffed = run_cli("diff", str(recordings / "clean.jsonl"), str(recordings / "faults.jsonl"))
    assert diffed.returncode == 1, diffed.stderr
    lines = [" ".join(line.split()) for line in diffed.stdout.splitlines()]
    changed = [line for line in lines if "scene.list_layers" in line and "changed" in line]
    assert len(changed) == 1
    assert changed[0].endswith("the proxy's doing: B#2 --fault error")


def test_diff_json_names_the_proxys_steps_on_a_pair(recordings: Path) -> None:
    """``diff --json`` says what the text says: which side's row the proxy acted on, and how,
    so that a difference it made is not read as the plugin's."""
    paths = (str(recordings / "clean.jsonl"), str(recordings / "faults.jsonl"))
    diffed = run_cli("diff", "--json", *paths)
    assert diffed.returncode == 1, diffed.stderr
    pairs = {pair["method"]: pair for pair in json.loads(diffed.stdout)["exchanges"]}
    layers = pairs["scene.list_layers"]
    assert (layers["status"], layers["b"], layers["b_proxy"]) == ("changed", 2, ["--fault error"])
    assert "a_proxy" not in layers
    dropped = pairs["scene.get_document_info"]
    assert (dropped["status"], dropped["b_proxy"]) == ("unanswered-b", ["--fault drop"])
    # The other way round, the proxy's row is A's.
    flipped = run_cli("diff", "--json", *reversed(paths))
    pairs = {pair["method"]: pair for pair in json.loads(flipped.stdout)["exchanges"]}
    assert pairs["scene.list_layers"]["a_proxy"] == ["--fault error"]
    assert "b_proxy" not in pairs["scene.list_layers"]


MIXED = (
    "--fault", "delay:ms=200,method=scene.get_object,dir=c2s",
    "--fault", "drop:method=scene.list_layers,times=1",
    "--fault", "delay:ms=100,method=scene.list_layers,dir=s2c",
    "--fault", "corrupt:method=scene.get_document_info,dir=s2c",
    "--fault-seed", "3",
)  # fmt: skip
"""Requests the proxy only delayed (the plugin errs on them all the same), an answer delayed
and then dropped, and an answer corrupted so that it pairs with no request."""


@pytest.fixture(scope="module")
def mixed(plugin: PluginProcess, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five requests pipelined through a proxy with `MIXED`: rows 1 and 4 the plugin's
    errors, delayed on their way; row 2's answer delayed then dropped; row 3's delayed;
    row 5's corrupted (a row of its own, #6)."""
    record = tmp_path_factory.mktemp("mixed") / "mixed.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record), *MIXED
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
            client.sendall(
                _request("m-1", "scene.get_object", {})
                + _request("m-2", "scene.list_layers", {})
                + _request("m-3", "scene.list_layers", {})
                + _request("m-4", "scene.get_object", {})
                + _request("m-5", "scene.get_document_info", {})
            )
            _read(client, 4)  # m-2's answer is dropped
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    return record


def _statuses(recording: Path) -> list[str]:
    shown = run_cli("show", "--json", str(recording))
    assert shown.returncode == 0, shown.stderr
    return [json.loads(line)["status"] for line in shown.stdout.splitlines()]


def test_a_delay_is_said_on_the_row_of_the_answer_it_held(mixed: Path) -> None:
    statuses = _statuses(mixed)
    assert _reads(statuses[0], "APPLICATION_ERROR (+200 ms --fault delay)")
    assert _reads(statuses[1], "unanswered (+100 ms --fault delay; withheld: --fault drop)")
    assert _reads(statuses[2], "ok (+100 ms --fault delay)")
    assert _reads(statuses[3], "APPLICATION_ERROR (+200 ms --fault delay)")
    # check's failed rows read the same placement as show's.
    checked = run_cli("check", "--allow-incomplete", str(mixed))
    failed = " ".join(line for line in checked.stdout.splitlines() if "flows failed" in line)
    for status in (statuses[0], statuses[1], statuses[3]):
        assert f" {status}" in failed, checked.stdout


def test_a_request_whose_answer_the_proxy_corrupted_says_so(mixed: Path) -> None:
    statuses = _statuses(mixed)
    assert statuses[4] == "unanswered (its answer corrupted by --fault corrupt: #6)"
    assert statuses[5].startswith("malformed:") and statuses[5].endswith(" (--fault corrupt)")
    checked = run_cli("check", "--allow-incomplete", str(mixed))
    failed = " ".join(line for line in checked.stdout.splitlines() if "flows failed" in line)
    assert "1 unanswered (its answer corrupted by --fault corrupt: #6)" in failed


def test_stats_counts_the_plugins_errors_on_rows_the_proxy_only_delayed(mixed: Path) -> None:
    stats = run_cli("stats", "--json", str(mixed))
    assert stats.returncode == 0, stats.stderr
    rows = {row["method"]: row for row in json.loads(stats.stdout)["methods"]}
    delayed = rows["scene.get_object"]
    # The plugin's "Method not found", twice: its errors, held on their way by the proxy.
    assert (delayed["count"], delayed["errors"], delayed["by_proxy"]) == (2, 2, 2)
    assert delayed["error_rate"] == 1.0
    assert delayed["latency"]["measured"] == 0  # 200 ms of each are the proxy's
    corrupted = rows["scene.get_document_info"]  # the plugin answered; the proxy broke it
    assert (corrupted["errors"], corrupted["by_proxy"], corrupted["error_rate"]) == (0, 1, 0.0)
    layers = rows["scene.list_layers"]  # one answer dropped, one delayed
    assert (layers["count"], layers["errors"], layers["by_proxy"]) == (2, 0, 2)
    table = " ".join(run_cli("stats", str(mixed)).stdout.split())
    assert "waited behind it" in table
