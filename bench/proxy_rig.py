"""bench_proxy's rig: the configurations measured in front of one upstream (direct, the
minimal trio relay, socat, mitmdump, each golem-proxy), started and stopped together, and a
line that describes the machine they ran on."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from processes import ROOT, free_port, start_process, stop
from pty_terminal import DrainedTerminal

PEERS = str(ROOT / "bench" / "bench_peers.py")
RELAY = "minimal trio relay"
MITM = "mitmdump reverse tcp"
OURS = "golem-proxy --observer in-process"
OURS_CHILD = "golem-proxy (child-process, the default)"
OURS_TUI = "golem-proxy --tui --observer in-process"
OURS_CHILD_TUI = "golem-proxy --tui (child-process)"
OURS_SPOOL = "golem-proxy --observer-spool"
OURS_SPOOL_TUI = "golem-proxy --tui --observer-spool"
SPOOL = "spool"
"""`proxy_command`'s observer for ``--observer child-process --observer-spool``."""
BASELINE = "golem-proxy (baseline)"
RECORDING = {OURS: "bench.jsonl", OURS_CHILD: "child.jsonl", OURS_TUI: "tui.jsonl",
             OURS_CHILD_TUI: "child-tui.jsonl", BASELINE: "baseline.jsonl",
             OURS_SPOOL: "spool.jsonl", OURS_SPOOL_TUI: "spool-tui.jsonl"}  # fmt: skip
"""Each golem-proxy's recording, in the mode's temporary directory."""
OBSERVERS = {OURS: "in-process", OURS_CHILD: "child-process", OURS_SPOOL: SPOOL}
"""The golem-proxy configurations by where their observer runs (``--observer``)."""
WITH_TUI = {OURS: OURS_TUI, OURS_CHILD: OURS_CHILD_TUI, OURS_SPOOL: OURS_SPOOL_TUI}
"""The same golem-proxy with ``--tui``, drawn on a pseudo-terminal (pty_terminal.py)."""
WHERE = {
    **OBSERVERS,
    OURS_TUI: "in-process",
    OURS_CHILD_TUI: "child-process",
    OURS_SPOOL_TUI: SPOOL,
}
QUIT_TIMEOUT = 120.0
"""Seconds a TUI's Ctrl-C may take to end its session (it drains and flushes first)."""


def proxy_command(
    port: int, upstream: int, record: str, observer: str = "", *, tui: bool = False
) -> list[str]:
    """golem-proxy with everything on (decoding, pairing, recording), log quiet; ``observer``:
    where it observes (``--observer``; the default when empty; `SPOOL`: a process of its own
    fed through a spool, ``--observer-spool``); ``tui``: the TUI instead of the log."""
    route = f"main@127.0.0.1:{port}=127.0.0.1:{upstream}"
    chosen = ["--observer", observer] if observer else []
    if observer == SPOOL:
        chosen = ["--observer", "child-process", "--observer-spool"]
    shown = ["--tui"] if tui else ["--quiet"]
    return [sys.executable, "-m", "golem_proxy", "proxy", *shown, "--route", route,
            "--record", record, "--overwrite", *chosen]  # fmt: skip


