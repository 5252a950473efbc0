"""Fleet query benchmark: a GROUP BY method latency summary over many generated traces with
``golem-proxy query``, next to the loop over ``show --json | jq`` it replaces, ratio in one run.

    python bench/bench_query.py [--traces 1000] [--exchanges 1000] [--loop-sample 50]
                                [--jobs N] [--no-parquet]

The traces are written directly in the recording's line layout (one connection each, methods
and latencies varying); on the first two, the loop's summary and the query's are checked to
agree, so the layout cannot drift unnoticed and neither side answers a different question.
The loop pipes ``show --json`` into ``jq -c`` per trace (``show --json`` alone when jq is not
installed; the output says which) on ``--loop-sample`` traces and is scaled to all of them
(each run is the same work on a trace of the same size); 0 runs it on every one. Printed with
each wall time: the CPU seconds it took (with its child processes), and the load average, as
the machine's other work moves the wall ratio. Also timed: exporting every trace to Parquet
once, and the same query over the Parquet files; and the query with ``--cache`` twice, the
first filling the cache, the second reading it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

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
    t, seq, sent, received = 0.0, 1, 0, 0
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
        sent += len(request) + 4
        received += len(response) + 4
    lines.append(
        f'{{"seq":{seq + 1},"t":{round(t + 0.001, 6)},"kind":"close","conn":1,"route":"main",'
        f'"reason":"client closed","bytes":{{"c2s":{sent},"s2c":{received}}},"abnormal":false}}\n'
    )
    path.write_text("".join(lines), encoding="utf-8")


def _golem_proxy(*args: str) -> list[str]:
    return [sys.executable, "-m", "golem_proxy", *args]


_ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def show_through_jq(path: Path, jq: Optional[str]) -> list[tuple[str, float]]:
    """``golem-proxy show --json PATH | jq -c '[.method, .latency_ms]'`` (without the jq
    stage when ``jq`` is None): each flow's method and latency in seconds."""
    show = subprocess.Popen(
        _golem_proxy("show", "--json", str(path)),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT, env=_ENV,
    )  # fmt: skip
    assert show.stdout is not None
    if jq is None:
        out = show.stdout.read()
    else:
        picked = subprocess.Popen(
            [jq, "-c", "[.method, .latency_ms]"], stdin=show.stdout, stdout=subprocess.PIPE
        )
        show.stdout.close()  # jq holds the pipe now: show sees it close if jq stops
        out, _ = picked.communicate()
        if picked.returncode != 0:
            raise RuntimeError(f"jq exited {picked.returncode} on {path}")
    if show.wait() != 0:
        raise RuntimeError(f"show --json exited {show.returncode} on {path}")
    pairs = []
    for line in out.splitlines():
        if jq is None:
            flow = json.loads(line)
            pairs.append((flow["method"], flow["latency_ms"] / 1000))
        else:
            method, latency_ms = json.loads(line)
            pairs.append((method, latency_ms / 1000))
    return pairs


def quantile_cont(values: list[float], q: float) -> float:
    """DuckDB's ``quantile_cont``: linear interpolation between the closest ranks."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def loop_over_show(traces: list[Path], jq: Optional[str]) -> list[tuple[str, int, float, float]]:
    """What the query replaces: `show --json | jq` per trace, then the summary of `SQL`
    (method, calls, mean and p95 latency) from what the loop gathered."""
    latencies: dict[str, list[float]] = {}
    for path in traces:
        for method, latency in show_through_jq(path, jq):
            latencies.setdefault(method, []).append(latency)
    return [
        (method, len(values), sum(values) / len(values), quantile_cont(values, 0.95))
        for method, values in sorted(latencies.items())
    ]


def query_summary(traces: list[Path]) -> list[tuple[str, int, float, float]]:
    """The summary `SQL` gives through ``golem-proxy query --json``."""
    done = subprocess.run(
        _golem_proxy("query", SQL, *map(str, traces), "--json"),
        capture_output=True, text=True, check=True, cwd=ROOT, env=_ENV,
    )  # fmt: skip
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    return [(row["method"], row["calls"], row["mean_s"], row["p95_s"]) for row in rows]


def check_agree(traces: list[Path], exchanges: int, jq: Optional[str]) -> None:
    """The loop and the query answer the same question the same way (the generated layout
    reads back as the exchanges written, and neither side drops or invents a flow)."""
    looped = loop_over_show(traces, jq)
    queried = query_summary(traces)
    assert sum(row[1] for row in looped) == len(traces) * exchanges, looped
    assert [row[:2] for row in looped] == [row[:2] for row in queried], (looped, queried)
    for mine, theirs in zip(looped, queried):
        # The loop sees latency_ms as show rounds it; seconds agree to the microsecond.
        assert abs(mine[2] - theirs[2]) < 1e-6 and abs(mine[3] - theirs[3]) < 1e-6


def timed(args: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (the process and the workers it waited for) and peak RSS
    (bytes, its largest process) of ``golem-proxy ARGS``."""
    before = _children_cpu()
    seconds, peak = measure(args)
    return seconds, _children_cpu() - before, peak


