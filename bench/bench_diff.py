"""Diff benchmark: the time `golem-proxy diff` takes to align and compare two traces, by
length and shape of their method sequences.

    python bench/bench_diff.py [--exchanges 1000 10000 50000] [--shapes identical tenth]
                               [--timeout 600]

Shapes (A against B, one route):
  identical  one method throughout, the file against itself (`diff X X`)
  insertion  one method throughout; B has one exchange of another method in the middle
  tenth      one method throughout in A; in B every tenth exchange is another method
  random     each exchange one of 8 methods at random, A and B drawn independently

"unpaired" counts the exchanges only one trace has once aligned (for "tenth", B's other
methods and as many of A's exchanges). Each case runs in a process of its own, stopped after
--timeout seconds (shown as "> N s"), so a quadratic alignment cannot hold the table. The
traces are written in RecordingWriter's line layout (`bench_replay.write_trace`, checked
against the reference reader).
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_replay import check_layout, write_trace  # noqa: E402

from golem_proxy.replay.diffing import Comparator  # noqa: E402
from golem_proxy.replay.index import load_exchanges  # noqa: E402
from golem_proxy.replay.tracediff import diff_traces  # noqa: E402

SHAPES = ("identical", "insertion", "tenth", "random")
RUN = "scene.get_document_info"
OTHER = "ping"
RANDOM_METHODS = [
    "ping",
    "scene.get_document_info",
    "scene.list_objects",
    "scene.list_layers",
    "scene.create_layer",
    "geometry.create_box",
    "geometry.create_sphere",
    "operations.boolean_union",
]


def methods_of(shape: str, exchanges: int) -> tuple[list[str], list[str]]:
    """A's and B's method sequences (B the same list as A for ``identical``)."""
    a = [RUN] * exchanges
    if shape == "identical":
        return a, a
    if shape == "insertion":
        return a, [*a[: exchanges // 2], OTHER, *a[exchanges // 2 :]]
    if shape == "tenth":
        return a, [OTHER if n % 10 == 9 else RUN for n in range(exchanges)]
    rng = random.Random(exchanges)
    return (
        [rng.choice(RANDOM_METHODS) for _ in range(exchanges)],
        [rng.choice(RANDOM_METHODS) for _ in range(exchanges)],
    )


def run_case(a_path: str, b_path: str) -> dict[str, object]:
    """Load both traces and diff them; the times of each and what the diff found."""
    started = time.perf_counter()
    a, b = load_exchanges(a_path), load_exchanges(b_path)
    loaded = time.perf_counter()
    diff = diff_traces(a, b, Comparator())
    done = time.perf_counter()
    a.close()
    b.close()
    return {
        "load": loaded - started,
        "diff": done - loaded,
        "aligned": "in windows" if diff.windowed else "whole",
        "unpaired": sum(pair.a is None or pair.b is None for pair in diff.pairs),
    }


def timed_case(a_path: Path, b_path: Path, timeout: float) -> dict[str, object]:
    command = [sys.executable, __file__, "--case", str(a_path), str(b_path)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"load": None, "diff": None, "aligned": "-", "unpaired": None}
    if done.returncode != 0:
        raise SystemExit(f"bench_diff: {a_path.name} against {b_path.name} failed:\n{done.stderr}")
    result: dict[str, object] = json.loads(done.stdout)
    return result


def seconds(value: object, timeout: float) -> str:
    return f"> {timeout:.0f}" if value is None else f"{value:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, nargs="+", default=[1000, 10_000, 50_000])
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--case", nargs=2, metavar=("A", "B"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(*args.case)))
        return 0
    print("exchanges  shape      aligned     unpaired  load s  diff s")
    with tempfile.TemporaryDirectory(prefix="bench-diff-") as tmp:
        workdir = Path(tmp)
        check_layout(workdir)
        for exchanges in args.exchanges:
            for shape in args.shapes:
                a_methods, b_methods = methods_of(shape, exchanges)
                a_path, b_path = workdir / "a.jsonl", workdir / "b.jsonl"
                write_trace(a_path, len(a_methods), methods=a_methods)
                if b_methods is a_methods:
                    b_path = a_path
                else:
                    write_trace(b_path, len(b_methods), methods=b_methods)
                case = timed_case(a_path, b_path, args.timeout)
                unpaired = "-" if case["unpaired"] is None else f"{case['unpaired']:,}"
                print(
                    f"{exchanges:>9,}  {shape:<9}  {case['aligned']!s:<10}  {unpaired:>8}  "
                    f"{seconds(case['load'], args.timeout):>6}  "
                    f"{seconds(case['diff'], args.timeout)}",
                    flush=True,
                )
    print(f"(load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
