"""Proxy benchmark: one upstream reached directly, through a minimal trio byte relay, socat,
mitmdump (reverse TCP mode) and golem-proxy (decoding, pairing and recording on; observing in
the forwarding process, and in a child process of its own), all in one interleaved run;
medians of several rounds.

    python bench/bench_proxy.py [--rounds 3] [--quick] [--mode both|full|flood]
                                [--observer both|in-process|child-process|spool]
                                [--tui [also|only]] [--baseline DIR] [--record-dir DIR]
                                [--json FILE]

Two modes, each with its own processes and recording. *Full observation* is what a user
recording a regression trace does: a sequential GOLEM client (small calls, then 16 MiB
responses) and a modest pipelined run, after which the recording must hold every exchange with
no ``unobserved`` or ``gap`` line. The *flood* pipelines far more noop frames than the observer
can decode, and prints the share it observed.

Each measures the round trip of one ~200-byte call at a time (the GOLEM client's pattern: the
median minus the direct median of the same round, the latency a hop adds; the 99th percentile;
sequential calls a second; and the CPU the hop's processes spent per call, each apart, e.g.
forwarding + observing, the standby that waits to replace the observing process counted in
its share: where the rig's client and upstream share the cores, that sum bounds the sequential
rate), 16 MiB responses one after the other (MB/s; a full run first moves 64 of them through
each configuration unmeasured, so that each hop's heap has grown to its working set; a live
TUI that records keeps none of their payloads, see bench/cpu_budget.py --warm), and tiny frames
pipelined both ways (frames/s: to the last response byte, and again counting until the hop's
process is idle, which charges an observer that trails the wire for its catch-up), plus each
hop's peak RSS (all its processes, a standby's ~32 MiB included) and what golem-proxy's
recording holds, counted from the file. After each measure the recording is read again: a
figure obtained while the observer shed (the file gained an ``unobserved`` or ``gap`` line) is
marked ``*``. Ratios are to the minimal relay's median.
The upstream answers from pre-encoded bytes and the client only counts bytes (see
bench_peers.py), so the direct row shows how much headroom the rig has over what it measures.
A tool that is not installed (socat, mitmdump) gets a "not installed" row, never a failure;
mitmdump is looked up on PATH, then in $MITMDUMP and /tmp/mitm-venv/bin.

With ``--tui``, each chosen golem-proxy is measured again with ``--tui`` (in one process, or the
TUI in the observing process with ``--observer child-process``): the same workloads and the
same check of its recording, the TUI drawing on a pseudo-terminal of a fixed size that is its
controlling terminal, drained by a thread so that it never blocks; it is stopped by a Ctrl-C
typed into the TUI, as a user quits it (pty_terminal.py).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from bench_peers import BIG
from proxy_measures import (
    Mode,
    RecordingTail,
    Series,
    big_responses,
    byte_exact,
    modes,
    percentile,
    pipelined,
    round_trips,
    run,
)
from proxy_rig import (
    MITM,
    OBSERVERS,
    OURS,
    PEERS,
    RECORDING,
    RELAY,
    WITH_TUI,
    Config,
    append_cost,
    configurations,
    describe_append_cost,
    describe_rig,
)
from proxy_tables import (
    Target,
    _observed,
    observation_verdict,
    results_table,
    targets,
    targets_table,
)
from pty_terminal import COLUMNS, ROWS
from rich.console import Console
from rich.markup import escape

__all__ = [  # the rig, the measures and the tables, as the bench's smoke tests reach them
    "MITM", "OURS", "PEERS", "RELAY", "Config", "RecordingTail", "Series", "Target",
    "_observed", "big_responses", "byte_exact", "modes", "observation_verdict", "percentile",
    "pipelined", "results_table", "round_trips", "run", "targets", "targets_table",
]  # fmt: skip  # fmt: skip


def run_mode(
    mode: Mode,
    console: Console,
    baseline: Optional[Path],
    ours: Sequence[str] = (OURS,),
    where: Optional[Path] = None,
) -> dict[str, Series]:
    with tempfile.TemporaryDirectory(dir=where) as record_dir:
        appends = append_cost(Path(record_dir))
        recorder_appends = append_cost(Path(record_dir), as_recorder=True)
        with configurations(Path(record_dir), baseline, ours) as configs:
            console.print(describe_rig(configs))
            recordings = {
                c.name: RecordingTail(Path(record_dir) / RECORDING[c.name])
                for c in configs
                if c.name in RECORDING and not c.missing
            }
            results = run(
                configs, mode.rounds, mode.trips, mode.bigs, mode.tiny, recordings, mode.warm_bigs
            )
        # Once each golem-proxy has stopped and closed its recording:
        for name, recording in recordings.items():
            results[name].recorded = recording.count()
        appended = append_cost(Path(record_dir))
    console.print(
        f"{mode.name}: {mode.trips} sequential round trips, {mode.bigs} x {BIG // 2**20} MiB "
        f"responses and {mode.tiny:,} pipelined frames per configuration and round"
        + (
            f", after {mode.warm_bigs} x {BIG // 2**20} MiB responses unmeasured"
            if mode.warm_bigs
            else ""
        )
        + "; golem-proxy records to a file"
    )
    console.print(results_table(configs, results, mode))
    console.print(describe_append_cost(appends, appended, recorder_appends))
    for name in recordings:
        console.print(targets_table(targets(results, mode, name), mode, name))
        console.print(f"{mode.name}, {name}: " + observation_verdict(results[name], mode))
    for name, series in results.items():
        for error, times in Counter(series.errors).items():
            repeated = f" (x{times})" if times > 1 else ""
            console.print(f"[red]{name}[/]: {escape(error)}{repeated}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2 rounds of fewer iterations")
    parser.add_argument("--mode", choices=("both", "full", "flood"), default="both")
    parser.add_argument("--json", metavar="FILE", help="also write every per-round value here")
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        type=Path,
        help="also measure the golem-proxy of this checkout (e.g. from git archive), interleaved",
    )
    parser.add_argument(
        "--observer",
        choices=("both", *OBSERVERS.values()),
        default="both",
        help="which golem-proxy to measure: observing in its own process, in a child process, "
        "in a child process fed through a spool beside the recording (--observer-spool), or "
        "all of them in the same interleaved run (both, the default)",
    )
    parser.add_argument(
        "--tui",
        nargs="?",
        const="also",
        choices=("also", "only"),
        help="also measure each chosen golem-proxy with --tui, its TUI drawn on a "
        f"{COLUMNS}x{ROWS} pseudo-terminal (only: those rows alone of golem-proxy's)",
    )
    parser.add_argument(
        "--record-dir",
        metavar="DIR",
        type=Path,
        help="where golem-proxy records (in a new directory here; default: the system's "
        "temporary directory), e.g. a tmpfs to see what growing a file on disk costs",
    )
    args = parser.parse_args()
    chosen = [name for name, where in OBSERVERS.items() if args.observer in ("both", where)]
    ours = [] if args.tui == "only" else list(chosen)
    if args.tui:
        ours += [WITH_TUI[name] for name in chosen]
    console = Console(width=200)
    dump = {}
    for mode in modes(args.quick, args.rounds, args.mode):
        results = run_mode(mode, console, args.baseline, ours, args.record_dir)
        dump[mode.name] = {name: vars(series) for name, series in results.items()}
    console.print("load average at the end: " + "/".join(f"{x:.1f}" for x in os.getloadavg()))
    if args.json:
        Path(args.json).write_text(json.dumps(dump, indent=1, default=sorted))


if __name__ == "__main__":
    main()
