"""``proxy --observer child-process``: forwarding in the process the user started, decoding,
the log and the recording in a process of its own (live/observer_process.py, observing.py).
The real command line, real loopback peers, the observing process really killed."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import struct
from pathlib import Path
from typing import Any

import pytest

from bench.processes import observing_process
from bench.robustness.crash import ThreadedUpstream
from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.blocking import MessageReader
from golem_core.messages import ErrorResponse, Response, Role
from golem_core.profiles import GOLEM
from golem_proxy.events import SessionEnded, ViolationSeen
from golem_proxy.recording.format import read_recording
from golem_proxy.recording.shared_file import STOPPED_KIND, RecordingFile, end_recording
from tests.support.cli_helpers import run_cli

from .observer_child_helpers import (
    EchoServer,
    golem_calls,
    observed_proxy,
    pipelined_echoes,
    process_gone,
    wait_for,
)

CHILD = ("--observer", "child-process")


def _session(port: int) -> None:
    """Small calls cut in odd pieces, a failing call, a 300 KB call, on two connections."""
    calls: list[dict[str, Any]] = [
        {"id": n, "method": "echo", "params": {"n": n, "text": "é" * n}} for n in range(6)
    ]
    calls.append({"id": "f", "method": "fail", "params": {}})
    calls.append({"id": "big", "method": "echo", "params": {"blob": "x" * 300_000}})
    answers = golem_calls(port, calls, chunk=7)
    assert [type(a) for a in answers] == [Response] * 6 + [ErrorResponse, Response]
    golem_calls(port, [{"id": "second", "method": "echo", "params": {}}])


def _comparable(show_json: str) -> list[Any]:
    """``show --json`` flows without what differs between two runs: times and ports."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: strip(v)
                for k, v in value.items()
                if k not in ("t", "time", "latency", "start", "end", "client", "upstream")
                and not k.endswith("_ms")
            }
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return [strip(json.loads(line)) for line in show_json.splitlines()]


def test_the_child_process_records_what_one_process_records(tmp_path: Path) -> None:
    shown = {}
    with ThreadedUpstream() as upstream:
        for mode in ("in-process", "child-process"):
            record = tmp_path / f"{mode}.jsonl"
            cli = start_proxy_cli(
                "--route", f"127.0.0.1:0={upstream.address}", "--record", str(record),
                "--observer", mode,
            )  # fmt: skip
            _session(cli.port)
            out = cli.stop()
            assert cli.process.returncode == 0, cli.stderr
            assert "recorded 9 exchanges (1 error, 0 violations)" in cli.stderr
            assert "echo" in out  # the log, printed by whichever process observed
            result = run_cli("show", "--json", str(record))
            assert result.returncode == 0, result.stderr
            shown[mode] = _comparable(result.stdout)
    assert len(shown["in-process"]) == 9
    assert shown["child-process"] == shown["in-process"]


def test_forwarding_is_byte_exact_through_odd_chunks_half_close_and_reset(
    tmp_path: Path,
) -> None:
    record = tmp_path / "echo.jsonl"
    rng = random.Random(25)
    with EchoServer() as echo:
        cli = start_proxy_cli(
            "--route", f"127.0.0.1:0=127.0.0.1:{echo.port}", "--record", str(record), *CHILD
        )  # fmt: skip
        try:
            # Any bytes (no framing at all), cut anywhere, both ways; then a half-close.
            data = bytes(rng.getrandbits(8) for _ in range(200_000))
            with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as sock:
                sent = 0
                while sent < len(data):
                    size = rng.choice((1, 2, 3, 5, 7, 4096, 65537))
                    sock.sendall(data[sent : sent + size])
                    sent += size
                sock.shutdown(socket.SHUT_WR)
                back = bytearray()
                while chunk := sock.recv(65536):
                    back += chunk
            assert bytes(back) == data
            # A reset from the client reaches the upstream as a reset.
            resets = echo.resets
            reset = socket.create_connection(("127.0.0.1", cli.port), timeout=10)
            reset.sendall(b"about to reset")
            assert reset.recv(100)
            reset.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            reset.close()
            wait_for(lambda: echo.resets > resets, what="the upstream to see the reset")
            # And the relay goes on serving.
            with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as sock:
                sock.sendall(b"still here")
                assert sock.recv(100) == b"still here"
        finally:
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    recording = read_recording(str(record))
    closes = [e for e in recording.events if type(e).__name__ == "ConnectionClosed"]
    assert [c.bytes_c2s for c in closes[:1]] == [len(data)]
    assert sorted(c.abnormal for c in closes) == [False, False, True]


