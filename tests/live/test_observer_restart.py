"""A dead observing process is replaced (``proxy --observer child-process``,
live/observer_restart.py): the same recording goes on after a line saying when and why, the
connection the GOLEM MCP server keeps open the whole session is taken up at its next frame with
its frame numbers going on, and past ``--observer-restarts`` observation stops as before. The
real command line, a real upstream, the observing process really killed."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from bench.processes import observing_process, observing_processes
from bench.robustness.proxy_cli import ProxyCli, start_proxy_cli
from bench.threaded_server import ThreadedServer
from golem_core.blocking import MessageReader
from golem_core.messages import Request, Response, Role
from golem_core.profiles import GOLEM
from golem_proxy.live.observer_launch import TEST_MODULE
from golem_proxy.live.observer_restart import STANDBY_SETTLED
from golem_proxy.recording.format import read_recording
from tests.support.cli_helpers import run_cli

from .fake_observing import MODE
from .observer_child_helpers import (
    CountingClient,
    golem_calls,
    observed_proxy,
    process_gone,
    wait_for,
)

CHILD = ("--observer", "child-process")


def _lines(record: Path) -> list[dict[str, Any]]:
    """The event lines written so far (a last line being written left out)."""
    data = record.read_bytes()
    whole = data[: data.rfind(b"\n") + 1]
    return [json.loads(line) for line in whole.splitlines()[1:]]


def _restarted_lines(record: Path) -> int:
    if not record.exists():
        return 0
    return sum(1 for line in _lines(record) if line["kind"] == "observation-restarted")


def _exchanges(record: Path) -> int:
    return sum(1 for line in _lines(record) if line["kind"] == "exchange")


def _kill_observer(cli: ProxyCli, record: Path, restarts: int) -> None:
    """Kill the observing process and wait until its successor took over (``restarts`` lines
    in the recording by then)."""
    observer = observing_process(cli.process.pid)
    os.kill(observer, signal.SIGKILL)
    wait_for(lambda: process_gone(observer), what="the observing process to die")
    wait_for(lambda: _restarted_lines(record) == restarts, what="the restart line")


class _Client:
    """One connection kept open the whole session, as the GOLEM MCP server keeps its own."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.reader = MessageReader(self.sock)
        self.sent = 0

    def calls(self, count: int) -> None:
        for _ in range(count):
            self.sent += 1
            self.sock.sendall(GOLEM.encode({"id": self.sent, "method": "echo", "params": {}}))
            answer = self.reader.read_message(Role.RESPONSE)
            assert isinstance(answer, Response) and answer.id == self.sent

    def close(self) -> None:
        self.sock.close()


def test_a_persistent_connection_is_recorded_on_after_the_observer_is_killed(
    tmp_path: Path,
) -> None:
    record = tmp_path / "restarted.jsonl"
    with observed_proxy(record, *CHILD) as cli:
        client = _Client(cli.port)
        try:
            client.calls(20)
            wait_for(lambda: _exchanges(record) == 20, what="the first calls recorded")
            _kill_observer(cli, record, 1)
            client.calls(20)
            golem_calls(cli.port, [{"id": "new", "method": "echo", "params": {}}])
        finally:
            client.close()
            printed = cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert "Traceback" not in cli.stderr, cli.stderr
    assert (
        "golem-proxy: observation stopped (the observing process was killed by SIGKILL); "
        "forwarding goes on; restarting it" in cli.stderr
    )
    assert "golem-proxy: observation restarted: 1 open connection taken up" in cli.stderr
    assert "the observing process was replaced 1 time" in cli.stderr + printed
    recording = read_recording(str(record))  # the strict reader reads it whole
    assert not recording.truncated_tail
    lines = _lines(record)
    assert [line["seq"] for line in lines] == list(range(1, len(lines) + 1))
    (restart,) = [line for line in lines if line["kind"] == "observation-restarted"]
    assert "killed by SIGKILL" in restart["detail"]
    after = lines[lines.index(restart) + 1 :]
    first = [line for line in lines if line.get("conn") == 1]
    # The kept connection: its gap said once each way, its frames numbered on, every call made
    # after the restart recorded and answered (none taken for an orphan).
    gaps = [line for line in after if line["kind"] == "unobserved" and line["conn"] == 1]
    assert sorted(line["dir"] for line in gaps) == ["c2s", "s2c"]
    assert all(line["reason"] == "restarted" for line in gaps)
    requests = [line["n"] for line in first if line["kind"] == "frame" and line["dir"] == "c2s"]
    assert requests == sorted(set(requests)), "frame numbers repeat after the restart"
    exchanges = [line for line in after if line["kind"] == "exchange" and line["conn"] == 1]
    assert len(exchanges) == 20 and {line["status"] for line in exchanges} == {"ok"}
    assert _exchanges(record) == 41  # the 20 before the death too, and the new connection's
    assert not [line for line in lines if line["kind"] == "violation"]
    assert [line["kind"] for line in first if line["kind"] in ("open", "close")] == [
        "open",
        "close",
    ]
    # A connection opened after the restart is recorded whole.
    conns = {line["conn"] for line in after if line["kind"] == "open"}
    assert len(conns) == 1


