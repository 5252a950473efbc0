"""``golem-proxy call`` on a large answer: seconds and peak RSS of the CLI process, with
``--raw`` (receive and classify only) and pretty-printed, stdout to /dev/null.

    ./dev bench bench_call [--objects 200000] [--rounds 2]

A GOLEM server on 127.0.0.1 answers every request with a list of ``{"i": N, "ok": true}``.
Peak RSS is the child's own (``wait4``), so nothing else on the machine counts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from processes import ROOT

from golem_proxy.testing.answering_server import answering


@contextmanager
def serving(result: list[dict[str, object]], connections: int) -> Iterator[str]:
    """A server answering ``connections`` requests with ``result``; yields ``HOST:PORT``."""

    def answer(request_id: object) -> bytes:
        return json.dumps({"id": request_id, "result": result, "error": None}).encode()

    with answering(answer, connections, timeout=120) as target:
        yield target


def measure(args: list[str]) -> tuple[float, int]:
    """Seconds and peak RSS (bytes) of ``golem-proxy ARGS``, stdout to /dev/null."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.monotonic()
    with open(os.devnull, "wb") as sink:
        child = subprocess.Popen(
            [sys.executable, "-m", "golem_proxy", *args], cwd=ROOT, env=env, stdout=sink
        )
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"golem-proxy {' '.join(args)} exited {child.returncode}")
    return time.monotonic() - started, usage.ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args()
    result: list[dict[str, object]] = [{"i": i, "ok": True} for i in range(options.objects)]
    size = len(json.dumps({"id": "x", "result": result, "error": None}))
    print(f"answer: {options.objects:,} objects, {size / 1e6:.1f} MB")
    with serving(result, 2 * options.rounds) as target:
        call = ["call", "ping", "--target", target, "--timeout", "120"]
        for _ in range(options.rounds):
            for label, extra in (("--raw", ["--raw"]), ("pretty", [])):
                seconds, peak = measure(call + extra)
                print(f"{label:7} {seconds:6.2f} s  peak {peak / 2**20:6.1f} MiB")


if __name__ == "__main__":
    main()