def test_a_killed_observer_leaves_forwarding_alone_and_ends_the_recording(
    tmp_path: Path,
) -> None:
    record = tmp_path / "killed.jsonl"
    with observed_proxy(record, *CHILD, "--observer-restarts", "0") as cli:
        try:
            calls = [{"id": n, "method": "echo", "params": {"n": n}} for n in range(20)]
            golem_calls(cli.port, calls)
            observer = observing_process(cli.process.pid)
            os.kill(observer, signal.SIGKILL)
            wait_for(lambda: process_gone(observer), what="the observing process to die")
            # Clients are still served, before and after the proxy noticed.
            for _ in range(3):
                answers = golem_calls(cli.port, calls)
                assert [a.id for a in answers] == list(range(20))  # type: ignore[union-attr]
        finally:
            cli.stop()
    assert cli.process.returncode == 0
    stopped = [line for line in cli.stderr.splitlines() if "observation stopped" in line]
    assert stopped[0] == (
        "golem-proxy: observation stopped (the observing process was killed by SIGKILL); "
        "forwarding goes on"
    )
    recording = read_recording(str(record))  # readable: every line whole
    assert not recording.truncated_tail
    lines = record.read_bytes().splitlines()[1:]
    last, ended = json.loads(lines[-2]), json.loads(lines[-1])
    assert last["kind"] == STOPPED_KIND
    assert "killed by SIGKILL" in last["detail"]
    # Ctrl-C then ended the session in order: the forwarding process says so, last.
    assert (ended["kind"], ended["reason"]) == ("session-end", "stopped by SIGINT")
    assert [json.loads(line)["seq"] for line in lines] == list(range(1, len(lines) + 1))


def test_the_session_end_after_observation_stopped_counts_the_gaps_check_finds(
    tmp_path: Path,
) -> None:
    """Observation stopped for good (no restart left, its process killed): the forwarding
    process writes the ``session-end`` line, whose ``unobserved`` counts the gaps by reason as
    ``check --json`` does, the dead process's (a frame too large to observe) and the stop
    (it had none: only the lines said them)."""
    record = tmp_path / "stopped.jsonl"
    blob = {"id": 1, "method": "echo", "params": {"blob": "b" * (2 << 20)}}
    options = ("--observer-restarts", "0", "--observe-frame-limit", "1")
    with observed_proxy(record, *CHILD, *options) as cli:
        try:
            golem_calls(cli.port, [blob])
            wait_for(
                lambda: b'"kind":"unobserved"' in record.read_bytes(),
                what="the frame too large to observe recorded as a gap",
            )
            observer = observing_process(cli.process.pid)
            os.kill(observer, signal.SIGKILL)
            wait_for(lambda: process_gone(observer), what="the observing process to die")
            golem_calls(cli.port, [{"id": 2, "method": "echo", "params": {}}])
        finally:
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    ended = json.loads(record.read_bytes().splitlines()[-1])
    assert ended["kind"] == "session-end"
    checked = run_cli("check", "--json", str(record))
    counted = json.loads(checked.stdout)["not_inspected"]["unobserved"]
    assert ended.get("unobserved") == counted
    assert sorted(counted["by_reason"]) == ["frame-too-large", "stopped"], counted
    # Read back as the session's count.
    recording = read_recording(str(record))
    [last] = [e for e in recording.events if isinstance(e, SessionEnded)]
    assert sum(count.gaps for count in last.unobserved) == counted["gaps"]


