"""Soak run of the robustness scenarios (bench/robustness) with bigger numbers than CI.

    ./dev bench soak                      # about 2 minutes: the figures in docs/reliability.md
    ./dev bench soak --duration 300       # load for 5 minutes, everything else scaled up
    ./dev bench soak --report figures.md  # also write the markdown table

Each scenario's figures are printed as JSON and written under $GOLEM_FIGURES_DIR (default
<tmp>/golem-proxy-figures); the table at the end is what docs/reliability.md shows. Exits 1
when anything was lost, mispaired, unreadable or not byte-exact.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.robustness import scenarios  # noqa: E402
from bench.robustness.crash import crash_runs  # noqa: E402
from bench.robustness.figures import write_figures  # noqa: E402


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=30.0, help="load seconds (default 30)")
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--report", metavar="FILE", help="write the markdown table here")
    args = parser.parse_args(argv)
    scale = max(1.0, args.duration / 30.0)
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        plan = [
            ("load", lambda: trio.run(scenarios.load, work, args.connections, args.duration)),
            ("chaos", lambda: trio.run(scenarios.chaos, work, int(200 * scale), 11)),
            (
                "slowloris",
                lambda: trio.run(scenarios.slowloris, 300, 50, 10.0 * scale, None, 0.5),
            ),
            (
                "idle-timeout",
                lambda: trio.run(scenarios.slowloris, 300, 50, 5.0 * scale, 2.0, 0.5),
            ),
            ("hygiene", lambda: trio.run(scenarios.hygiene, int(1000 * scale), 5)),
            ("crash", lambda: crash_runs(work, runs=int(10 * scale), clients=16, seed=9)),
        ]
        for name, run in plan:
            started = time.monotonic()
            found = run()
            found["wall_s"] = round(time.monotonic() - started, 1)
            results[name] = found
            path = write_figures(f"soak-{name}", found)
            print(f"{name}: {json.dumps(found, sort_keys=True)}  → {path}", flush=True)
    table = render(results)
    print()
    print(table)
    if args.report:
        Path(args.report).write_text(table + "\n", encoding="utf-8")
    return 0 if held(results) else 1


def held(r: dict[str, dict[str, Any]]) -> bool:
    load, chaos, crash = r["load"], r["chaos"], r["crash"]
    return (
        load["lost"] == load["mispaired"] == load["duplicates"] == load["client_errors"] == 0
        and load["exchanges_recorded"] == load["exchanges_client"]
        and chaos["mismatches"] == 0
        and crash["unreadable"] == crash["broken_exchanges"] == crash["holes"] == 0
        and r["hygiene"]["settled"]
        and r["idle-timeout"]["idle_closes"] == r["idle-timeout"]["stallers"]
    )


def render(r: dict[str, dict[str, Any]]) -> str:
    load, chaos, loris, idle = r["load"], r["chaos"], r["slowloris"], r["idle-timeout"]
    hyg, crash = r["hygiene"], r["crash"]
    mib = 1024
    rows = [
        (
            f"Load: {load['connections']} concurrent connections, sequential echo round trips, "
            "recording on",
            f"{load['seconds']:g} s, {load['exchanges_client']} exchanges "
            f"({load['exchanges_per_s']}/s; p50 {load['latency_p50_ms']} ms, "
            f"p99 {load['latency_p99_ms']} ms)",
            f"recorded {load['exchanges_recorded']} = client {load['exchanges_client']}; "
            f"RSS {load['rss_start_kib'] // mib} → {load['rss_warm_kib'] // mib} (warm) → "
            f"{load['rss_end_kib'] // mib} MiB, 2nd-half growth "
            f"{load['rss_second_half_growth_kib'] // mib} MiB; at the end tap backlog "
            f"{load['tap_backlog_end_bytes'] // 1024} KiB, consumer queue "
            f"{load['consumer_queue_end_events']} events",
            f"lost {load['lost']}, mispaired {load['mispaired']}, "
            f"duplicated {load['duplicates']}, events missed {load['missed_events']}",
        ),
        (
            "Chaos: random chunking, garbage, oversized headers, client and upstream resets",
            f"{chaos['runs']} connections {chaos['modes']}, {chaos['bytes_c2s']} B up / "
            f"{chaos['bytes_s2c']} B down",
            "rebuilt streams are byte-exact prefixes along the path; equal when both closed "
            f"cleanly ({chaos['frames_recorded']} frames, {chaos['framing_errors']} framing "
            "errors recorded)",
            f"mismatches {chaos['mismatches']}",
        ),
        (
            "Slowloris: clients send a header and stall / trickle a request byte by byte",
            f"{loris['stallers']} stalled + {loris['tricklers']} trickling for "
            f"{loris['seconds']:g} s",
            f"normal client p50 {loris['baseline_p50_ms']} → {loris['loaded_p50_ms']} ms, "
            f"p99 {loris['baseline_p99_ms']} → {loris['loaded_p99_ms']} ms "
            f"({loris['normal_round_trips']} round trips); proxy closed "
            f"{loris['stallers_closed_by_proxy']} (no --idle-timeout)",
            "none",
        ),
        (
            f"--idle-timeout {idle['idle_timeout']:g}",
            f"{idle['stallers']} stalled + {idle['tricklers']} trickling for {idle['seconds']:g} s",
            f"{idle['idle_closes']}/{idle['stallers']} stalled closed, "
            f"{idle['tricklers_alive']}/{idle['tricklers']} tricklers kept; normal p99 "
            f"{idle['loaded_p99_ms']} ms",
            "none",
        ),
        (
            "Resource hygiene: clean, half-close, reset mid-frame, garbage",
            f"{hyg['connections']} connections {hyg['kinds']}",
            f"fds {hyg['fds_before']} → {hyg['fds_after']}, trio tasks {hyg['tasks_before']}"
            f" → {hyg['tasks_after']}, settled in {hyg['seconds']} s ({hyg['reset_by_proxy']}"
            " reset by the proxy because the upstream refused the burst)",
            "none",
        ),
        (
            "Crash: `kill -9` of the recording proxy command under load",
            f"{crash['runs']} kills, {crash['clients']} clients, at random 0.3-1.5 s",
            f"{crash['runs'] - crash['unreadable']}/{crash['runs']} readable, "
            f"{crash['recorded_exchanges']} exchanges intact, no holes "
            f"({crash['truncated_tails']} torn last lines skipped)",
            f"the unrecorded tail: {crash['client_round_trips'] - crash['recorded_exchanges']}"
            f" of {crash['client_round_trips']} round trips (decoding trails forwarding)",
        ),
    ]
    lines = [
        "| What was tried | How much | What held | What was lost |",
        "|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