def _standby(cli: ProxyCli) -> tuple[int, int]:
    """(the observing process, the standby waiting to replace it), once both run."""
    wait_for(lambda: len(observing_processes(cli.process.pid)) == 2, what="a standby")
    active, standby = observing_processes(cli.process.pid)
    return active, standby


def test_a_standby_started_ahead_takes_over_and_another_waits_after_it(tmp_path: Path) -> None:
    record = tmp_path / "standby.jsonl"
    with observed_proxy(record, *CHILD) as cli:
        client = _Client(cli.port)
        try:
            client.calls(3)
            active, standby = _standby(cli)
            wait_for(lambda: _exchanges(record) == 3, what="the first calls recorded")
            os.kill(active, signal.SIGKILL)
            wait_for(lambda: _restarted_lines(record) == 1, what="the restart line")
            assert observing_process(cli.process.pid) == standby  # it was the one waiting
            client.calls(3)
            _, second = _standby(cli)  # another waits to replace it in turn
            assert second not in (active, standby)
        finally:
            client.close()
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert process_gone(second), "the standby was left running"
    assert _exchanges(record) == 6


def test_a_new_process_takes_over_when_the_standby_died_first(tmp_path: Path) -> None:
    record = tmp_path / "no-standby.jsonl"
    with observed_proxy(record, *CHILD, "--observer-restarts", "1") as cli:
        client = _Client(cli.port)
        try:
            active, standby = _standby(cli)
            os.kill(standby, signal.SIGKILL)
            wait_for(lambda: process_gone(standby), what="the standby to die")
            client.calls(3)
            wait_for(lambda: _exchanges(record) == 3, what="the first calls recorded")
            os.kill(active, signal.SIGKILL)
            wait_for(lambda: _restarted_lines(record) == 1, what="the restart line")
            assert observing_process(cli.process.pid) not in (active, standby)
            client.calls(3)
            # No restart is left: no standby waits for one.
            assert len(observing_processes(cli.process.pid)) == 1
        finally:
            client.close()
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert "observation restarted: 1 open connection taken up" in cli.stderr
    assert _exchanges(record) == 6


def _age(pid: int) -> float:
    """Seconds since ``pid`` started (from /proc)."""
    ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return uptime - ticks / os.sysconf("SC_CLK_TCK")