def test_a_unix_route_is_observed_by_the_child_process(tmp_path: Path) -> None:
    private = tmp_path / "run"
    private.mkdir(mode=0o700)
    listen = private / "proxy.sock"
    record = tmp_path / "unix.jsonl"
    with observed_proxy(record, *CHILD, listen=f"unix:{listen}") as cli:
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(10)
                sock.connect(str(listen))
                reader = MessageReader(sock)
                for n in range(10):
                    sock.sendall(GOLEM.encode({"id": n, "method": "echo", "params": {"n": n}}))
                    answer = reader.read_message(Role.RESPONSE)
                    assert isinstance(answer, Response) and answer.result == {"n": n}
        finally:
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    recording = read_recording(str(record))
    assert len(recording.exchanges()) == 10
    (opened,) = [e for e in recording.events if type(e).__name__ == "ConnectionOpened"]
    assert opened.client == f"unix:pid={os.getpid()}"


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_pipelined_requests_are_observed_before_their_answers(
    tmp_path: Path, observer: str
) -> None:
    """A burst the upstream cannot take at once: the relay's write waits, and the answers to
    the burst's first requests come back meanwhile. Every one is still paired, none an orphan
    (the relay hands a chunk on before waiting to write its rest)."""
    record = tmp_path / "pipelined.jsonl"
    count = 20_000
    with observed_proxy(record, "-q", "--observer", observer) as cli:
        try:
            pipelined_echoes(cli.port, count)
        finally:
            cli.stop()
    recording = read_recording(str(record))
    orphans = [e for e in recording.events if isinstance(e, ViolationSeen)]
    assert orphans == []
    # A flood: the observer may shed part of it (a gap, said), but what it pairs is paired.
    exchanges = recording.exchanges()
    assert exchanges
    assert all(e.request.message.id == e.response.message.id for e in exchanges)


def test_the_observer_records_what_it_was_handed_when_forwarding_is_killed(
    tmp_path: Path,
) -> None:
    record = tmp_path / "forwarding-killed.jsonl"
    with observed_proxy(record, *CHILD) as cli:
        observer = observing_process(cli.process.pid)
        golem_calls(cli.port, [{"id": n, "method": "echo", "params": {}} for n in range(50)])
        # Every chunk is handed on right after it is forwarded: once the forwarding process is
        # gone, the observing one reads what it was handed to the end and exits. (The kill may
        # land between the last answer's write to the client and its handing on.)
        cli.kill()
        wait_for(lambda: process_gone(observer), what="the observing process to finish")
    recording = read_recording(str(record))
    assert len(recording.exchanges()) >= 49
    assert not recording.truncated_tail
    # The pipe ended without the forwarding process's last record: no session-end line.
    assert not any(isinstance(event, SessionEnded) for event in recording.events)


def test_an_observer_that_does_not_finish_is_killed_and_the_recording_ended(
    tmp_path: Path,
) -> None:
    record = tmp_path / "stuck.jsonl"
    with observed_proxy(record, "--drain-timeout", "0.2", *CHILD) as cli:
        observer = observing_process(cli.process.pid)
        golem_calls(cli.port, [{"id": n, "method": "echo", "params": {}} for n in range(5)])
        os.kill(observer, signal.SIGSTOP)  # it will never read the end of the pipe
        try:
            cli.stop()
        finally:
            with contextlib.suppress(ProcessLookupError):  # killed by then, as it should be
                os.kill(observer, signal.SIGCONT)
    assert cli.process.returncode == 0
    assert (
        "golem-proxy: observation stopped (the observing process did not finish in time and "
        "was killed)" in cli.stderr.splitlines()
    )
    assert process_gone(observer)
    lines = record.read_bytes().splitlines()
    assert [json.loads(line)["kind"] for line in lines[-2:]] == [STOPPED_KIND, "session-end"]
    read_recording(str(record))


@pytest.mark.parametrize("cut", [b"", b'{"seq":4,"t":1.0,"kind":"fra'])
def test_ending_a_recording_cuts_an_unfinished_line_and_numbers_the_next(
    tmp_path: Path, cut: bytes
) -> None:
    path = tmp_path / "cut.jsonl"
    header = b'{"format":"golem-proxy-recording"}\n'
    lines = b"".join(b'{"seq":%d,"t":0.5,"kind":"gap","missed":1}\n' % n for n in (1, 2, 3))
    path.write_bytes(header + lines + cut)
    record = RecordingFile(os.open(path, os.O_WRONLY), os.open(path, os.O_RDONLY))
    try:
        end_recording(record, 2.0, "observation stopped: test")
    finally:
        record.close()
    written = path.read_bytes()
    assert written.startswith(header + lines)
    last = json.loads(written[len(header + lines) :])
    assert last == {"seq": 4, "t": 2.0, "kind": STOPPED_KIND, "detail": "observation stopped: test"}
