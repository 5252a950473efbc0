"""``kill -9`` of a session run with ``--observer-spool`` loses no exchange: the spool left
beside the recording holds every byte forwarded, readers of the recording say so, and
``golem-proxy recover`` rebuilds the recording from it with the same observing code. The real
command line, real loopback sockets, a slowed observing process (tests/live/slow_observing.py)
so that the recording trails the wire by seconds when the kill comes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bench.processes import observing_processes
from bench.robustness.proxy_cli import ROOT
from golem_core.messages import Response
from golem_core.profiles import GOLEM
from golem_proxy.events import ConnectionClosed
from golem_proxy.live.handoff_connections import CUT_BY_KILL, DOUBT, KILLED
from golem_proxy.live.observer_launch import TEST_MODULE
from golem_proxy.live.spool_recover import _scan
from golem_proxy.recording.format import (
    Header,
    RecordingWriter,
    RouteInfo,
    open_private,
    read_recording,
)
from tests.live.observer_child_helpers import golem_calls, observed_proxy, wait_for

SLOW = "tests.live.slow_observing"
CALLS = 400
SPOOL_LINE = "holds what the proxy forwarded after the recording's last line (it was killed)"


def _golem(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "golem_proxy", *args],
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200"),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _calls(count: int, first: int = 0) -> list[dict[str, object]]:
    return [{"id": n, "method": "echo", "params": {"n": n}} for n in range(first, first + count)]


def _kill_everything(proxy_pid: int) -> None:
    """SIGKILL the proxy and its observing processes (a process group of their own), as
    ``kill -9`` of everything does, and wait until they are gone."""
    observing = observing_processes(proxy_pid)
    os.kill(proxy_pid, signal.SIGKILL)
    for pid in observing:
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not any(_alive(pid) for pid in observing), what="the observing processes")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _ids(record: Path) -> list[object]:
    return [e.request.message.id for e in read_recording(str(record)).exchanges()]


def test_recover_rebuilds_every_completed_exchange_after_kill_9(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TEST_MODULE, SLOW)
    record = tmp_path / "session.jsonl"
    spool = Path(f"{record}.spool")
    with observed_proxy(record, "--observer-spool") as cli:
        answers = golem_calls(cli.port, _calls(CALLS))
        # Every call was answered: the recording trails by seconds (3 ms a record).
        _kill_everything(cli.process.pid)
        cli.process.communicate()
    completed = [a.id for a in answers if isinstance(a, Response)]
    assert completed == list(range(CALLS))
    assert spool.exists()
    assert len(_ids(record)) < CALLS  # what the kill cost the recording

    for command in (
        ("show", str(record)),
        ("stats", str(record)),
        ("check", str(record)),
        ("export", "--format", "jsonl", "--out", str(tmp_path / "out.jsonl"), str(record)),
        ("query", "--cache", str(tmp_path / "cache"), "SELECT count(*) FROM flows", str(record)),
    ):
        read = _golem(*command, cwd=tmp_path)
        said = f"note: {record}.spool {SPOOL_LINE}: golem-proxy recover {record}\n"
        assert read.stderr.count(said) == 1, (command, read.stderr)

    done = _golem("recover", str(record), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "recovered, " in done.stdout, done.stdout
    assert not spool.exists()
    # A chunk goes to the spool right after its write to the receiver: the client, woken by
    # the last answer, may take the CPU and kill the proxy in between (see "The spool" in
    # docs/reliability.md). Every answer before the last is in the spool, whatever the timing.
    assert _ids(record) in (completed, completed[:-1])
    last = read_recording(str(record)).events[-1]
    assert "recovered from" in getattr(last, "reason", ""), last
    shown = _golem("show", str(record), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert SPOOL_LINE not in shown.stderr
    # Every exchange is a row; when the kill came between the last answer's write to the
    # client and its hand-on, that request is a row of its own too, unanswered.
    rows = len(_ids(record))
    expected = {rows} if _ids(record) == completed else {rows, rows + 1}
    assert any(f"{count} flows" in shown.stdout for count in expected), shown.stdout


def test_recover_after_a_restart_decodes_the_replacement_spool(tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    with observed_proxy(record, "--observer-spool") as cli:
        golem_calls(cli.port, _calls(20))
        wait_for(lambda: len(_ids(record)) == 20, what="the first calls to be recorded")
        wait_for(lambda: len(observing_processes(cli.process.pid)) == 2, what="a standby")
        first = observing_processes(cli.process.pid)[0]
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: b"observation-restarted" in record.read_bytes(), what="the restart")
        later = golem_calls(cli.port, _calls(100, first=100))
        _kill_everything(cli.process.pid)
        cli.process.communicate()
    assert [a.id for a in later if isinstance(a, Response)] == list(range(100, 200))
    done = _golem("recover", str(record), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _ids(record) in (list(range(20)) + list(range(100, n)) for n in (199, 200))


def test_recover_refuses_while_the_writer_lives(tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    with observed_proxy(record, "--observer-spool") as cli:
        golem_calls(cli.port, _calls(5))
        wait_for(lambda: len(_ids(record)) == 5, what="the calls to be recorded")
        done = _golem("recover", str(record), cwd=tmp_path)
        shown = _golem("show", str(record), cwd=tmp_path)
        cli.stop()
    assert done.returncode != 0
    assert "is being written by a live proxy" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert SPOOL_LINE not in shown.stderr
    assert _ids(record) == list(range(5))  # untouched


def test_recover_without_a_spool_says_so(tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    record.write_bytes(b"")
    done = _golem("recover", str(record), cwd=tmp_path)
    assert done.returncode != 0
    assert "no spool beside the recording" in done.stderr, done.stderr


ROUTE = RouteInfo("main", "127.0.0.1:19000", "127.0.0.1:9000")


def test_recover_counts_a_killed_connection_whose_close_says_more_after_its_doubt(
    tmp_path: Path,
) -> None:
    """A close the kill left open says the spool's last bytes may not have been sent on, then,
    when bytes recorded as sent were said undelivered too late, those (`_told_late`): it is
    counted in recover's line all the same (before, only a reason ending with the doubt was)."""
    path = tmp_path / "r.jsonl"
    header = Header.new("golem", [ROUTE])
    doubt = f"{KILLED}; {DOUBT.format('1049 bytes to the client')}"
    reasons = [doubt, f"{doubt}; 20 bytes to the client recorded as sent never reached it (x)"]
    with RecordingWriter(open_private(str(path), overwrite=True), header) as writer:
        for conn, reason in enumerate([*reasons, KILLED, "client closed"], start=1):
            writer.write(ConnectionClosed(conn=conn, route=ROUTE.name, reason=reason, t=1.0))

    _, _, unsure = _scan(str(path))

    assert unsure == 2


def test_recover_says_an_answer_cut_by_the_kill_is_the_proxys_cut(tmp_path: Path) -> None:
    """Killed while it forwarded a large answer: what it had read of it is cut by the kill,
    no truncated frame of the plugin's (which was still sending it) and no violation."""
    record = tmp_path / "session.jsonl"
    with observed_proxy(record, "--observer-spool") as cli, socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.settimeout(20)
        sock.connect(("127.0.0.1", cli.port))
        sock.sendall(GOLEM.encode({"id": 1, "method": "echo", "params": {"b": "x" * (16 << 20)}}))
        got = 0
        while got < 200_000:
            got += len(sock.recv(65536))
        _kill_everything(cli.process.pid)
        cli.process.communicate()
    done = _golem("recover", str(record), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    assert not [line for line in lines if line["kind"] == "violation"], lines
    errors = [line for line in lines if line["kind"] == "frame-error"]
    assert [(e["dir"], e.get("cut")) for e in errors] == [("s2c", CUT_BY_KILL)], errors
