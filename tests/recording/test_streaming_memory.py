"""A streamed recording is read in memory that does not grow with it: `show`, `stats`, `check`
and `export` (the real command line, in a subprocess) and `FlowTracker` hold what is in
flight, whatever the file holds. Before frames carried the tap's pairing decision, a request
left unanswered held back every row after it (20,000 notifications: 20,001 rows held, 24 MiB
more than an empty trace), and `check` kept every event of a trace whose last row was still
being read."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from golem_proxy.analysis.settled_rows import HOLD_BACK
from golem_proxy.analysis.trace import open_flows
from tests.support.hostile_shapes import unanswered_nested

from . import tapped_traces
from .tapped_traces import empty, exchanges, notifications

ROOT = Path(__file__).resolve().parents[2]

# Runs the command line as ``python -m golem_proxy`` does, then reports the process's peak
# resident size (VmHWM: the memory of this program only; ru_maxrss would count the parent's,
# copied at the fork) to the file named by $PEAK_FILE.
_MEASURED = """
import atexit, os, runpy, sys
def report():
    with open('/proc/self/status') as status:
        peak = next(line for line in status if line.startswith('VmHWM:'))
    with open(os.environ['PEAK_FILE'], 'w') as out:
        out.write(peak.split()[1])
atexit.register(report)
sys.argv[0] = 'golem-proxy'
runpy.run_module('golem_proxy', run_name='__main__')
"""

ALLOWED_KIB = 8 * 1024
"""What a large trace may cost a command beyond an empty trace's peak: a piece of `check`
(1,000 flows and their events) and the allocator's slack, never the trace."""

COMMANDS = (
    ("show",),
    ("show", "--json"),
    ("stats",),
    ("check",),
    ("export", "--format", "jsonl", "-o", "{out}", "--overwrite"),  # one out, run again
)

TRACED_ALLOWED = 4 * 1024 * 1024
"""Python allocations a large trace may cost `FlowTracker` beyond an empty one's: the rows
held behind one still in flight (`HOLD_BACK`), never the trace."""

needs_proc = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")


def _peak_kib(tmp_path: Path, args: tuple[str, ...], trace: Path, exit_code: int = 0) -> int:
    """Run ``golem-proxy ARGS TRACE`` to its end (it exits ``exit_code``); its peak resident
    size in KiB."""
    peak_file = tmp_path / "peak"
    out = tmp_path / "out.jsonl"
    argv = [a.format(out=out) for a in args]
    env = dict(os.environ, PYTHONPATH=str(ROOT), PEAK_FILE=str(peak_file), COLUMNS="120")
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, *argv, str(trace)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=600,
    )
    assert done.returncode == exit_code, done.stderr.decode()
    return int(peak_file.read_text())


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("traces")
    return {
        "empty": empty(folder / "empty.jsonl"),
        "notifications": notifications(folder / "notifications.jsonl"),
        "exchanges": exchanges(folder / "exchanges.jsonl"),
    }


@needs_proc
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_each_view_reads_a_large_trace_in_the_memory_of_an_empty_one(
    tmp_path: Path, traces: dict[str, Path], args: tuple[str, ...]
) -> None:
    baseline = _peak_kib(tmp_path, args, traces["empty"])
    for name in ("notifications", "exchanges"):
        peak = _peak_kib(tmp_path, args, traces[name])
        assert peak - baseline < ALLOWED_KIB, (name, peak, baseline)


HELD_ALLOWED_KIB = 320 * 1024
"""What requests waiting for an answer that never comes may cost a command beyond an empty
trace's peak: the reader's bound on what it holds (256 MiB, charged what each parse holds)."""


