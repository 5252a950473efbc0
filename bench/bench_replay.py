"""Replay benchmark: the replay server's round trips per second next to the headless plugin's,
and the time and peak memory to index a large generated trace.

    python bench/bench_replay.py [--exchanges 1000000] [--round-trips 3000] [--rounds 5]

The large trace is written directly in RecordingWriter's line layout (writing it through the
event classes would take minutes); the first exchanges are checked against the reference
reader so the layout cannot drift unnoticed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_proxy import PEERS  # noqa: E402
from processes import free_port, start_process  # noqa: E402

from golem_proxy.recording.format import Header, RouteInfo, encode_header, read_recording  # noqa: E402
from golem_proxy.replay.index import ReplayIndex, load_exchanges  # noqa: E402
from golem_proxy.replay.matching import Keyer, MatchMode, canonical_params  # noqa: E402
from golem_proxy.testing.client import GolemClient  # noqa: E402
from golem_proxy.testing.plugin_process import PluginProcess  # noqa: E402

READY = re.compile(r"main=(\S+):(\d+)")
LOOKUPS = 200_000
"""Exchanges keyed and taken in order after the load (enough for a steady rate)."""


def write_trace(
    path: Path,
    exchanges: int,
    method: str = "geometry.create_box",
    methods: Optional[Sequence[str]] = None,
) -> None:
    """``exchanges`` requests with distinct params and their answers, on one connection;
    each of ``method``, or of ``methods[n]`` for the n-th when given."""
    header = Header.new("golem", [RouteInfo("main", "127.0.0.1:19876", "127.0.0.1:9876")])
    with open(path, "wb") as out:
        out.write(encode_header(header))
        out.write(
            b'{"seq":1,"t":0.0,"kind":"open","conn":1,"route":"main",'
            b'"client":"127.0.0.1:50000","upstream":"127.0.0.1:9876"}\n'
        )
        chunk: list[bytes] = []
        seq = 1
        for n in range(exchanges):
            if methods is not None:
                method = methods[n]
            rid = str(uuid.UUID(int=n + 1, version=4))
            guid = str(uuid.UUID(int=(n + 1) << 64, version=4))
            params = (
                f'{{"corner": [{n}.0, 0.0, 0.0], "width": 40.0, "depth": 10.0, "height": 30.0}}'
                if method == "geometry.create_box"
                else "{}"
            )
            request = f'{{"id": "{rid}", "method": "{method}", "params": {params}}}'

            response = f'{{"id": "{rid}", "result": {{"guid": "{guid}"}}, "error": null}}'
            t = n * 0.002
            chunk.append(
                f'{{"seq":{seq + 1},"t":{t + 0.001:.6f},"kind":"frame","conn":1,"route":"main",'
                f'"dir":"c2s","n":{n},"size":{len(request) + 4},"type":"request","id":"{rid}",'
                f'"method":"{method}","expects_answer":true,"msg":{request}}}\n'
                f'{{"seq":{seq + 2},"t":{t + 0.002:.6f},"kind":"frame","conn":1,"route":"main",'
                f'"dir":"s2c","n":{n},"size":{len(response) + 4},"type":"response",'
                f'"id":"{rid}","answers":{n},"msg":{response}}}\n'
                f'{{"seq":{seq + 3},"t":{t + 0.002:.6f},"kind":"exchange","conn":1,'
                f'"route":"main","req":{n},"resp":{n},"method":"{method}","status":"ok",'
                f'"latency":0.001,"outcome":"ok"}}\n'.encode()
            )
            seq += 3
            if len(chunk) >= 10000:
                out.write(b"".join(chunk))
                chunk.clear()
        out.write(b"".join(chunk))


def check_layout(path: Path) -> None:
    """The generated lines read back through the reference reader as the same exchanges."""
    sample = Path(tempfile.mkdtemp()) / "sample.jsonl"
    write_trace(sample, 50)
    fast = load_exchanges(str(sample)).exchanges
    reference = read_recording(str(sample)).exchanges()
    assert [(e.request, e.response) for e in fast] == [
        (e.request.payload, e.response.payload) for e in reference
    ], "generated layout differs from RecordingWriter's"


def bench_index(path: Path) -> list[tuple[str, str]]:
    gc.collect()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    trace = load_exchanges(str(path))
    loaded = time.perf_counter()
    index = ReplayIndex(trace, Keyer(MatchMode.METHOD_PARAMS))
    built = time.perf_counter()
    # Key exchanges in order, as a session that asks for them in recorded order would.
    for exchange in trace.exchanges[:LOOKUPS]:
        method, params = canonical_params(exchange.request)
        assert method is not None
        assert index.take("main", method, index.key("main", method, params)) is exchange
    keyed = time.perf_counter()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    count = len(trace.exchanges)
    trace.close()
    return [
        ("exchanges indexed", f"{count:,}"),
        (
            "load + index build",
            f"{built - started:.2f} s (load {loaded - started:.2f} s; target < 10 s)",
        ),
        (
            f"key + take the first {min(count, LOOKUPS):,}",
            f"{keyed - built:.2f} s ({min(count, LOOKUPS) / (keyed - built):,.0f} lookups/s)",
        ),
        (
            "peak RSS growth",
            f"{(rss_after - rss_before) / 1024:,.0f} MiB "
            f"(file {path.stat().st_size / 2**20:,.0f} MiB, memory-mapped)",
        ),
    ]


def round_trips(host: str, port: int, count: int, method: str) -> float:
    with GolemClient(host, port) as client:
        started = time.perf_counter()
        for _ in range(count):
            client.send_command(method, {})
        return count / (time.perf_counter() - started)


def _start_replay(trace: Path) -> tuple[subprocess.Popen[str], tuple[str, int]]:
    command = [sys.executable, "-m", "golem_proxy", "replay", str(trace), "--reuse",
               "--listen", "127.0.0.1:0", "--gh-listen", "127.0.0.1:0"]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT
    )
    assert process.stdout is not None
    match = READY.search(process.stdout.readline())
    if match is None:
        process.kill()
        raise RuntimeError("replay did not start")
    return process, (match[1], int(match[2]))


def bench_round_trips(count: int, rounds: int, workdir: Path) -> list[tuple[str, str]]:
    """Round trips/s of scene.list_layers from the headless plugin (direct, and through the
    minimal trio relay) and from the replay server, interleaved, medians of ``rounds``."""
    trace = workdir / "layers.jsonl"
    write_trace(trace, 1, "scene.list_layers")
    processes: list[subprocess.Popen[Any]] = []
    rates: dict[str, list[float]] = {}
    with PluginProcess(seed=1) as plugin:
        try:
            replay, replay_at = _start_replay(trace)
            processes.append(replay)
            port = free_port()
            relay = [sys.executable, PEERS, "relay", str(port), str(plugin.main.port)]
            processes.append(start_process(relay, port))
            relay_at = ("127.0.0.1", port)
            targets = {
                "headless plugin": (plugin.main.host, plugin.main.port),
                "headless plugin through the minimal trio relay": relay_at,
                "replay server (--reuse)": replay_at,
            }
            for _ in range(rounds):
                for name, (host, port) in targets.items():
                    rate = round_trips(host, port, count, "scene.list_layers")
                    rates.setdefault(name, []).append(rate)
        finally:
            for process in processes:
                process.terminate()
                process.wait(10)
    medians = {name: statistics.median(values) for name, values in rates.items()}
    rows = [
        (f"{name}, scene.list_layers", f"{rate:,.0f} round trips/s")
        for name, rate in medians.items()
    ]
    ours = medians["replay server (--reuse)"]
    rows.append(
        (
            "replay server / headless plugin",
            f"{ours / medians['headless plugin']:.2f}x (target ≥ 1.00x)",
        )
    )
    rows.append(
        (
            "replay server / plugin through the relay",
            f"{ours / medians['headless plugin through the minimal trio relay']:.2f}x",
        )
    )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=1_000_000)
    parser.add_argument("--round-trips", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        workdir = Path(tmp)
        check_layout(workdir)
        big = workdir / "big.jsonl"
        started = time.perf_counter()
        write_trace(big, args.exchanges)
        rows = [("generate trace", f"{time.perf_counter() - started:.1f} s")]
        rows += bench_index(big)
        big.unlink()
        rows += bench_round_trips(args.round_trips, args.rounds, workdir)
    if args.json:
        print(json.dumps(dict(rows), indent=2))
        return 0
    width = max(len(name) for name, _ in rows)
    print(f"{'measure'.ljust(width)}  value")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")
    print(f"(load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
