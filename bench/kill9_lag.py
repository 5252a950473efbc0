"""How far the recording trails the wire when the proxy is killed: 8 clients doing sequential
calls through ``proxy --record``, ``kill -9`` at a random moment, 10 runs (issue 25).

    python bench/kill9_lag.py [--runs 10] [--clients 8]
                              [--observer in-process|child-process|spool] [--json FILE]

For each run: the round trips the clients completed, the exchanges the recording holds, and the
difference in seconds of that run's rate (what a kill lost). With ``--observer child-process``
the observing process is killed at the same instant as the forwarding one. Every recording must
also be readable, with no hole and no broken exchange (the same checks as
tests/robustness/test_crash.py).

``--observer spool`` runs the proxy with ``--observer child-process --observer-spool``: after
each kill, ``golem-proxy recover`` is run on the recording as a user runs it (the real command,
in a process of its own), and each row has the recording twice, as the kill left it and as
recover left it (its exit status, and its line when it did not replace the recording), each
with its exchanges, what it lacks and that in seconds; the recovered recording is checked as
the other is. A recover that refuses or fails says so in its row. Each run's spool is removed,
its bytes too (on a memory file system, through the link beside the recording).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.robustness.crash import crash_runs  # noqa: E402

_OBSERVERS = {
    "in-process": ("--observer", "in-process"),
    "child-process": ("--observer", "child-process"),
    "spool": ("--observer", "child-process", "--observer-spool"),
}


def _share(done: int, recorded: Optional[int]) -> str:
    if recorded is None:
        return "—"
    return f"{(done - recorded) / done:.1%}" if done else f"{0:.1%}"


def _lag(missing_s: Optional[float]) -> str:
    return "—" if missing_s is None else f"{missing_s * 1000:.0f}ms"


def _count(recorded: Optional[int]) -> str:
    return "unreadable" if recorded is None else f"{recorded:,}"


def _recover_word(recovered: dict[str, Any]) -> str:
    """How recover ended: ``replaced`` when it rebuilt the recording in place, else its exit
    status and its line (a refusal, a failure, a copy left beside the recording)."""
    if recovered["status"] == 0 and ": recovered, " in recovered["said"]:
        return "replaced"
    return f"exit {recovered['status']}: {recovered['said']}"


def _print_rows(found: dict[str, Any], spool: bool) -> None:
    head = f"{'killed after':>12} {'round trips':>12} {'recorded':>10} {'missing':>8} {'lag':>8}"
    if spool:
        print(f"{'':>25} {'— at the kill —':^28}  {'— after recover —':^28}")
        head += f"  {'recorded':>10} {'missing':>8} {'lag':>8}  recover"
    print(head)
    for run in found["per_run"]:
        done, recorded = run["client_round_trips"], run["recorded_exchanges"]
        line = (
            f"{run['killed_after_s']:>11.2f}s {done:>12,} {_count(recorded):>10} "
            f"{_share(done, recorded):>8} {_lag(run['missing_s']):>8}"
        )
        if spool:
            recovered = run["recovered"]
            again = recovered.get("recorded_exchanges")
            if recovered["status"] == 0:
                line += (
                    f"  {_count(again):>10} {_share(done, again):>8} "
                    f"{_lag(recovered.get('missing_s')):>8}"
                )
            else:
                line += f"  {'—':>10} {'—':>8} {'—':>8}"
            line += f"  {_recover_word(recovered)}"
        print(line)


def _median_worst(lags: list[float]) -> str:
    lags = sorted(lags)
    return f"median {lags[len(lags) // 2] * 1000:.0f} ms, worst {lags[-1] * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--json", metavar="FILE", help="also write every figure here")
    parser.add_argument("--observer", choices=tuple(_OBSERVERS), default="in-process")
    args = parser.parse_args()
    spool = args.observer == "spool"
    with tempfile.TemporaryDirectory() as tmp:
        found = crash_runs(
            Path(tmp),
            runs=args.runs,
            clients=args.clients,
            seed=args.seed,
            kill_after=(2.0, 4.0),
            proxy_args=_OBSERVERS[args.observer],
            recover=spool,
        )
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"--observer {args.observer}: {args.clients} clients, sequential calls, kill -9 "
          f"between 2 and 4 s; {args.runs} runs; load {load}")  # fmt: skip
    _print_rows(found, spool)
    lags = [run["missing_s"] for run in found["per_run"] if run["missing_s"] is not None]
    if lags:
        print(f"lag{' at the kill' if spool else ''}: {_median_worst(lags)}")
    problems = found["unreadable"] + found["broken_exchanges"] + found["holes"]
    print(f"unreadable {found['unreadable']}, broken exchanges {found['broken_exchanges']}, "
          f"holes {found['holes']}")  # fmt: skip
    if spool:
        recovered = [run["recovered"] for run in found["per_run"]]
        lags = [r["missing_s"] for r in recovered if r.get("missing_s") is not None]
        if lags:
            print(f"lag after recover: {_median_worst(lags)}")
        after = found["after_recover"]
        print(f"after recover: failed {after['failed']}, unreadable {after['unreadable']}, "
              f"broken exchanges {after['broken_exchanges']}, holes {after['holes']}")  # fmt: skip
        for problem in after["first_problems"]:
            print(f"  {problem}")
        problems += after["failed"] + after["unreadable"] + after["broken_exchanges"]
        problems += after["holes"]
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=1))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
