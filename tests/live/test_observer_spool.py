"""``proxy --observer-spool``: the records go through a file beside the recording, the relay
does not wait for the observing process (only past ``--spool-limit``), and the session's end
waits until every exchange is recorded, then removes the spool. The real command line, a
threaded GOLEM echo upstream, real loopback sockets; a slowed observing process
(tests/live/slow_observing.py) makes the recording trail the wire by seconds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.processes import observing_process, observing_processes
from bench.robustness.proxy_cli import ROOT
from golem_core.messages import Response
from golem_proxy.live.observer_launch import TEST_MODULE
from golem_proxy.recording.format import read_recording
from tests.live.observer_child_helpers import golem_calls, observed_proxy, wait_for

SLOW = "tests.live.slow_observing"
CALLS = 600


def _recorded(record: Path) -> int:
    """Exchanges whose answer is in the recording now (a line each, read as it stands)."""
    if not record.exists():
        return 0
    return sum(1 for line in record.read_bytes().splitlines() if b'"kind":"exchange"' in line)


def _echo_calls(count: int, size: int = 0) -> list[dict[str, object]]:
    return [
        {"id": n, "method": "echo", "params": {"n": n, "blob": "ab" * (size // 2)}}
        for n in range(count)
    ]


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_spool_forwards_byte_exact_records_every_exchange_and_goes(
    tmp_path: Path, chunk: int
) -> None:
    record = tmp_path / "session.jsonl"
    calls = _echo_calls(3, 300_000) + _echo_calls(40)
    with observed_proxy(record, "--observer-spool", "--observer", "child-process") as cli:
        assert Path(f"{record}.spool").exists()
        answers = golem_calls(cli.port, calls, chunk=chunk)
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert "observation stopped" not in cli.stderr, cli.stderr
    got = [a.result for a in answers if isinstance(a, Response)]
    assert got == [c["params"] for c in calls]  # the echo's answers: what each call sent
    recording = read_recording(str(record))
    assert [e.request.message.id for e in recording.exchanges()] == [c["id"] for c in calls]
    assert not Path(f"{record}.spool").exists()


def test_the_relay_does_not_wait_for_a_trailing_recording_and_the_end_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TEST_MODULE, SLOW)
    record = tmp_path / "session.jsonl"
    with observed_proxy(record, "--observer-spool") as cli:
        golem_calls(cli.port, _echo_calls(CALLS))
        # The slowed observing process takes ~2 x 3 ms a call: several seconds behind.
        recorded_when_done = _recorded(record)
        cli.stop(timeout=60)
    assert cli.process.returncode == 0, cli.stderr
    assert recorded_when_done < CALLS // 2, recorded_when_done
    assert "golem-proxy: recording the last " in cli.stderr, cli.stderr
    assert "observation stopped" not in cli.stderr, cli.stderr
    recording = read_recording(str(record))
    assert [e.request.message.id for e in recording.exchanges()] == list(range(CALLS))
    assert b'"kind":"session-end"' in record.read_bytes().splitlines()[-1]
    assert not Path(f"{record}.spool").exists()


def test_once_the_recording_holds_what_a_full_spool_held_the_relay_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TEST_MODULE, SLOW)
    record = tmp_path / "session.jsonl"
    spool = Path(f"{record}.spool")
    # 16 KiB: ~100 calls' records (two ``DATA`` records of ~80 bytes each a call).
    with observed_proxy(record, "--observer-spool", "--spool-limit", "0.015625") as cli:
        golem_calls(cli.port, _echo_calls(CALLS // 4))
        # Until the recording holds what the spool held, nothing holds the relay
        # (tests/live/test_spool_full_relay.py); the spool goes then.
        wait_for(lambda: not spool.exists(), what="the full spool to go")
        later = [{"id": CALLS + n, "method": "echo", "params": {}} for n in range(CALLS)]
        started = time.monotonic()
        golem_calls(cli.port, later)
        took = time.monotonic() - started
        recorded_when_done = _recorded(record)
        cli.stop(timeout=60)
    assert cli.process.returncode == 0, cli.stderr
    # The slowed observing process takes ~2 x 3 ms a call: without the trail's bound, the
    # recording would trail the calls by most of them.
    assert recorded_when_done >= CALLS // 4 + CALLS - 300, (recorded_when_done, took)
    recording = read_recording(str(record))
    ids = [e.request.message.id for e in recording.exchanges()]
    assert ids == list(range(CALLS // 4)) + [c["id"] for c in later]


def test_a_full_spool_goes_and_the_session_goes_on_through_the_pipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TEST_MODULE, SLOW)
    record = tmp_path / "session.jsonl"
    spool = Path(f"{record}.spool")
    # 16 KiB of spool in all: ~100 calls' records, then the pipe, as without a spool.
    with observed_proxy(record, "--observer-spool", "--spool-limit", "0.015625") as cli:
        golem_calls(cli.port, _echo_calls(CALLS // 2))
        wait_for(lambda: not spool.exists(), what="the full spool to go")
        later = [{"id": CALLS + n, "method": "echo", "params": {}} for n in range(50)]
        golem_calls(cli.port, later)
        # Back to the trail's bound: the recording keeps within ~100 ms of the wire.
        wait_for(lambda: _recorded(record) == CALLS // 2 + 50, timeout=5, what="the recording")
        cli.stop(timeout=60)
    assert cli.process.returncode == 0, cli.stderr
    assert cli.stderr.count("golem-proxy: the spool is full (--spool-limit 0.015625 MiB)") == 1
    assert "observation stopped" not in cli.stderr, cli.stderr
    ids = [e.request.message.id for e in read_recording(str(record)).exchanges()]
    assert ids == list(range(CALLS // 2)) + [CALLS + n for n in range(50)]


def test_a_full_spool_is_a_line_at_its_place_in_the_recording_the_log_and_show_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TEST_MODULE, SLOW)  # the switch comes while the recording trails
    record = tmp_path / "session.jsonl"
    said = "the spool was full (--spool-limit 0.015625 MiB) and the session went on without it"
    with observed_proxy(record, "--observer-spool", "--spool-limit", "0.015625") as cli:
        golem_calls(cli.port, _echo_calls(CALLS // 3))
        log = cli.stop(timeout=60)
    assert cli.process.returncode == 0, cli.stderr
    # The live log says it, once, in its place among the exchanges.
    assert log.count(said) == 1, log
    before, after = log.split(said)
    assert "echo" in before.split("Ctrl-C to stop", 1)[1] and "echo" in after, log
    lines = [json.loads(line) for line in record.read_bytes().splitlines()[1:]]
    full = [line for line in lines if line["kind"] == "spool-full"]
    assert len(full) == 1 and full[0]["limit"] == 16384, full
    assert list(full[0]) == ["seq", "t", "kind", "limit"]
    # After every frame the spool held, before every frame that came through the pipe.
    at = lines.index(full[0])
    frames_before = [line["t"] for line in lines[:at] if line["kind"] == "frame"]
    frames_after = [line["t"] for line in lines[at:] if line["kind"] == "frame"]
    assert frames_before and frames_after
    assert max(frames_before) <= full[0]["t"] <= min(frames_after)
    ids = [e.request.message.id for e in read_recording(str(record)).exchanges()]
    assert ids == list(range(CALLS // 3))
    # A reader says it, as a user runs one.
    shown = subprocess.run(
        [sys.executable, "-m", "golem_proxy", "show", str(record)],
        env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="400"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    note = f"note: {record}: at {full[0]['t']:.3f} s {said}: up to this point it held "
    assert shown.stderr.count(note) == 1, shown.stderr
    assert "then forwarding waits for the recording again" in shown.stderr


def test_a_dead_observing_process_is_replaced_with_a_spool_of_its_own(tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    with observed_proxy(record, "--observer-spool") as cli:
        golem_calls(cli.port, _echo_calls(20))
        wait_for(lambda: _recorded(record) == 20, what="the first calls to be recorded")
        wait_for(lambda: len(observing_processes(cli.process.pid)) == 2, what="a standby")
        os.kill(observing_process(cli.process.pid), signal.SIGKILL)
        wait_for(lambda: _restarted(record), what="a new observing process")
        later = [{"id": 100 + n, "method": "echo", "params": {"n": n}} for n in range(20)]
        golem_calls(cli.port, later)
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert "observation restarted" in cli.stderr, cli.stderr
    ids = [e.request.message.id for e in read_recording(str(record)).exchanges()]
    assert ids == list(range(20)) + [c["id"] for c in later]
    assert not Path(f"{record}.spool").exists()


def _restarted(record: Path) -> bool:
    return b'"kind":"observation-restarted"' in record.read_bytes()


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ((), "--observer-spool needs a recording"),
        (("--record", "x.jsonl", "--observer", "in-process"), "needs --observer child-process"),
        (("--record", "old.jsonl"), "old.jsonl.spool already exists: a session recording"),
    ],
)
def test_the_spool_needs_an_observing_process_and_a_recording(
    tmp_path: Path, options: tuple[str, ...], said: str
) -> None:
    (tmp_path / "old.jsonl.spool").write_bytes(b"")  # left by a session killed with -9
    done = subprocess.run(
        [sys.executable, "-m", "golem_proxy", "proxy", "--observer-spool", *options],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert said in done.stderr, done.stderr
    assert not (tmp_path / "x.jsonl.spool").exists()
    assert not (tmp_path / "x.jsonl").exists()
    assert not (tmp_path / "old.jsonl").exists()