def _children_cpu() -> float:
    """CPU seconds of the child processes waited for so far (and of theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--exchanges", type=int, default=1000)
    parser.add_argument("--loop-sample", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=0, help="query --jobs (0: its default)")
    parser.add_argument("--no-parquet", action="store_true", help="skip the Parquet timings")
    options = parser.parse_args()
    jq = shutil.which("jq")
    print(f"cores {os.cpu_count()}, load average {_load()} (1, 5, 15 min) at the start")
    print(
        "the loop: show --json | jq -c '[.method, .latency_ms]'"
        if jq
        else "the loop: show --json alone (jq is not installed: apt install jq)"
    )
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
        check_agree(traces[:2], options.exchanges, jq)

        jobs = ["--jobs", str(options.jobs)] if options.jobs else []
        seconds, cpu, peak = timed(["query", SQL, *map(str, traces), "--csv", *jobs])
        print(
            f"query over the recordings:   {seconds:8.1f} s  cpu {cpu:8.1f} s  "
            f"peak {peak / 2**20:6.1f} MiB"
        )

        cache = folder / "cache"
        for run in ("first", "again"):
            spent, spent_cpu, spent_peak = timed(
                ["query", SQL, *map(str, traces), "--csv", "--cache", str(cache), *jobs]
            )
            print(
                f"{'query --cache, ' + run + ':':29}{spent:8.1f} s  cpu {spent_cpu:8.1f} s  "
                f"peak {spent_peak / 2**20:6.1f} MiB"
            )

        fast = 0.0
        if not options.no_parquet:
            # What a CI does once per run (export --format parquet), here in one process so
            # the fixture does not pay a thousand interpreter starts.
            started = time.monotonic()
            for path in traces:
                with open_flows(str(path)) as trace:
                    write_parquet(trace, str(path.with_suffix(".parquet")))
            print(f"export to Parquet, once:     {time.monotonic() - started:8.1f} s (in-process)")
            parquets = [str(path.with_suffix(".parquet")) for path in traces]
            fast, fast_cpu, fast_peak = timed(["query", SQL, *parquets, "--csv"])
            print(
                f"query over the Parquet files:{fast:8.1f} s  cpu {fast_cpu:8.1f} s  "
                f"peak {fast_peak / 2**20:6.1f} MiB"
            )

        sample = traces if options.loop_sample <= 0 else traces[: options.loop_sample]
        before = _children_cpu()
        started = time.monotonic()
        loop_over_show(sample, jq)
        scale = len(traces) / len(sample)
        looped = (time.monotonic() - started) * scale
        loop_cpu = (_children_cpu() - before) * scale
        scaled = "" if len(sample) == len(traces) else f" (scaled from {len(sample)} traces)"
        print(f"loop over show --json | jq:  {looped:8.1f} s  cpu {loop_cpu:8.1f} s{scaled}")
        ratios = f"ratio, recordings: {looped / seconds:.1f}x (cpu {loop_cpu / cpu:.1f}x)"
        if fast:
            ratios += f"   Parquet: {looped / fast:.1f}x"
        print(ratios)
        print(f"load average {_load()} at the end")


if __name__ == "__main__":
    main()