def test_a_standby_that_dies_while_it_waits_is_replaced(tmp_path: Path) -> None:
    record = tmp_path / "standby-died.jsonl"
    with observed_proxy(record, *CHILD) as cli:
        client = _Client(cli.port)
        try:
            active, standby = _standby(cli)
            settled = STANDBY_SETTLED + 0.2
            wait_for(lambda: _age(standby) >= settled, what="the standby to have waited")
            os.kill(standby, signal.SIGKILL)
            wait_for(
                lambda: observing_processes(cli.process.pid)[1:] not in ([], [standby]),
                what="another standby",
            )
            _, replacement = observing_processes(cli.process.pid)
            client.calls(3)
            wait_for(lambda: _exchanges(record) == 3, what="the first calls recorded")
            os.kill(active, signal.SIGKILL)
            wait_for(lambda: _restarted_lines(record) == 1, what="the restart line")
            assert observing_process(cli.process.pid) == replacement
            client.calls(3)
        finally:
            client.close()
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert _exchanges(record) == 6


def test_a_frame_cut_by_the_death_is_skipped_and_the_next_one_recorded(tmp_path: Path) -> None:
    record = tmp_path / "cut.jsonl"
    big = GOLEM.encode({"id": "cut", "method": "echo", "params": {"blob": "x" * 200_000}})
    with observed_proxy(record, *CHILD) as cli:
        client = _Client(cli.port)
        try:
            client.calls(3)
            client.sock.sendall(big[:70_000])  # half a frame, then the observer dies
            _kill_observer(cli, record, 1)
            client.sock.sendall(big[70_000:])
            assert client.reader.read_message(Role.RESPONSE) is not None
            client.calls(5)
        finally:
            client.close()
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    lines = _lines(record)
    restart = next(i for i, line in enumerate(lines) if line["kind"] == "observation-restarted")
    after = lines[restart + 1 :]
    (c2s,) = [line for line in after if line["kind"] == "unobserved" and line["dir"] == "c2s"]
    assert c2s["size"] >= len(big) - 70_000  # the rest of the cut frame, at least
    frames = [line for line in after if line["kind"] == "frame" and line["dir"] == "c2s"]
    assert [line.get("id") for line in frames] == [4, 5, 6, 7, 8]
    exchanges = [line for line in after if line["kind"] == "exchange"]
    assert len(exchanges) == 5
    assert not [line for line in lines if line["kind"] in ("violation", "frame-error")]
    # The gap counts what crossed while no observing process ran, not what the dead one had
    # been handed and not recorded: the readers say it is the least that went by.
    checked = run_cli("check", str(record), "--allow-incomplete")
    assert checked.returncode == 0, checked.stderr
    assert "1 unobserved:restarted, at least " in checked.stdout
    report = json.loads(run_cli("check", str(record), "--json", "--allow-incomplete").stdout)
    restarted = report["not_inspected"]["unobserved"]["by_reason"]["restarted"]
    assert restarted["bytes_at_least"] is True and restarted["bytes"] >= c2s["size"]
    shown = run_cli("show", str(record), "--json").stdout.splitlines()
    gaps = [row for row in map(json.loads, shown) if row["status"] == "unobserved:restarted"]
    on_conn = [row for row in gaps if row["conn"]]
    assert [row["request_size"] for row in on_conn if row["request_size"]] == [c2s["size"]]
    assert all(row.get("size_at_least") for row in on_conn)
    assert f"≥{c2s['size']}" in run_cli("show", str(record)).stdout
    # The session's row says when the restart was: no size (it counted none, not 0 bytes).
    (session,) = [row for row in gaps if not row["conn"]]
    assert (session["request_size"], session["response_size"]) == (None, None)


def test_past_its_restarts_observation_stops_for_the_rest_of_the_session(tmp_path: Path) -> None:
    record = tmp_path / "stopped.jsonl"
    with observed_proxy(record, *CHILD, "--observer-restarts", "1") as cli:
        client = _Client(cli.port)
        try:
            client.calls(5)
            _kill_observer(cli, record, 1)
            client.calls(5)
            observer = observing_process(cli.process.pid)
            os.kill(observer, signal.SIGKILL)
            wait_for(lambda: _lines(record)[-1]["kind"] == "observation-stopped", what="the end")
            client.calls(5)  # forwarding goes on
        finally:
            client.close()
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    kinds = [line["kind"] for line in _lines(record)]
    assert kinds.count("observation-restarted") == 1
    assert kinds[-2:] == ["observation-stopped", "session-end"]
    assert cli.stderr.count("observation stopped (") == 2


