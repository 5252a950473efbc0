"""The stdio hop of ``golem-proxy mcp``: what it adds to one MCP request/response round trip.

    python bench/bench_stdio.py [--calls 2000] [--rounds 3] [--json FILE]

A JSON-RPC echo server (one line in, one answer line out, the shape of an MCP exchange) is
driven one call at a time, the MCP client's pattern, four ways in interleaved rounds:
directly, behind a plain pipe relay (a process that copies bytes both ways with two threads
and nothing else), and behind ``golem-proxy mcp --record`` (decoding, pairing, attribution
and recording on) observing in its own process and in a process of its own (``--observer
child-process``). It prints the median round trip of each, the latency each hop adds over
the direct run, and the ratio of golem-proxy's round trips to the plain relay's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ECHO = (
    "import sys, json\n"
    "for line in sys.stdin.buffer:\n"
    "    ident = json.loads(line)['id']\n"
    '    sys.stdout.buffer.write(b\'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}\\n\''
    " % ident)\n"
    "    sys.stdout.buffer.flush()\n"
)
SERVER = [sys.executable, "-c", ECHO]


def plain_relay(command: list[str]) -> int:
    """Run ``command`` with its stdio copied to ours by two threads: the least a relay does."""
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    sink, source = child.stdin.fileno(), child.stdout.fileno()

    def copy(read_fd: int, write_fd: int, close_after: bool) -> None:
        while chunk := os.read(read_fd, 65536):
            view = memoryview(chunk)
            while view:
                view = view[os.write(write_fd, view) :]
        if close_after:
            os.close(write_fd)

    inbound = threading.Thread(target=copy, args=(0, sink, True), daemon=True)
    inbound.start()
    copy(source, 1, False)
    return child.wait()


def round_trips(command: list[str], calls: int, env: dict[str, str]) -> list[float]:
    """Seconds of each of ``calls`` sequential request/response round trips."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    assert process.stdin is not None and process.stdout is not None
    times: list[float] = []
    try:
        for ident in range(calls + 20):
            request = {"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {"n": ident}}}  # fmt: skip
            line = json.dumps(request).encode() + b"\n"
            started = time.perf_counter()
            process.stdin.write(line)
            process.stdin.flush()
            answer = process.stdout.readline()
            elapsed = time.perf_counter() - started
            if not answer:
                raise RuntimeError(f"{command[:4]}: no answer")
            if ident >= 20:  # the first calls warm the interpreter's caches up
                times.append(elapsed)
    finally:
        process.stdin.close()
        process.wait(30)
        process.stdout.close()
    return times


WRAPPED = {"golem-proxy mcp": "in-process", "golem-proxy mcp child": "child-process"}
"""The wrapper's runs by name, and where each observes (``--observer``)."""


def relay_hops(record: str) -> dict[str, list[str]]:
    """The commands compared, by name: the server alone, behind a plain relay, behind us."""
    hops = {"direct": SERVER, "plain pipe relay": [sys.executable, __file__, "--relay", *SERVER]}
    for name, observer in WRAPPED.items():
        hops[name] = [
            sys.executable, "-m", "golem_proxy", "mcp", "--quiet", "--observer", observer,
            "--record", record, "--overwrite", "--", *SERVER,
        ]  # fmt: skip
    return hops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--relay", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.relay is not None:
        raise SystemExit(plain_relay(args.relay))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory() as scratch:
        record = os.path.join(scratch, "bench.jsonl")
        hops = relay_hops(record)
        medians: dict[str, list[float]] = {name: [] for name in hops}
        for _ in range(args.rounds):
            for name, command in hops.items():
                medians[name].append(statistics.median(round_trips(command, args.calls, env)))
    result = {name: statistics.median(values) for name, values in medians.items()}
    direct = result["direct"]
    print(f"{'hop':<20} {'median RTT':>12} {'added':>10}")
    for name, value in result.items():
        print(f"{name:<20} {value * 1e6:>9.1f} µs {(value - direct) * 1e6:>7.1f} µs")
    ratios = {name: result[name] / result["plain pipe relay"] for name in WRAPPED}
    for name, ratio in ratios.items():
        print(f"{name} / plain pipe relay: {ratio:.2f}x the round trip")
    if args.json:
        data = {"median_rtt_s": result, "ratio_vs_plain_relay": ratios, "calls": args.calls}
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")


if __name__ == "__main__":
    main()
