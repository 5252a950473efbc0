"""Proxy benchmark: the same upstream reached directly, through golem-proxy (decoding, pairing
and recording on), through a minimal trio byte relay and through socat — configurations
interleaved in one run, medians of several rounds.

    python bench/bench_proxy.py [--rounds 5] [--quick]

Measures sequential round trips of small requests (the GOLEM client's pattern), 16 MiB
responses (a blob of one letter, and base64 text as a viewport capture sends), pipelined tiny
frames, and golem-proxy's memory for one 64 MiB frame.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
HEADER = struct.Struct("!I")
PEERS = str(ROOT / "bench" / "bench_peers.py")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Config:
    name: str
    port: int
    process: Optional[subprocess.Popen[bytes]] = None


def _wait_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def start_process(command: list[str], port: int) -> subprocess.Popen[bytes]:
    """Start ``command`` and wait until it listens on ``port`` (killed if it never does)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT
    )
    try:
        _wait_port(port, process)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process


def proxy_command(port: int, upstream: int, record: str) -> list[str]:
    """golem-proxy with everything on (decoding, pairing, recording), log quiet."""
    route = f"main@127.0.0.1:{port}=127.0.0.1:{upstream}"
    return [sys.executable, "-m", "golem_proxy", "proxy", "--quiet", "--route", route,
            "--record", record, "--overwrite"]  # fmt: skip


@contextmanager
def configurations(record_dir: str) -> Iterator[list[Config]]:
    up = free_port()
    processes = [start_process([sys.executable, PEERS, "upstream", str(up)], up)]
    configs = [Config("direct", up)]
    try:
        port = free_port()
        processes.append(
            start_process(proxy_command(port, up, os.path.join(record_dir, "bench.jsonl")), port)
        )
        configs.append(Config("golem-proxy", port, processes[-1]))
        port = free_port()
        processes.append(start_process([sys.executable, PEERS, "relay", str(port), str(up)], port))
        configs.append(Config("minimal trio relay", port, processes[-1]))
        if shutil.which("socat"):
            port = free_port()
            socat = [
                "socat",
                f"TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork",
                f"TCP:127.0.0.1:{up}",
            ]
            processes.append(start_process(socat, port))
            configs.append(Config("socat", port, processes[-1]))
        yield configs
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settle(config: Config, limit: float = 60.0) -> None:
    """Wait until the configuration's process is idle (its tap has caught up after the last
    burst), so each measurement sees the proxy in its steady state."""
    if config.process is None:
        return
    deadline = time.monotonic() + limit
    last = _cpu_seconds(config.process.pid)
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = _cpu_seconds(config.process.pid)
        if now - last < 0.01:
            return
        last = now


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _read_frame(sock: socket.socket, buffer: bytearray) -> bytes:
    while True:
        if len(buffer) >= 4:
            (length,) = HEADER.unpack_from(buffer, 0)
            if len(buffer) >= 4 + length:
                payload = bytes(buffer[4 : 4 + length])
                del buffer[: 4 + length]
                return payload
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("closed")
        buffer += chunk


def _frame(obj: object) -> bytes:
    payload = json.dumps(obj, ensure_ascii=False).encode()
    return HEADER.pack(len(payload)) + payload


def round_trips(port: int, count: int) -> float:
    """Median seconds per sequential round trip of a ~200-byte request."""
    request = {
        "id": "550e8400-e29b-41d4-a716-446655440000",
        "method": "creation.create_box",
        "params": {"corner_x": 0.0, "corner_y": 0.0, "corner_z": 0.0, "width": 100.0},
    }
    data = _frame(request)
    times = []
    buffer = bytearray()
    with _connect(port) as sock:
        for _ in range(count):
            start = time.perf_counter()
            sock.sendall(data)
            _read_frame(sock, buffer)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def big_responses(port: int, size: int, count: int, *, base64: bool = False) -> float:
    """MB/s receiving ``count`` responses of ``size`` bytes (a blob of ``x``, or of base64)."""
    buffer = bytearray()
    params = {"size": size, "base64": base64}
    with _connect(port) as sock:
        start = time.perf_counter()
        for number in range(count):
            sock.sendall(_frame({"id": number, "method": "big", "params": params}))
            _read_frame(sock, buffer)
        elapsed = time.perf_counter() - start
    return size * count / elapsed / 1e6


def pipelined(port: int, count: int) -> float:
    """Frames/s for ``count`` tiny requests sent back to back, with their responses."""
    frames = b"".join(_frame({"id": n, "method": "ping"}) for n in range(count))
    with _connect(port) as sock:
        start = time.perf_counter()
        sender = threading.Thread(target=sock.sendall, args=(frames,))
        sender.start()
        buffer = bytearray()
        for _ in range(count):
            _read_frame(sock, buffer)
        elapsed = time.perf_counter() - start
        sender.join()
    return count / elapsed


