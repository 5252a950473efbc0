"""The benchmarks' processes: starting one and waiting until it listens, stopping it, and
reading its CPU time and memory (with its descendants') from /proc."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_port(port: int, process: subprocess.Popen[bytes], limit: float = 30.0) -> None:
    """Return once something accepts on ``port``; RuntimeError if ``process`` exits first."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def start_process(command: list[str], port: int, **popen: object) -> subprocess.Popen[bytes]:
    """Start ``command`` and wait until it listens on ``port`` (killed if it never does)."""
    options: dict[str, object] = {
        "stdout": subprocess.DEVNULL,
        "stderr": subprocess.DEVNULL,
        "env": dict(os.environ, PYTHONPATH=str(ROOT)),
        "cwd": ROOT,
    }
    options.update(popen)
    process = subprocess.Popen(command, **options)  # type: ignore[call-overload]
    try:
        wait_port(port, process)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process  # type: ignore[no-any-return]


def stop(process: subprocess.Popen[bytes]) -> None:
    """Ctrl-C (golem-proxy then finishes its recording), killed if still there after 10 s."""
    process.send_signal(signal.SIGINT)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def status(pid: int, field_name: str) -> int:
    """A byte count from /proc/PID/status (``VmRSS``, ``VmHWM``); 0 if the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as lines:
            for line in lines:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def children_of(pid: int) -> list[int]:
    """The processes ``pid`` started (from /proc; none once it is gone)."""
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as listed:
                found.extend(int(child) for child in listed.read().split())
    except OSError:
        pass
    return found


def observing_processes(pid: int) -> list[int]:
    """The observing processes (``python -m golem_proxy.live.observing``) ``pid`` started,
    oldest first: the one observing, then one waiting to replace it (a standby), which is
    started after it."""
    found = []
    for child in children_of(pid):
        try:
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            started = int(Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[19])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        module = argv[argv.index(b"-m") + 1] if b"-m" in argv[:-1] else b""
        if module.endswith(b"observing"):  # the tests' fake ones too (fake_observing)
            found.append((started, child))
    return [child for _, child in sorted(found)]


def observing_process(pid: int) -> int:
    """The observing process ``pid`` started (`observing_processes`: not a standby). Raises
    LookupError when there is none."""
    found = observing_processes(pid)
    if not found:
        raise LookupError(f"process {pid} has no observing process")
    return found[0]


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (socat forks one child per connection; an observer may run
    in a child process)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children_of(current))
    return found


def rss(pid: int) -> int:
    """RSS of ``pid`` and its descendants."""
    return sum(status(p, "VmRSS") for p in tree(pid))


class RssSampler:
    """Peak RSS of each named process tree: sampled every 50 ms, and the root's VmHWM."""

    def __init__(self, pids: Mapping[str, int]) -> None:
        self._pids = dict(pids)
        self.peak = dict.fromkeys(self._pids, 0)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        for name, pid in self._pids.items():
            self.peak[name] = max(self.peak[name], status(pid, "VmHWM"))

    def _run(self) -> None:
        while not self._done.wait(0.05):
            for name, pid in self._pids.items():
                self.peak[name] = max(self.peak[name], rss(pid))


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of ``pid`` and its descendants."""
    return sum(process_cpu_seconds(pid).values())


def process_cpu_seconds(pid: int) -> dict[int, float]:
    """User and system CPU time of ``pid`` and of each of its descendants, by process, in
    `tree` order (``pid`` first); a process that is gone is left out."""
    found = {}
    for member in tree(pid):
        seconds = stat_cpu_seconds(f"/proc/{member}/stat")
        if seconds is not None:
            found[member] = seconds
    return found


def stat_cpu_seconds(path: str) -> Optional[float]:
    """User and system CPU time in a /proc ``stat`` file (a process's, or a thread's under
    ``task/``); None when it is gone."""
    fields = _stat_fields(path)
    return (
        None if fields is None else (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    )


def stat_minor_faults(path: str) -> Optional[int]:
    """Minor page faults in a /proc ``stat`` file; None when it is gone."""
    fields = _stat_fields(path)
    return None if fields is None else int(fields[7])


def _stat_fields(path: str) -> Optional[list[str]]:
    """The fields of a /proc ``stat`` file after the command's name; None when it is gone."""
    try:
        with open(path) as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def settle(process: Optional[subprocess.Popen[bytes]], limit: float = 60.0) -> float:
    """Wait until ``process`` is idle (an observer that trails the wire has caught up with the
    last burst), so each measurement starts from the same steady state. Returns how long it
    stayed busy (0 if idle at once; 0.2 s resolution)."""
    if process is None:
        return 0.0
    start = time.monotonic()
    last = cpu_seconds(process.pid)
    while time.monotonic() < start + limit:
        time.sleep(0.2)
        now = cpu_seconds(process.pid)
        if now - last < 0.01:
            break
        last = now
    return max(time.monotonic() - start - 0.2, 0.0)
