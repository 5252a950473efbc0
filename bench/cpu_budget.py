"""Where a 16 MiB answer's CPU goes: the minimal trio relay and golem-proxy (``--observer
child-process``, recording on) each move N answers of 16 MiB one after the other, interleaved
over R rounds, and each process's CPU (by thread) is read from /proc around each run.

    python bench/cpu_budget.py [--rounds 3] [--answers 40] [--warm N] [--pause S] [--quick]
        [--tui] [--json FILE]

The table gives, per answer, the CPU of the client (this process), the upstream, and each of the
hop's processes (forwarding, observing: its main thread and the others, the recorder's), their
sum, the wall time, and the bound the sum puts on the wall time where everything shares the
machine's cores (sum / cores): on a machine of 2 cores the four processes cannot move answers
faster than that, however well they overlap; "overlap" is that bound over the wall time.
"faults" are the hop's minor page faults per answer (its processes together): memory touched
for the first time, or again after it went back to the system, which on a virtual machine
that reports free memory to its host costs a fault at the host too. With ``--tui``,
golem-proxy is measured a second time with ``--tui`` (drawn on a pseudo-terminal of a fixed
size, pty_terminal.py): its observing process's main thread is then the TUI's, and the
session (decoding, pairing, the recorder's queue) is among its other threads. Recording, the
TUI keeps none of the answers' payloads (it reads them back from the recording when needed:
golem_proxy/tui/payloads.py); without a recording it would keep the newest up to its budget
(256 MiB), each answer kept then memory touched for the first time. ``--warm N`` moves N
answers through each hop before its clock starts, to measure what comes after a session's
heap has grown to its working set. ``--pause S`` moves the measured answers
in batches of `PAUSE_BATCH` with S seconds between (a model that captures, thinks, captures
again): the CPU and the faults an answer then include what a pause costs (the heap a process
gives back once idle, faulted in again by the next batch), the wall time leaves the pauses out.
Then the floor of observing one answer: what the bulk steps cost without the program around
them (read from a pipe 1 MiB at a time while another process writes it, join, elide the blob
as the live view does, append to a file in the recordings' way), timed on this process's thread.

Every golem-proxy run must record every answer (its ``exchange`` lines are counted): a figure
from a run that shed is no speed, and the script exits 1.
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from rich.console import Console
from rich.table import Table

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))  # golem_core, golem_proxy, bench.*
sys.path.insert(0, str(BENCH))  # bench_proxy's modules import each other by their names

from bench_peers import BIG  # noqa: E402
from processes import (  # noqa: E402
    free_port,
    observing_process,
    observing_processes,
    settle,
    start_process,
    stat_cpu_seconds,
    stat_minor_faults,
)
from proxy_measures import RecordingTail, big_responses  # noqa: E402
from proxy_rig import PEERS, proxy_command, stop_config  # noqa: E402
from pty_terminal import DrainedTerminal  # noqa: E402

from golem_core.messages import elide_long_strings  # noqa: E402
from golem_proxy.live.observer_launch import PIPE_SIZE  # noqa: E402
from golem_proxy.live.tap_parse import ELIDE_STRINGS_OVER, OPAQUE_SCAN  # noqa: E402
from golem_proxy.recording.page_cache import WrittenPages  # noqa: E402


def cpu(pids: list[int]) -> dict[tuple[int, int], float]:
    """CPU seconds of each of ``pids`` by (process, 0), threads that ended included, and of
    its main thread by (process, process); what is gone is left out."""
    found = {}
    for pid in pids:
        for key, path in (
            ((pid, 0), f"/proc/{pid}/stat"),
            ((pid, pid), f"/proc/{pid}/task/{pid}/stat"),
        ):
            seconds = stat_cpu_seconds(path)
            if seconds is not None:
                found[key] = seconds
    return found


def minor_faults(pids: list[int]) -> dict[int, int]:
    """Minor page faults so far of each of ``pids`` (threads that ended included); what is
    gone is left out."""
    found = {}
    for pid in pids:
        faults = stat_minor_faults(f"/proc/{pid}/stat")
        if faults is not None:
            found[pid] = faults
    return found


Part = tuple[int, str]
"""A process and which of its threads count: ``all``, ``main`` or ``others``."""


PAUSE_BATCH = 5
"""Answers moved back to back between two pauses (``--pause``)."""


def batches(answers: int, pause: float) -> list[int]:
    """How many answers each connection of the measure moves: all on one, or `PAUSE_BATCH`
    at a time with ``pause`` between."""
    step = PAUSE_BATCH if pause else max(answers, 1)
    return [min(step, answers - first) for first in range(0, answers, step)]


def measured(
    port: int,
    answers: int,
    parts: dict[str, list[Part]],
    hop: Optional[subprocess.Popen[bytes]] = None,
    warm: int = 0,
    pause: float = 0.0,
) -> dict[str, float]:
    """Move ``answers`` answers through ``port``; ms of CPU per answer of each part and of
    the client (this process), and ms of wall time per answer. With ``hop`` (a process),
    the CPU is read once it is idle: an observer still decoding the last answer when the
    client has it counts that work too. ``warm`` answers go through first, unmeasured; with
    ``pause``, the measured ones go in batches (`PAUSE_BATCH`) with ``pause`` seconds between,
    which the wall time leaves out."""
    if warm:
        big_responses(port, warm)
        if hop is not None:
            settle(hop)
    pids = sorted({pid for chosen in parts.values() for pid, _ in chosen})
    hop_pids = sorted(
        {pid for name, chosen in parts.items() if name != "upstream" for pid, _ in chosen}
    )
    faults_before = minor_faults(hop_pids)
    before, started, client = cpu(pids), time.perf_counter(), os.times()
    paused = 0.0
    for number, batch in enumerate(batches(answers, pause)):
        if number:
            time.sleep(pause)
            paused += pause
        big_responses(port, batch)
    wall, ended = time.perf_counter() - started - paused, os.times()
    if hop is not None:
        settle(hop)
    after = cpu(pids)
    faults_after = minor_faults(hop_pids)
    spent = {key: after[key] - before[key] for key in after if key in before}
    seconds = {"client": ended.user + ended.system - client.user - client.system}
    for name, chosen in parts.items():
        seconds[name] = 0.0
        for pid, which in chosen:
            whole, main = spent.get((pid, 0), 0.0), spent.get((pid, pid), 0.0)
            seconds[name] += {"all": whole, "main": main, "others": whole - main}[which]
    result = {name: spent / answers * 1e3 for name, spent in seconds.items()}
    result["wall"] = wall / answers * 1e3
    faulted = sum(
        faults_after[pid] - faults_before[pid] for pid in faults_after if pid in faults_before
    )
    result["faults"] = faulted / answers
    return result


def observed_by(pid: int, limit: float = 30.0) -> int:
    """``pid``'s observing process, once it and its standby (when one comes within
    ``limit``) have started and settled."""
    deadline = time.monotonic() + limit
    while len(observing_processes(pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    found = observing_process(pid)  # LookupError when there is none
    time.sleep(0.5)  # quiet again before the clock starts
    return found


def observing_floor(answers: int) -> dict[str, float]:
    """ms of this thread's CPU per 16 MiB answer for the bulk steps of observing it."""
    blob = base64.b64encode(os.urandom(BIG * 3 // 4 - 64))
    payload = b'{"status":"success","result":{"image":"' + blob + b'"}}'
    size = len(payload)
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_SIZE)  # as the handoff pipe is
    writer = os.fork()
    if writer == 0:  # another process writes the pipe, as the forwarding one does
        os.close(read_end)
        view = memoryview(payload)
        for _ in range(answers):
            at = 0
            while at < size:
                at += os.write(write_end, view[at : at + 65536])
        os._exit(0)
    os.close(write_end)
    steps = dict.fromkeys(("read", "join", "elide", "append"), 0.0)
    with tempfile.TemporaryFile(dir=BENCH.parent / "recordings") as out:
        pages = WrittenPages(out.fileno())
        for _ in range(answers):
            mark = time.thread_time()
            pieces, got = [], 0
            while got < size:
                piece = os.read(read_end, min(PIPE_SIZE, size - got))
                pieces.append(piece)
                got += len(piece)
            mark = _add(steps, "read", mark)
            joined = b"".join(pieces)
            mark = _add(steps, "join", mark)
            if elide_long_strings(joined, ELIDE_STRINGS_OVER, OPAQUE_SCAN)[1] != len(blob):
                raise RuntimeError("the blob was not elided whole")
            mark = _add(steps, "elide", mark)
            pages.wrote(out.write(joined))
            _add(steps, "append", mark)
    os.close(read_end)
    os.waitpid(writer, 0)
    return {name: seconds / answers * 1e3 for name, seconds in steps.items()}


def _add(steps: dict[str, float], name: str, since: float) -> float:
    now = time.thread_time()
    steps[name] += now - since
    return now


TUI = "golem-proxy --tui"
"""The hop's name in the table for golem-proxy measured with ``--tui``."""


def run(
    rounds: int, answers: int, tui: bool = False, warm: int = 0, pause: float = 0.0
) -> dict[str, list[dict[str, float]]]:
    upstream_port, relay_port = free_port(), free_port()
    python = sys.executable
    upstream = start_process([python, PEERS, "upstream", str(upstream_port)], upstream_port)
    relay = start_process([python, PEERS, "relay", str(relay_port), str(upstream_port)], relay_port)
    found: dict[str, list[dict[str, float]]] = {"relay": [], "golem-proxy": []}
    if tui:
        found[TUI] = []
    try:
        with tempfile.TemporaryDirectory(dir=BENCH.parent / "recordings") as where:
            for _ in range(rounds):
                relayed: dict[str, list[Part]] = {
                    "upstream": [(upstream.pid, "all")],
                    "relay": [(relay.pid, "all")],
                }
                found["relay"].append(
                    measured(relay_port, answers, relayed, warm=warm, pause=pause)
                )
                for hop in found:
                    if hop != "relay":
                        recording = Path(where) / "budget.jsonl"
                        figures = ours(
                            upstream,
                            upstream_port,
                            answers,
                            recording,
                            drawn=hop == TUI,
                            warm=warm,
                            pause=pause,
                        )
                        found[hop].append(figures)
    finally:
        for process in (relay, upstream):
            process.kill()
            process.wait()
    return found


def ours(
    upstream: subprocess.Popen[bytes],
    upstream_port: int,
    answers: int,
    recording: Path,
    *,
    drawn: bool,
    warm: int = 0,
    pause: float = 0.0,
) -> dict[str, float]:
    """golem-proxy (observing in a process of its own; ``drawn``: with ``--tui``, on a
    pseudo-terminal) started in front of ``upstream`` (on ``upstream_port``), measured after
    ``warm`` answers, stopped, and its recording counted (``recorded``: the measured answers
    it holds)."""
    port = free_port()
    command = proxy_command(port, upstream_port, str(recording), "child-process", tui=drawn)
    terminal = DrainedTerminal() if drawn else None
    proxy = start_process(command, port, **(terminal.popen_options() if terminal else {}))
    if terminal is not None:
        terminal.started()
    try:
        observing = observed_by(proxy.pid)
        parts: dict[str, list[Part]] = {
            "upstream": [(upstream.pid, "all")],
            "forwarding": [(proxy.pid, "all")],
            "observing main": [(observing, "main")],
            "observing others": [(observing, "others")],
        }
        figures = measured(port, answers, parts, proxy, warm, pause)
    finally:
        stop_config(proxy, terminal)
    counted = RecordingTail(recording, ("exchange",)).count() or {}
    # Each connection of the workload (one for the warm-up, one a batch) begins with a hello.
    hellos = len(batches(answers, pause)) + (1 if warm else 0)
    figures["recorded"] = counted.get("exchange", 0) - hellos - warm
    return figures


COLUMNS = ("client", "upstream", "relay", "forwarding", "observing main", "observing others")


def table(
    found: dict[str, list[dict[str, float]]],
    answers: int,
    cores: int,
    warm: int = 0,
    pause: float = 0.0,
) -> Table:
    after = f", each after {warm} unmeasured" if warm else ""
    if pause:
        after += f", in batches of {PAUSE_BATCH} with {pause:g} s between"
    shown = Table(
        title=f"CPU per 16 MiB answer (ms, medians of {len(found['relay'])} rounds of "
        f"{answers}{after}; {cores} cores)"
    )
    names = ("hop", *COLUMNS, "sum", "wall", "sum / cores", "overlap", "MB/s", "faults", "recorded")
    for name in names:
        shown.add_column(name, justify="left" if name == "hop" else "right", no_wrap=name == "hop")
    relay_rate = statistics.median(BIG / 1e3 / run["wall"] for run in found["relay"])
    for hop, runs in found.items():
        cells = [hop]
        for column in COLUMNS:
            present = [run[column] for run in runs if column in run]
            cells.append(f"{statistics.median(present):.1f}" if present else "-")
        sums = [sum(run.get(column, 0.0) for column in COLUMNS) for run in runs]
        walls = [run["wall"] for run in runs]
        rate = statistics.median(BIG / 1e3 / wall for wall in walls)
        cells += [
            f"{statistics.median(sums):.1f}",
            f"{statistics.median(walls):.1f}",
            f"{statistics.median(sums) / cores:.1f}",
            f"{statistics.median(s / cores / w for s, w in zip(sums, walls)):.0%}",
            f"{rate:,.0f}" + ("" if hop == "relay" else f" ({rate / relay_rate:.2f}x)"),
            f"{statistics.median(run.get('faults', 0.0) for run in runs):,.0f}",
            "-" if hop == "relay" else f"{min(run['recorded'] for run in runs):.0f} / {answers}",
        ]
        shown.add_row(*cells)
    return shown


def floor_table(floor: dict[str, float], answers: int) -> Table:
    shown = Table(
        title=f"the floor of observing one 16 MiB answer (ms of one thread, {answers} answers)"
    )
    for name in (*floor, "sum"):
        shown.add_column(name, justify="right")
    shown.add_row(*(f"{ms:.1f}" for ms in floor.values()), f"{sum(floor.values()):.1f}")
    return shown


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--answers", type=int, default=40)
    parser.add_argument(
        "--warm", type=int, default=0, help="answers through each hop before its clock starts"
    )
    parser.add_argument(
        "--pause",
        type=float,
        default=0.0,
        help=f"seconds between batches of {PAUSE_BATCH} measured answers (0: back to back)",
    )
    parser.add_argument("--quick", action="store_true", help="1 round of 4 answers")
    parser.add_argument(
        "--tui", action="store_true", help="also golem-proxy --tui, drawn on a pseudo-terminal"
    )
    parser.add_argument("--json", metavar="FILE", help="also write every figure here")
    args = parser.parse_args(argv)
    rounds, answers = (1, 4) if args.quick else (args.rounds, args.answers)
    cores = len(os.sched_getaffinity(0))
    console = Console(width=160)
    found = run(rounds, answers, args.tui, args.warm, args.pause)
    floor = observing_floor(answers)
    console.print(table(found, answers, cores, args.warm, args.pause))
    console.print(floor_table(floor, answers))
    observing = {
        hop: statistics.median(run["observing main"] + run["observing others"] for run in runs)
        for hop, runs in found.items()
        if hop != "relay"
    }
    drawing = f" (with the TUI: {observing[TUI]:.1f} ms)" if TUI in observing else ""
    console.print(
        f"observing took {observing['golem-proxy']:.1f} ms an answer{drawing}; its bulk steps "
        f"alone {sum(floor.values()):.1f} ms (the rest is the program around them)"
    )
    shed = [
        (hop, run["recorded"])
        for hop, runs in found.items()
        if hop != "relay"
        for run in runs
        if run["recorded"] != answers
    ]
    if shed:
        hop, recorded = shed[0]
        console.print(f"[red]a {hop} run recorded {recorded:.0f} of {answers} answers[/]")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": found, "floor": floor, "cores": cores}))
    return 1 if shed else 0


if __name__ == "__main__":
    sys.exit(main())