def find_mitmdump() -> Optional[str]:
    for candidate in (
        shutil.which("mitmdump"),
        os.environ.get("MITMDUMP"),
        "/tmp/mitm-venv/bin/mitmdump",
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def tool_version(command: list[str], prefix: str = "") -> str:
    """The first line of ``command``'s output that starts with ``prefix``, or "?"."""
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    lines = [line for line in out.splitlines() if line.startswith(prefix) and line.strip()]
    return lines[0].strip() if lines else "?"


@dataclass
class Config:
    name: str
    port: int = 0
    process: Optional[subprocess.Popen[bytes]] = None
    missing: str = ""
    """Why this configuration is not measured ("not installed"), or empty."""
    terminal: Optional[DrainedTerminal] = None
    """The pseudo-terminal its TUI draws on (None: no TUI)."""


def stop_config(process: subprocess.Popen[bytes], terminal: Optional[DrainedTerminal]) -> None:
    """Stop a configuration's process as its user would: Ctrl-C typed into its TUI (then the
    session drains and flushes), else Ctrl-C as a signal (`processes.stop`)."""
    if terminal is not None:
        terminal.type("\x03")
        with suppress(subprocess.TimeoutExpired):
            process.wait(QUIT_TIMEOUT)
    stop(process)
    if terminal is not None:
        terminal.close()


@contextmanager
def configurations(
    record_dir: Path, baseline: Optional[Path], ours: Sequence[str] = (OURS,)
) -> Iterator[list[Config]]:
    """Every configuration, started in front of one upstream (each golem-proxy of ``ours``
    recording into ``record_dir``; with ``baseline``, also the golem-proxy of that checkout);
    stopped on exit."""
    up = free_port()
    processes = [start_process([sys.executable, PEERS, "upstream", str(up)], up)]
    configs = [Config("direct", up)]
    terminals: dict[int, DrainedTerminal] = {}

    def add(
        name: str,
        command: list[str],
        port: int,
        *,
        required: bool = False,
        tui: bool = False,
        **popen: object,
    ) -> None:
        terminal = DrainedTerminal() if tui else None
        if terminal is not None:
            popen.update(terminal.popen_options())
        try:
            processes.append(start_process(command, port, **popen))
        except (OSError, RuntimeError) as exc:
            if terminal is not None:
                terminal.close()
            if required:
                raise
            configs.append(Config(name, missing=f"failed to start: {exc}"))
            return
        if terminal is not None:
            terminal.started()
            terminals[processes[-1].pid] = terminal
        configs.append(Config(name, port, processes[-1], terminal=terminal))

    try:
        port = free_port()
        add(RELAY, [sys.executable, PEERS, "relay", str(port), str(up)], port, required=True)
        if shutil.which("socat"):
            port = free_port()
            add("socat", ["socat", f"TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork",
                          f"TCP:127.0.0.1:{up},nodelay"], port)  # fmt: skip
        else:
            configs.append(Config("socat", missing="not installed"))
        mitmdump = find_mitmdump()
        if mitmdump:
            port = free_port()
            mode = f"reverse:tcp://127.0.0.1:{up}@127.0.0.1:{port}"
            add(MITM, [mitmdump, "-q", "--mode", mode], port)
        else:
            configs.append(Config(MITM, missing="not installed"))
        for name in ours:
            port = free_port()
            record = str(record_dir / RECORDING[name])
            tui = name in WITH_TUI.values()
            command = proxy_command(port, up, record, WHERE[name], tui=tui)
            add(name, command, port, required=True, tui=tui)
        if baseline is not None:
            port = free_port()
            command = proxy_command(port, up, str(record_dir / RECORDING[BASELINE]))
            env = dict(os.environ, PYTHONPATH=str(baseline))
            add(BASELINE, command, port, required=True, cwd=baseline, env=env)
        yield configs
    finally:
        for process in processes:
            stop_config(process, terminals.get(process.pid))


APPENDS = 8
"""16 MiB appends timed by `append_cost`."""


def append_cost(
    directory: Path, size: int = 16 * 2**20, *, as_recorder: bool = False
) -> list[float]:
    """Seconds each of `APPENDS` writes of ``size`` bytes took, appended to a new file in
    ``directory`` (no fsync, as the recorder does): the least a recording of one answer that
    size costs the observing process here. Growing a file is not the same price everywhere: on
    some virtual machines it costs ten times an overwrite of the same bytes, and varies. With
    ``as_recorder`` the pages written back are dropped as the recorder drops them
    (`golem_proxy.recording.page_cache`), so that the next appends reuse them."""
    from golem_proxy.recording.page_cache import WrittenPages

    data = os.urandom(size)
    path = directory / "append-cost.bin"
    times = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    pages = WrittenPages(fd)
    try:
        for _ in range(APPENDS):
            start = time.perf_counter()
            os.write(fd, data)
            if as_recorder:
                pages.wrote(size)
            times.append(time.perf_counter() - start)
    finally:
        os.close(fd)
        path.unlink()
    return times


def describe_append_cost(
    before: Sequence[float], after: Sequence[float], as_recorder: Sequence[float] = ()
) -> str:
    """A line saying what `append_cost` measured before and after a run, and the rate of 16
    MiB answers it leaves room for: a recorder can go no faster than its file grows; and what
    the same appends cost with the pages written back dropped, as the recorder does."""

    def median(times: Sequence[float]) -> float:
        return sorted(times)[len(times) // 2]

    def spread(times: Sequence[float]) -> str:
        ordered = sorted(times)
        return f"{median(times) * 1e3:.1f} ms ({ordered[0] * 1e3:.1f}-{ordered[-1] * 1e3:.1f})"

    ceiling = 16 * 2**20 / median(before) / 1e6
    line = (
        "appending 16 MiB to a file in the recordings' directory (a plain write, timed "
        f"{len(before)} times before the run and after it): median {spread(before)} before, "
        f"{spread(after)} after; at the pace before, a recorder takes 16 MiB answers at most "
        f"at ~{ceiling:,.0f} MB/s"
    )
    if as_recorder:
        line += (
            f"; with the pages written back dropped, as the recorder does: {spread(as_recorder)}"
            f" (~{16 * 2**20 / median(as_recorder) / 1e6:,.0f} MB/s)"
        )
    return line


def describe_rig(configs: list[Config]) -> str:
    commit = tool_version(["git", "-C", str(ROOT), "describe", "--always", "--dirty"])
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    parts = [f"checkout {commit}", f"{os.cpu_count()} cores (load {load})",
             f"Python {platform.python_version()}"]  # fmt: skip
    if any(c.name == "socat" and not c.missing for c in configs):
        parts.append(tool_version(["socat", "-V"], "socat version").split(" on ")[0])
    mitmdump = find_mitmdump()
    if mitmdump and any(c.name == MITM and not c.missing for c in configs):
        parts.append(tool_version([mitmdump, "--version"]))
    return "; ".join(parts)