def _rss(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def proxy_memory(record_dir: str, size: int) -> tuple[int, int, int]:
    """(baseline RSS, peak RSS, RSS after close) of a fresh golem-proxy carrying one frame."""
    up = free_port()
    upstream = start_process([sys.executable, PEERS, "upstream", str(up)], up)
    port = free_port()
    proxy = start_process(proxy_command(port, up, os.path.join(record_dir, "memory.jsonl")), port)
    try:
        time.sleep(0.5)
        baseline = _rss(proxy.pid, "VmRSS")
        big_responses(port, size, 1)
        time.sleep(1.0)  # the tap and the recorder finish after the bytes went through
        peak = _rss(proxy.pid, "VmHWM")
        after = _rss(proxy.pid, "VmRSS")
        return baseline, peak, after
    finally:
        for process in (proxy, upstream):
            process.terminate()
            process.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    trips = 300 if args.quick else 2000
    big = 16 * 1024 * 1024
    big_count = 2 if args.quick else 6
    tiny = 10_000 if args.quick else 50_000
    console = Console()
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as record_dir, configurations(record_dir) as configs:
        for name in (c.name for c in configs):
            results[name] = {"rtt": [], "big": [], "big64": [], "tiny": []}
        for _ in range(rounds):
            for config in configs:  # interleaved, so drift hits every configuration alike
                settle(config)
                results[config.name]["rtt"].append(round_trips(config.port, trips))
                settle(config)
                results[config.name]["big"].append(big_responses(config.port, big, big_count))
                settle(config)
                base64 = big_responses(config.port, big, big_count, base64=True)
                results[config.name]["big64"].append(base64)
                settle(config)
                results[config.name]["tiny"].append(pipelined(config.port, tiny))
        memory = proxy_memory(record_dir, 64 * 1024 * 1024)
    med = {name: {k: statistics.median(v) for k, v in r.items()} for name, r in results.items()}
    direct = med["direct"]["rtt"]
    relay = med["minimal trio relay"]
    relay_added = relay["rtt"] - direct

    table = Table(title=f"golem-proxy vs relays, medians of {rounds} interleaved rounds")
    columns = ("configuration", "round trip", "added", "16 MiB responses", "16 MiB base64",
               "pipelined tiny")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="right" if column != "configuration" else "left")
    for name, values in med.items():
        added = values["rtt"] - direct
        table.add_row(
            name,
            f"{values['rtt'] * 1e6:.0f} µs",
            "-" if name == "direct" else f"{added * 1e6:+.0f} µs",
            f"{values['big']:.0f} MB/s",
            f"{values['big64']:.0f} MB/s",
            f"{values['tiny']:,.0f} frames/s",
        )
    console.print(table)

    ours = med["golem-proxy"]
    targets = Table(title="golem-proxy against the minimal trio relay")
    for column in ("measure", "ratio", "target"):
        targets.add_column(column)
    added_ratio = (ours["rtt"] - direct) / relay_added if relay_added > 0 else float("nan")
    rows = [
        ("added latency", added_ratio, "≤ 0.80x", added_ratio <= 0.8),
        (
            "16 MiB responses MB/s",
            ours["big"] / relay["big"],
            "≥ 1.00x",
            ours["big"] >= relay["big"],
        ),
        (
            "16 MiB base64 responses MB/s",
            ours["big64"] / relay["big64"],
            "≥ 1.00x",
            ours["big64"] >= relay["big64"],
        ),
        (
            "pipelined tiny frames/s",
            ours["tiny"] / relay["tiny"],
            "≥ 0.85x",
            ours["tiny"] >= 0.85 * relay["tiny"],
        ),
    ]
    baseline, peak, after = memory
    frame = 64 * 1024 * 1024
    rows.append(
        (
            "peak RSS growth / 64 MiB frame",
            (peak - baseline) / frame,
            "≤ 3.00x",
            peak - baseline <= 3 * frame,
        )
    )
    for label, ratio, target, ok in rows:
        targets.add_row(label, f"{ratio:.2f}x", f"{target} {'ok' if ok else 'MISSED'}")
    console.print(targets)
    console.print(
        f"golem-proxy RSS: baseline {baseline / 2**20:.0f} MiB, peak {peak / 2**20:.0f} MiB, "
        f"after the connection closed {after / 2**20:.0f} MiB"
    )


if __name__ == "__main__":
    main()
