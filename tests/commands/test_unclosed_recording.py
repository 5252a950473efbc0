"""A recording the proxy could not close (``kill -9``), or that lost lines, says so when it is
read: ``show`` and ``check`` print one line on stderr, and a whole recording prints none; one
the proxy still records says that instead. A proxy stopped in order ends its recording with a
``session-end`` line."""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.net.addresses import Address
from golem_proxy.recording.writer_lock import writer_holds_lock
from golem_proxy.testing.client import GolemClient
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.support.plugin_fixture import plugin_fixture
from tests.support.traces import TraceBuilder

from .test_log_cli import ProxyProcess

NOTE = re.compile(
    r"the proxy stopped without closing this recording; the last (\d+) ms may be missing "
    r"\(no session-end line; 1 connection never closed\)"
)


plugin = plugin_fixture(seed=2)


def wait_for_lines(path: Path, kind: str, count: int, timeout: float = 30) -> None:
    """Poll the recording until it holds ``count`` lines of ``kind`` (flushed to disk)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(f'"kind":"{kind}"'.encode()) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never had {count} {kind} lines")


def wait_until_written(path: Path, timeout: float = 30) -> None:
    """Poll until no process writes the recording any more: the observing process of a
    proxy killed records what the pipe still held, then exits."""
    deadline = time.monotonic() + timeout
    with open(path, "rb") as stream:
        while writer_holds_lock(stream.fileno()):
            if time.monotonic() > deadline:
                raise AssertionError(f"{path} is still being written after {timeout} s")
            time.sleep(0.05)


def _reading_notes(tmp_path: Path, trace: Path, cache: Path) -> dict[str, list[str]]:
    """The note lines each reading command prints on stderr for ``trace``."""
    out = tmp_path / "flows.parquet"
    runs = {
        "show": ["show", str(trace)],
        "stats": ["stats", str(trace)],
        "check": ["check", str(trace)],
        "export": ["export", str(trace), "--format", "parquet", "--out", str(out), "--overwrite"],
        "query": ["query", "SELECT count(*) FROM flows", str(trace), "--cache", str(cache)],
    }
    notes = {}
    for name, args in runs.items():
        done = run_cli(*args)
        # check does not pass what it did not see whole (exit 3): the rest of the session
        assert done.returncode == (3 if name == "check" else 0), done.stderr
        notes[name] = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    return notes


@pytest.mark.parametrize("observer", ["child-process", "in-process"])
def test_a_recording_says_whether_its_proxy_still_records_it_or_was_killed(
    plugin: PluginProcess, tmp_path: Path, observer: str
) -> None:
    trace = tmp_path / "killed.jsonl"
    cache = tmp_path / "cache"
    proxy = ProxyProcess(tmp_path, plugin.main, "--record", str(trace), "--observer", observer)
    try:
        with GolemClient("127.0.0.1", proxy.port, timeout=20) as client:
            for _ in range(3):
                client.send_command("ping")
            wait_for_lines(trace, "exchange", 4)  # the connect's ping and three more
            live = (
                f"note: {trace}: still being written (the proxy is recording); read as far "
                "as it is written, the last 100 ms may not be in it yet"
            )
            for command, notes in _reading_notes(tmp_path, trace, cache).items():
                assert notes == [live], command
            proxy.process.kill()
            proxy.process.wait(30)
    finally:
        proxy.kill()
    wait_until_written(trace)
    # The query's cache kept nothing of the file being written: it says what is true now.
    for command, notes in _reading_notes(tmp_path, trace, cache).items():
        assert len(notes) == 1 and NOTE.search(notes[0]), (command, notes)
        assert NOTE.search(notes[0]).group(1) == "100"  # type: ignore[union-attr]


@pytest.mark.parametrize("observer", ["child-process", "in-process"])
def test_a_proxy_stopped_with_ctrl_c_ends_its_recording_with_a_session_end_line(
    plugin: PluginProcess, tmp_path: Path, observer: str
) -> None:
    trace = tmp_path / "stopped.jsonl"
    proxy = ProxyProcess(tmp_path, plugin.main, "--record", str(trace), "--observer", observer)
    try:
        client = GolemClient("127.0.0.1", proxy.port, timeout=20)
        client.connect()
        for _ in range(3):
            client.send_command("ping")
        wait_for_lines(trace, "exchange", 4)  # the connect's ping and three more
        # A connection still open at the stop: the proxy closes it and says so.
        assert proxy.stop() == 0
        client.close()
    finally:
        proxy.kill()
    lines = trace.read_bytes().splitlines()
    header, last = json.loads(lines[0]), json.loads(lines[-1])
    assert header["ends_with_session_end"] is True
    assert last["kind"] == "session-end"
    assert last["reason"] == "stopped by SIGINT"
    assert (last["exchanges"], last["errors"], last["violations"]) == (4, 0, 0)
    assert last["unanswered"] == 0 and last["not_recorded"] == 0
    assert last["seq"] == len(lines) - 1  # after every other line
    before = [json.loads(line) for line in lines[1:-1]]
    assert any(line["kind"] == "close" for line in before)
    assert last["t"] >= max(line["t"] for line in before)
    for command in ("show", "check", "stats"):
        done = run_cli(command, str(trace))
        assert done.returncode == 0, done.stderr
        assert done.stderr == "", command


def test_a_recording_closed_properly_says_nothing(tmp_path: Path) -> None:
    path = tmp_path / "closed.jsonl"
    with TraceBuilder.create(str(path)) as builder:
        builder.call("ping", result={"alive": True})
    for command in ("show", "check", "stats"):
        done = run_cli(command, str(path))
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""


def test_lines_lost_from_a_recording_are_noted_once(tmp_path: Path) -> None:
    path = tmp_path / "lost.jsonl"
    with TraceBuilder.create(str(path)) as trace:
        for _ in range(5):
            trace.call("ping", {}, {"alive": True})
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:6] + lines[9:]))  # a whole exchange's three lines
    expected = (
        f"note: {path}: line 7: seq jumps from 5 to 9 (3 lines lost or out of order); "
        "flows near it may be wrong\n"
    )
    for command in ("show", "stats", "check"):
        done = run_cli(command, str(path))
        assert done.returncode == (3 if command == "check" else 0), done.stderr
        assert done.stderr == expected, command
    whole = tmp_path / "whole.jsonl"
    with TraceBuilder.create(str(whole)) as trace:
        trace.call("ping", {}, {"alive": True})
    assert run_cli("show", str(whole)).stderr == ""


def test_times_that_go_back_are_noted_once(tmp_path: Path) -> None:
    path = tmp_path / "back.jsonl"
    with TraceBuilder.create(str(path)) as trace:
        for _ in range(3):
            trace.call("ping", {}, {"alive": True})
    lines = path.read_bytes().splitlines(keepends=True)
    # The second answer (line 7) is recorded with a time before the first answer's.
    lines[6] = re.sub(rb'"t":[0-9.e-]+', b'"t":0.0001', lines[6], count=1)
    path.write_bytes(b"".join(lines))
    done = run_cli("show", str(path))
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(
        rf"note: {re.escape(str(path))}: line 7: t goes back from \d+\.\d{{6}} to 0\.000100 s "
        r"in connection 1's s2c stream \(lines out of order, or times changed\); flows near it "
        r"may be wrong\n",
        done.stderr,
    ), done.stderr


def test_a_recording_whose_writer_held_no_lock_says_it_cannot_tell(tmp_path: Path) -> None:
    path = tmp_path / "older.jsonl"
    with TraceBuilder.create(str(path)) as trace:
        trace.call("ping", {}, {"alive": True})
    lines = path.read_bytes().splitlines(keepends=True)
    header = json.loads(lines[0])
    assert header.pop("writer_lock") == "flock"  # the writer held it while it wrote
    # Written before writers held a lock, and left with its connection open: it may be
    # still being written, or its proxy may be gone; nothing tells which.
    path.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines[1:-1]))
    done = run_cli("show", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        f"note: {path}: the proxy stopped without closing this recording or is still writing "
        "it; the last 100 ms may be missing (1 connection never closed)\n"
    )


def test_a_request_waiting_in_a_recording_still_written_is_pending_until_its_proxy_is_gone(
    tmp_path: Path,
) -> None:
    """While the proxy records, the answer may come yet: plain ``pending``; once the proxy
    is gone (``kill -9``), the recording ended first: ``pending (recording ended)``."""
    trace = tmp_path / "waiting.jsonl"
    with socket.socket() as silent:  # an upstream that reads and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        host, port = silent.getsockname()
        proxy = ProxyProcess(tmp_path, Address(host, port), "--record", str(trace))
        try:
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as client:
                client.sendall(GOLEM.encode({"id": "w1", "method": "ping", "params": {}}))
                wait_for_lines(trace, "frame", 1)
                shown = run_cli("show", str(trace), "--json")
                assert [row["status"] for row in _rows(shown.stdout)] == ["pending"]
                proxy.process.kill()
                proxy.process.wait(30)
        finally:
            proxy.kill()
    wait_until_written(trace)
    shown = run_cli("show", str(trace), "--json")
    assert [row["status"] for row in _rows(shown.stdout)] == ["pending (recording ended)"]


def _rows(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
