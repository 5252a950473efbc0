"""Fleet query benchmark: a GROUP BY method latency summary over many generated traces with
``golem-proxy query``, next to the loop over ``show --json`` it replaces, ratio in one run.

    python bench/bench_query.py [--traces 1000] [--exchanges 1000] [--loop-sample 50]

The traces are written directly in the recording's line layout (one connection each, methods
and latencies varying); the first is checked against ``show --json`` so the layout cannot
drift unnoticed. The loop runs ``show --json`` on ``--loop-sample`` traces and is scaled to
all of them (each run is the same work on a trace of the same size); 0 runs it on every one.
Also timed: exporting every trace to Parquet once, and the same query over the Parquet files.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_call import measure
from processes import ROOT

from golem_proxy.analysis.trace import open_flows
from golem_proxy.interop.flow_table import write_parquet

METHODS = {
    "scene.create_layer": 0.0004,
    "geometry.create_box": 0.0008,
    "geometry.create_sphere": 0.0009,
    "scene.list_objects": 0.002,
    "operations.boolean_union": 0.012,
    "viewport.capture": 0.05,
    "ping": 0.0002,
    "scene.get_document_info": 0.0003,
}
SQL = (
    "SELECT method, count(*) AS calls, avg(latency) AS mean_s, "
    "quantile_cont(latency, 0.95) AS p95_s FROM flows GROUP BY method ORDER BY method"
)


def write_trace(path: Path, exchanges: int, seed: int) -> None:
    """One recording of ``exchanges`` request/answer pairs on one connection."""
    rng = random.Random(seed)
    names = list(METHODS)
    lines = [
        '{"format":"golem-proxy-recording","version":1,"profile":"golem","routes":'
        '[{"name":"main","listen":"127.0.0.1:19876","upstream":"127.0.0.1:9876"}],'
        '"started_at":"2026-12-01T00:00:00.000000Z","clock":"t","tool":"bench","redact":[]}\n',
        '{"seq":1,"t":0.0,"kind":"open","conn":1,"route":"main",'
        '"client":"127.0.0.1:50000","upstream":"127.0.0.1:9876"}\n',
    ]
    t, seq = 0.0, 1
    for n in range(exchanges):
        method = names[rng.randrange(len(names))]
        latency = round(METHODS[method] * rng.uniform(0.5, 2.0), 6)
        request = f'{{"id": "r{n}", "method": "{method}", "params": {{"n": {n}}}}}'
        response = f'{{"id": "r{n}", "result": {{"ok": true}}, "error": null}}'
        t = round(t + 0.001, 6)
        answered = round(t + latency, 6)
        lines.append(
            f'{{"seq":{seq + 1},"t":{t},"kind":"frame","conn":1,"route":"main","dir":"c2s",'
            f'"n":{n},"size":{len(request) + 4},"type":"request","id":"r{n}",'
            f'"method":"{method}","msg":{request}}}\n'
            f'{{"seq":{seq + 2},"t":{answered},"kind":"frame","conn":1,"route":"main",'
            f'"dir":"s2c","n":{n},"size":{len(response) + 4},"type":"response","id":"r{n}",'
            f'"msg":{response}}}\n'
            f'{{"seq":{seq + 3},"t":{answered},"kind":"exchange","conn":1,"route":"main",'
            f'"req":{n},"resp":{n},"method":"{method}","status":"ok","latency":{latency}}}\n'
        )
        seq += 3
        t = answered
    path.write_text("".join(lines), encoding="utf-8")


def check_layout(path: Path) -> None:
    """The generated lines read back through `show --json` as the exchanges written."""
    done = subprocess.run(
        [sys.executable, "-m", "golem_proxy", "show", "--json", str(path)],
        capture_output=True, text=True, check=True, cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )  # fmt: skip
    flows = [json.loads(line) for line in done.stdout.splitlines()]
    assert flows and all(flow["status"] == "ok" and flow["latency_ms"] for flow in flows)


def loop_over_show(traces: list[Path]) -> dict[str, list[float]]:
    """What the query replaces: ``show --json`` per trace, latencies gathered per method."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    latencies: dict[str, list[float]] = {}
    for path in traces:
        done = subprocess.run(
            [sys.executable, "-m", "golem_proxy", "show", "--json", str(path)],
            capture_output=True, text=True, check=True, cwd=ROOT, env=env,
        )  # fmt: skip
        for line in done.stdout.splitlines():
            flow = json.loads(line)
            latencies.setdefault(flow["method"], []).append(flow["latency_ms"] / 1000)
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--exchanges", type=int, default=1000)
    parser.add_argument("--loop-sample", type=int, default=50)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-query-") as workdir:
        folder = Path(workdir)
        started = time.monotonic()
        traces = [folder / f"run-{i:04d}.jsonl" for i in range(options.traces)]
        for index, path in enumerate(traces):
            write_trace(path, options.exchanges, index)
        size = sum(path.stat().st_size for path in traces)
        print(
            f"generated {options.traces} traces x {options.exchanges} exchanges "
            f"({size / 1e6:.0f} MB) in {time.monotonic() - started:.1f} s"
        )
        check_layout(traces[0])

        seconds, peak = measure(["query", SQL, *map(str, traces), "--csv"])
        print(f"query over the recordings:   {seconds:8.1f} s  peak {peak / 2**20:6.1f} MiB")

        # What a CI does once per run (export --format parquet), here in one process so the
        # fixture does not pay a thousand interpreter starts.
        started = time.monotonic()
        for path in traces:
            with open_flows(str(path)) as trace:
                write_parquet(trace, str(path), str(path.with_suffix(".parquet")))
        print(f"export to Parquet, once:     {time.monotonic() - started:8.1f} s (in-process)")
        parquets = [str(path.with_suffix(".parquet")) for path in traces]
        fast, fast_peak = measure(["query", SQL, *parquets, "--csv"])
        print(f"query over the Parquet files:{fast:8.1f} s  peak {fast_peak / 2**20:6.1f} MiB")

        sample = traces if options.loop_sample <= 0 else traces[: options.loop_sample]
        started = time.monotonic()
        loop_over_show(sample)
        looped = (time.monotonic() - started) * len(traces) / len(sample)
        scaled = "" if len(sample) == len(traces) else f" (scaled from {len(sample)} traces)"
        print(f"loop over show --json:       {looped:8.1f} s{scaled}")
        print(f"ratio, recordings: {looped / seconds:.1f}x   Parquet: {looped / fast:.1f}x")


if __name__ == "__main__":
    main()
