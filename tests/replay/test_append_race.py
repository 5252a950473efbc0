"""Two processes appending to one trace at once (pytest-xdist workers of a
``--golem-record=new`` suite sharing a trace): both appends land, one after the other; a
writer kept waiting too long is told in one line and writes nothing; a killed one holds no
one up; no lock file is left among the traces."""

from __future__ import annotations

import errno
import os
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from golem_proxy.recording.format import RecordingReader
from golem_proxy.replay.merge import append_recording

ROOT = Path(__file__).resolve().parents[2]
SESSION = ROOT / "recordings" / "modelling-session.jsonl"
TIMEOUT = 30.0

APPENDER = """
import sys
from golem_proxy.replay.merge import append_recording
print("ready", flush=True)
sys.stdin.readline()
print(append_recording(sys.argv[1], sys.argv[2]).count, flush=True)
"""

HOLDER = """
import sys
from golem_proxy.recording.trace_lock import trace_lock
with trace_lock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.readline()
"""


def _start(script: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def _line(process: subprocess.Popen[str]) -> str:
    """The next line the process prints, waited for up to TIMEOUT seconds."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], TIMEOUT)
    assert ready, "the child printed nothing in time"
    return process.stdout.readline().strip()


def _events(path: Path) -> int:
    with open(path, "rb") as stream:
        return sum(1 for _ in RecordingReader(stream))


def test_two_appends_at_once_both_land(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    shutil.copyfile(SESSION, trace)
    for _ in range(3):  # 8 times as long: each append outlasts the jitter of their start
        append_recording(str(trace), str(trace))
    grown = trace.read_bytes()
    for _ in range(3):  # without the lock nearly every round lost one append
        trace.write_bytes(grown)
        before = _events(trace)
        appenders = [_start(APPENDER, str(trace), str(SESSION)) for _ in range(2)]
        try:
            assert [_line(p) for p in appenders] == ["ready", "ready"]
            for process in appenders:  # both let go at once
                assert process.stdin is not None
                process.stdin.write("go\n")
                process.stdin.flush()
            appended = sum(int(_line(p)) for p in appenders)
        finally:
            for process in appenders:
                process.kill()
                process.communicate(timeout=TIMEOUT)
        assert appended == 2 * _events(SESSION)
        assert _events(trace) == before + appended
    assert sorted(os.listdir(tmp_path)) == ["trace.jsonl"]  # no lock file, no temporary one


def test_an_append_kept_waiting_too_long_is_told_and_writes_nothing(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    shutil.copyfile(SESSION, trace)
    holder = _start(HOLDER, str(trace))
    try:
        assert _line(holder) == "held"
        with pytest.raises(OSError) as raised:
            append_recording(str(trace), str(SESSION), wait=0.3)
    finally:
        holder.kill()
        holder.communicate(timeout=TIMEOUT)
    assert raised.value.errno == errno.ETIMEDOUT
    assert raised.value.strerror == (
        f"another process kept writing a trace in {tmp_path} for 0.3 s "
        "(it holds the lock of that directory)"
    )
    assert trace.read_bytes() == SESSION.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["trace.jsonl"]


def test_a_killed_writer_holds_no_one_up(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    holder = _start(HOLDER, str(trace))
    try:
        assert _line(holder) == "held"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=TIMEOUT)
    # A trace not there yet is created whole, from what is appended.
    assert append_recording(str(trace), str(SESSION), wait=5.0).count == _events(SESSION)
    assert trace.read_bytes() == SESSION.read_bytes()
    assert oct(trace.stat().st_mode & 0o777) == "0o600"