def test_a_process_that_misbehaves_each_time_is_replaced_until_its_restarts_run_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every observing process is the test suite's fake, which acknowledges more than it was
    # handed once it has read a little: broken, stopped, replaced, twice; then for good.
    monkeypatch.setenv(TEST_MODULE, "tests.live.fake_observing")
    monkeypatch.setenv(MODE, "beyond")
    record = tmp_path / "broken.jsonl"
    with observed_proxy(record, *CHILD, "--observer-restarts", "2") as cli:
        client = CountingClient(cli.port)
        try:
            wait_for(
                lambda: _lines(record) and _lines(record)[-1]["kind"] == "observation-stopped",
                what="observation to stop after the restarts",
            )
            served = client.answers
            wait_for(lambda: client.answers > served + 50, what="calls after the last stop")
        finally:
            client.stop()
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert "Traceback" not in cli.stderr, cli.stderr
    assert cli.stderr.count("restarting it") == 2
    assert cli.stderr.count("observation restarted") == 2
    read_recording(str(record))
    lines = _lines(record)
    assert [line["kind"] for line in lines] == [
        "observation-restarted",
        "observation-restarted",
        "observation-stopped",
        "session-end",  # the session ended in order after observation stopped
    ]
    assert [line["seq"] for line in lines] == [1, 2, 3, 4]
    assert all("acknowledged more than was handed on" in line["detail"] for line in lines[:3])


class HoldingUpstream(ThreadedServer):
    """A GOLEM upstream that answers ``echo`` at once, and holds the answers to ``hold``
    requests: once ``holds`` of them came on a connection, it waits for `released` and then
    answers them, the last first."""

    def __init__(self, holds: int) -> None:
        self.holds = holds
        self.released = threading.Event()
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        with conn:
            reader = MessageReader(conn)
            held: list[Any] = []
            try:
                while (request := reader.read_message(Role.REQUEST)) is not None:
                    assert isinstance(request, Request)
                    ids = [request.id]
                    if request.method == "hold":
                        held.append(request.id)
                        if len(held) < self.holds:
                            continue
                        assert self.released.wait(60)
                        ids, held = held[::-1], []
                    for ident in ids:
                        conn.sendall(GOLEM.encode(GOLEM.success(ident, {"answered": ident})))
            except OSError:
                pass


def _held_recorded(record: Path) -> int:
    if not record.exists():
        return 0
    return sum(1 for line in _lines(record) if line.get("method") == "hold")


