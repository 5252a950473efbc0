"""How far the recording trails the wire when the proxy is killed: 8 clients doing sequential
calls through ``proxy --record``, ``kill -9`` at a random moment, 10 runs (issue 25).

    python bench/kill9_lag.py [--runs 10] [--clients 8] [--observer in-process|child-process]
                              [--json FILE]

For each run: the round trips the clients completed, the exchanges the recording holds, and the
difference in seconds of that run's rate (what a kill lost). With ``--observer child-process``
the observing process is killed at the same instant as the forwarding one. Every recording must
also be readable, with no hole and no broken exchange (the same checks as
tests/robustness/test_crash.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.robustness.crash import crash_runs  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--json", metavar="FILE", help="also write every figure here")
    parser.add_argument("--observer", choices=("in-process", "child-process"), default="in-process")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        found = crash_runs(
            Path(tmp),
            runs=args.runs,
            clients=args.clients,
            seed=args.seed,
            kill_after=(2.0, 4.0),
            proxy_args=("--observer", args.observer),
        )
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"--observer {args.observer}: {args.clients} clients, sequential calls, kill -9 "
          f"between 2 and 4 s; {args.runs} runs; load {load}")  # fmt: skip
    print(f"{'killed after':>12} {'round trips':>12} {'recorded':>9} {'missing':>8} {'lag':>8}")
    for run in found["per_run"]:
        done, recorded = run["client_round_trips"], run["recorded_exchanges"]
        share = (done - recorded) / done if done else 0.0
        print(
            f"{run['killed_after_s']:>11.2f}s {done:>12,} {recorded:>9,} {share:>8.1%} "
            f"{run['missing_s'] * 1000:>6.0f}ms"
        )
    lags = sorted(run["missing_s"] for run in found["per_run"])
    if lags:
        print(f"lag: median {lags[len(lags) // 2] * 1000:.0f} ms, worst {lags[-1] * 1000:.0f} ms")
    problems = found["unreadable"] + found["broken_exchanges"] + found["holes"]
    print(f"unreadable {found['unreadable']}, broken exchanges {found['broken_exchanges']}, "
          f"holes {found['holes']}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=1))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