@needs_proc
@pytest.mark.parametrize("args", [("show",), ("check",)], ids=lambda a: " ".join(a))
def test_requests_held_for_their_answer_are_charged_what_their_parse_holds(
    tmp_path: Path, traces: dict[str, Path], args: tuple[str, ...]
) -> None:
    """A hand-made file of 400 calls, each 64 KiB of ``[[],[],…]``, none answered: charged
    their bytes, all were held parsed (~25 times their bytes: ~600 MiB); charged what a
    parse holds, the oldest are let go past the reader's bound, the gap said."""
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_bytes(unanswered_nested(400, 64 * 1024))
    baseline = _peak_kib(tmp_path, args, traces["empty"])
    # The requests let go were not inspected whole: check says so, exit 3.
    peak = _peak_kib(tmp_path, args, hostile, 3 if args == ("check",) else 0)
    assert peak - baseline < HELD_ALLOWED_KIB, (peak, baseline)


def _traced_peak(path: Path) -> tuple[int, int]:
    """Stream ``path`` through `FlowReader.flows` (`FlowTracker`); the rows handed on and the
    peak of Python allocations while doing it, in bytes."""
    tracemalloc.start()
    try:
        with open_flows(str(path)) as trace:
            rows = sum(1 for _ in trace.flows())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return rows, peak


def test_flow_tracker_holds_what_is_in_flight_not_the_trace(traces: dict[str, Path]) -> None:
    _, baseline = _traced_peak(traces["empty"])
    rows, peak = _traced_peak(traces["notifications"])
    assert rows == 20_001
    assert peak - baseline < TRACED_ALLOWED
    rows, peak = _traced_peak(traces["exchanges"])
    assert rows == 5_001
    assert peak - baseline < TRACED_ALLOWED


def test_rows_wait_behind_a_pending_request_only_up_to_a_bound(
    traces: dict[str, Path],
) -> None:
    """The notification flood starts with a call never answered: its row comes last, once
    the connection closes, in number order before the `HOLD_BACK` notifications that were
    still waiting for it; the others did not wait."""
    with open_flows(str(traces["notifications"])) as trace:
        tracker = trace.tracker
        held = 0
        for event in trace.events():
            tracker.take_settled(tracker.apply(event))
            held = max(held, len(tracker._ready) + len(tracker._by_request))
        assert held <= HOLD_BACK + 2  # and the pending call and the notification just read
    with open_flows(str(traces["notifications"])) as trace:
        numbers = [flow.number for flow in trace.flows()]
    # The first notifications went on ahead of the call; the last ones waited behind it.
    assert numbers[:3] == [2, 3, 4] and sorted(numbers) == list(range(1, 20_002))
    assert numbers.index(1) == len(numbers) - HOLD_BACK - 1


@needs_proc
def test_show_prints_its_first_row_before_reading_the_whole_file(
    traces: dict[str, Path],
) -> None:
    """The first row is on stdout while the reader is still near the file's start (its
    position read from /proc: no clock)."""
    path = traces["notifications"]
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="120")
    child = subprocess.Popen(
        [sys.executable, "-m", "golem_proxy", "show", "--json", str(path)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert child.stdout is not None
        first = child.stdout.readline()
        assert first.startswith(b'{"number": 2')
        # Its output (2 MB) is far more than a pipe holds: it waits for us, mid-file.
        position = _read_position(child.pid, path)
        assert child.poll() is None
        assert position < path.stat().st_size // 2
    finally:
        child.kill()
        child.wait()


def _read_position(pid: int, path: Path) -> int:
    """Where process ``pid`` is in reading ``path`` (its descriptor's offset)."""
    fds = Path(f"/proc/{pid}/fd")
    for fd in fds.iterdir():
        try:
            if os.readlink(fd) == str(path):
                info = Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text()
                return int(info.split("pos:")[1].split()[0])
        except OSError:
            continue
    raise AssertionError(f"{path} is not open in process {pid}")


def test_the_traces_are_what_the_tap_wrote(traces: dict[str, Path]) -> None:
    """The frames of these recordings carry the pairing decision (format version 2)."""
    text = traces["exchanges"].read_text()
    assert '"version":2' in text.splitlines()[0]
    assert '"expects_answer":true' in text and '"answers":1' in text
    assert tapped_traces.ROUTE.name in text