def test_an_answer_after_the_restart_is_paired_with_its_request_recorded_before_it(
    tmp_path: Path,
) -> None:
    """Two requests recorded by the observing process that dies, answered (the last first)
    once its successor took over: each answer is paired with its request as if no process had
    died (``answers``, an exchange with its status and latency), and ``show`` has one flow
    for each."""
    record = tmp_path / "held.jsonl"
    with HoldingUpstream(holds=2) as upstream:
        cli = start_proxy_cli(
            "--route", f"127.0.0.1:0=127.0.0.1:{upstream.port}", "--record", str(record), *CHILD
        )  # fmt: skip
        client = _Client(cli.port)
        try:
            client.calls(3)
            for ident in ("held-1", "held-2"):
                client.sock.sendall(GOLEM.encode({"id": ident, "method": "hold", "params": {}}))
            wait_for(lambda: _held_recorded(record) == 2, what="the held requests recorded")
            _kill_observer(cli, record, 1)
            upstream.released.set()
            answers = [client.reader.read_message(Role.RESPONSE) for _ in range(2)]
            assert [getattr(answer, "id", None) for answer in answers] == ["held-2", "held-1"]
            client.calls(2)
        finally:
            client.close()
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert "Traceback" not in cli.stderr, cli.stderr
    read_recording(str(record))  # the strict reader reads it whole
    lines = _lines(record)
    restart = next(i for i, line in enumerate(lines) if line["kind"] == "observation-restarted")
    asked = {line["id"]: line for line in lines[:restart] if line.get("method") == "hold"}
    assert all(line["expects_answer"] for line in asked.values())
    after = lines[restart + 1 :]
    answered = {
        line["id"]: line
        for line in after
        if line["kind"] == "frame" and line["dir"] == "s2c" and line["id"] in asked
    }
    assert {ident: line.get("answers") for ident, line in answered.items()} == {
        ident: line["n"] for ident, line in asked.items()
    }
    assert not any(line.get("orphan") for line in answered.values())
    exchanges = {
        line["req"]: line for line in after if line["kind"] == "exchange" and line["conn"] == 1
    }
    for ident, request in asked.items():
        exchange = exchanges[request["n"]]
        assert exchange["resp"] == answered[ident]["n"]
        assert (exchange["method"], exchange["status"], exchange["outcome"]) == (
            "hold",
            "ok",
            "ok",
        )
        latency = answered[ident]["t"] - request["t"]
        assert exchange["latency"] == pytest.approx(latency, abs=2e-6) and latency > 0
    assert len(exchanges) == 4  # the two held calls and the two made after them
    assert not [line for line in lines if line["kind"] == "violation"]
    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(text) for text in shown.stdout.splitlines()]
    # The restart's rows (the session's, and the kept connection's gap each way) aside, one
    # flow per call, none pending and no answer on a row of its own.
    flows = [row for row in rows if row["status"] != "unobserved:restarted"]
    assert len(rows) - len(flows) == 3
    assert [flow["id"] for flow in flows] == [1, 2, 3, "held-1", "held-2", 4, 5]
    assert {flow["status"] for flow in flows} == {"ok"}
    held = [flow for flow in flows if flow["method"] == "hold"]
    assert all(flow["response"] == {"id": flow["id"], "result": {"answered": flow["id"]},
                                    "error": None} for flow in held)  # fmt: skip
    assert all(flow["latency_ms"] > 0 for flow in held)


def test_the_closing_line_of_a_process_that_took_over_counts_requests_without_an_answer(
    tmp_path: Path,
) -> None:
    """Two requests recorded in flight by the observing process that dies, a third sent after
    its successor took over, none answered: the successor's closing line counts all three
    (it waited for their answers too), as `show` has a row for each."""
    record = tmp_path / "unanswered.jsonl"
    with HoldingUpstream(holds=4) as upstream:
        cli = start_proxy_cli(
            "--route", f"127.0.0.1:0=127.0.0.1:{upstream.port}", "--record", str(record),
            "--drain-timeout", "0.5", *CHILD,
        )  # fmt: skip
        client = _Client(cli.port)
        try:
            client.calls(1)
            for ident in ("held-1", "held-2"):
                client.sock.sendall(GOLEM.encode({"id": ident, "method": "hold", "params": {}}))
            wait_for(lambda: _held_recorded(record) == 2, what="the held requests recorded")
            _kill_observer(cli, record, 1)
            client.sock.sendall(GOLEM.encode({"id": "held-3", "method": "hold", "params": {}}))
            wait_for(lambda: _held_recorded(record) == 3, what="the third one recorded")
        finally:
            cli.stop()
            client.close()
            upstream.released.set()
    assert cli.process.returncode == 0, cli.stderr
    said = "since observation restarted, recorded 0 exchanges (0 errors, 0 violations; 3 requests"
    assert f"{said} without an answer)" in cli.stderr, cli.stderr
    shown = run_cli("show", "--json", str(record))
    rows = [json.loads(text) for text in shown.stdout.splitlines()]
    assert sum(row["method"] == "hold" and row["status"] != "ok" for row in rows) == 3
