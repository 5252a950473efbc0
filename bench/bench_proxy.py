"""Proxy benchmark: one upstream reached directly, through a minimal trio byte relay, socat,
mitmdump (reverse TCP mode) and golem-proxy (decoding, pairing and recording on), all in one
interleaved run; medians of several rounds.

    python bench/bench_proxy.py [--rounds 3] [--quick] [--json FILE]

Measures the round trip of one ~200-byte call at a time (the GOLEM client's pattern; the median
of many, minus the direct median of the same round: the latency a hop adds), 16 MiB responses
one after the other (MB/s), and tiny frames pipelined both ways (frames/s: to the last response
byte, and again counting until the hop's process is idle, which charges an observer that trails
the wire for its catch-up), plus each hop's peak RSS and how much of the traffic golem-proxy's
recording holds. The upstream answers from pre-encoded bytes and the client only counts bytes (see
bench_peers.py), so the direct row shows how much headroom the rig has over what it measures.
A tool that is not installed (socat, mitmdump) gets a "not installed" row, never a failure;
mitmdump is looked up on PATH, then in $MITMDUMP and /tmp/mitm-venv/bin.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from bench_peers import BIG, hello, read_exactly, workload
from processes import ROOT, RssSampler, free_port, settle, start_process, stop
from rich.console import Console
from rich.markup import escape
from rich.table import Table

PEERS = str(ROOT / "bench" / "bench_peers.py")
CHUNK = 1 << 20
RELAY = "minimal trio relay"
MITM = "mitmdump reverse tcp"
OURS = "golem-proxy"


def proxy_command(port: int, upstream: int, record: str) -> list[str]:
    """golem-proxy with everything on (decoding, pairing, recording), log quiet."""
    route = f"main@127.0.0.1:{port}=127.0.0.1:{upstream}"
    return [sys.executable, "-m", "golem_proxy", "proxy", "--quiet", "--route", route,
            "--record", record, "--overwrite"]  # fmt: skip


def find_mitmdump() -> Optional[str]:
    for candidate in (
        shutil.which("mitmdump"),
        os.environ.get("MITMDUMP"),
        "/tmp/mitm-venv/bin/mitmdump",
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def tool_version(command: list[str], prefix: str = "") -> str:
    """The first line of ``command``'s output that starts with ``prefix``, or "?"."""
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    lines = [line for line in out.splitlines() if line.startswith(prefix) and line.strip()]
    return lines[0].strip() if lines else "?"


@dataclass
class Config:
    name: str
    port: int = 0
    process: Optional[subprocess.Popen[bytes]] = None
    missing: str = ""
    """Why this configuration is not measured ("not installed"), or empty."""


@contextmanager
def configurations(record_dir: str) -> Iterator[list[Config]]:
    """Every configuration, started in front of one upstream; stopped on exit."""
    up = free_port()
    processes = [start_process([sys.executable, PEERS, "upstream", str(up)], up)]
    configs = [Config("direct", up)]

    def add(name: str, command: list[str], port: int, *, required: bool = False) -> None:
        try:
            processes.append(start_process(command, port))
        except (OSError, RuntimeError) as exc:
            if required:
                raise
            configs.append(Config(name, missing=f"failed to start: {exc}"))
            return
        configs.append(Config(name, port, processes[-1]))

    try:
        port = free_port()
        add(RELAY, [sys.executable, PEERS, "relay", str(port), str(up)], port, required=True)
        if shutil.which("socat"):
            port = free_port()
            add("socat", ["socat", f"TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork",
                          f"TCP:127.0.0.1:{up},nodelay"], port)  # fmt: skip
        else:
            configs.append(Config("socat", missing="not installed"))
        mitmdump = find_mitmdump()
        if mitmdump:
            port = free_port()
            mode = f"reverse:tcp://127.0.0.1:{up}@127.0.0.1:{port}"
            add(MITM, [mitmdump, "-q", "--mode", mode], port)
        else:
            configs.append(Config(MITM, missing="not installed"))
        port = free_port()
        record = os.path.join(record_dir, "bench.jsonl")
        add(OURS, proxy_command(port, up, record), port, required=True)
        yield configs
    finally:
        for process in processes:
            stop(process)


# --- the three measurements ---------------------------------------------------------------


@contextmanager
def opened(port: int, name: str) -> Iterator[socket.socket]:
    """A connection to ``port`` that has announced workload ``name`` and had it accepted."""
    request, answer = hello(name)
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(request)
        if read_exactly(sock, len(answer)) != answer:
            raise RuntimeError(f"port {port}: wrong answer to the workload request")
        yield sock


def _drain(sock: socket.socket, total: int, buffer: bytearray) -> None:
    """Receive exactly ``total`` bytes, discarding them (only their count matters)."""
    view = memoryview(buffer)
    while total:
        n = sock.recv_into(view[: min(total, len(buffer))])
        if n == 0:
            raise ConnectionError("closed before the expected bytes arrived")
        total -= n


def round_trips(port: int, count: int) -> float:
    """Median seconds of ``count`` sequential round trips of the ``rtt`` workload."""
    work = workload("rtt")
    size, answer = work.request_size, work.response_size
    buffer = bytearray(answer)
    times = []
    with opened(port, "rtt") as sock:
        for n in range(count + WARM_UP):  # the first ones warm the path up, not counted
            request = work.requests[(n % work.ring) * size : (n % work.ring + 1) * size]
            start = time.perf_counter()
            sock.sendall(request)
            _drain(sock, answer, buffer)
            times.append(time.perf_counter() - start)
    return statistics.median(times[WARM_UP:])


def big_responses(port: int, count: int) -> float:
    """MB/s receiving ``count`` 16 MiB responses, one request at a time."""
    work = workload("big")
    size, answer = work.request_size, work.response_size
    buffer = bytearray(CHUNK)
    with opened(port, "big") as sock:
        start = time.perf_counter()
        for n in range(count):
            sock.sendall(work.requests[(n % work.ring) * size : (n % work.ring + 1) * size])
            _drain(sock, answer, buffer)
        elapsed = time.perf_counter() - start
    return answer * count / elapsed / 1e6


def _send_requests(sock: socket.socket, requests: bytes, total: int) -> None:
    """Send ``total`` bytes of ``requests`` repeated end to end, a megabyte at a time (on a
    thread: a broken connection just ends it, the receiving side reports it)."""
    view = memoryview(requests)
    offset = 0
    while total:
        piece = view[offset : offset + min(total, CHUNK)]
        try:
            sock.sendall(piece)
        except OSError:
            return
        total -= len(piece)
        offset = (offset + len(piece)) % len(view)


def pipelined(port: int, count: int) -> float:
    """Frames/s for ``count`` tiny requests sent back to back while their responses stream in."""
    work = workload("tiny")
    buffer = bytearray(CHUNK)
    with opened(port, "tiny") as sock:
        start = time.perf_counter()
        sender = threading.Thread(
            target=_send_requests, args=(sock, work.requests, count * work.request_size)
        )
        sender.start()
        _drain(sock, count * work.response_size, buffer)  # raises if the hop breaks
        elapsed = time.perf_counter() - start
        sender.join()
    return count / elapsed


EXACT = (("rtt", 50), ("big", 2), ("tiny", 5000))
EXACT_REQUESTS = sum(count + 1 for _, count in EXACT)
WARM_UP = 20


def byte_exact(port: int) -> bool:
    """Whether each workload's responses arrive exactly as the upstream encoded them."""
    for name, count in EXACT:
        work = workload(name)
        with opened(port, name) as sock:
            sender = threading.Thread(
                target=_send_requests, args=(sock, work.requests, count * work.request_size)
            )
            sender.start()
            got = read_exactly(sock, count * work.response_size)
            sender.join()
        if got != work.responses[: count * work.response_size]:
            return False
    return True


# --- the run and its tables ---------------------------------------------------------------


@dataclass
class Series:
    """One configuration's value per round, for each measure."""

    rtt: list[float] = field(default_factory=list)
    added: list[float] = field(default_factory=list)
    big: list[float] = field(default_factory=list)
    tiny: list[float] = field(default_factory=list)
    sustained: list[float] = field(default_factory=list)
    """Pipelined frames/s counting until the process was idle again (its observer done)."""
    catch_up: list[float] = field(default_factory=list)
    """Seconds the process stayed busy after the last pipelined response arrived."""
    exact: Optional[bool] = None
    peak_rss: int = 0
    errors: list[str] = field(default_factory=list)
    """Measurements that failed, and why."""
    requests: int = 0
    """Requests sent through this configuration, all measurements together."""
    recorded: Optional[dict[str, int]] = None
    """Lines of each of RECORDED_KINDS in golem-proxy's recording (None for the others)."""


NAN = float("nan")


def attempt(series: Series, what: str, measure: Callable[..., float], *args: int) -> float:
    """``measure(*args)``, or NaN with the error noted when the hop breaks the connection, stalls
    past the client's 60 s timeout or is gone: one broken hop must not end the whole run."""
    try:
        return float(measure(*args))
    except (OSError, RuntimeError) as exc:  # ConnectionError and socket timeouts included
        series.errors.append(f"{what}: {exc or type(exc).__name__}")
        return NAN


def median(values: Sequence[float]) -> float:
    """The median of the measured values (NaN, a failed measurement, is left out)."""
    valid = [v for v in values if not math.isnan(v)]
    return statistics.median(valid) if valid else NAN


def run(configs: list[Config], rounds: int, trips: int, bigs: int, tiny: int) -> dict[str, Series]:
    live = [c for c in configs if not c.missing]
    results = {c.name: Series() for c in live}
    for config in live:
        series = results[config.name]
        exact = attempt(series, "byte-exact check", byte_exact, config.port)
        series.exact = None if math.isnan(exact) else exact == 1.0
        series.requests += EXACT_REQUESTS
    pids = {c.name: c.process.pid for c in live if c.process is not None}
    with RssSampler(pids) as rss:
        for number in range(rounds):
            # Interleaved, and in a rotated order, so drift and position hit every config alike.
            order = live[number % len(live) :] + live[: number % len(live)]
            for config in order:
                series = results[config.name]
                settle(config.process)
                series.rtt.append(attempt(series, "round trips", round_trips, config.port, trips))
                settle(config.process)
                series.big.append(attempt(series, "16 MiB", big_responses, config.port, bigs))
                settle(config.process)
                series.tiny.append(attempt(series, "pipelined", pipelined, config.port, tiny))
                series.catch_up.append(settle(config.process, limit=600.0))
                series.sustained.append(tiny / (tiny / series.tiny[-1] + series.catch_up[-1]))
                # Each measurement also sends its connection's workload request.
                series.requests += trips + WARM_UP + bigs + tiny + 3
    for name, series in results.items():
        series.added = [t - d for t, d in zip(series.rtt, results["direct"].rtt)]
        series.peak_rss = rss.peak.get(name, 0)
    return results


def _spread(values: Sequence[float]) -> float:
    """Half the range across rounds, relative to the median: the run's noise for one cell."""
    valid = [v for v in values if not math.isnan(v)]
    middle = median(valid)
    return (max(valid) - min(valid)) / 2 / abs(middle) if valid and middle else 0.0


def _cell(values: Sequence[float], scale: float, unit: str, digits: int = 0) -> str:
    middle = median(values)
    if math.isnan(middle):
        return "failed"
    return f"{middle / scale:,.{digits}f}{unit} ±{_spread(values):.0%}"


RECORDED_KINDS = ("exchange", "violation", "unobserved", "gap")
"""What the recording says about how much it observed: exchanges, contract violations, and
stretches it says it could not observe (``unobserved``) or events it missed (``gap``)."""


def count_kinds(
    path: Path, kinds: Sequence[str], block: int = 64 << 20
) -> Optional[dict[str, int]]:
    """How many lines of each kind a recording holds, counted without parsing it (it holds
    gigabytes of base64, which never contains a quoted marker); None if there is no file."""
    markers = {kind: f'"kind":"{kind}"'.encode() for kind in kinds}
    keep = max(len(m) for m in markers.values()) - 1
    counts = dict.fromkeys(kinds, 0)
    tail = b""
    try:
        with open(path, "rb") as recording:
            while chunk := recording.read(block):
                data = tail + chunk
                for kind, marker in markers.items():
                    # A marker may straddle two reads: count it in the read where it ends.
                    counts[kind] += data.count(marker) - tail.count(marker)
                tail = data[-keep:]
    except OSError:
        return None
    return counts


def _observed(series: Series) -> str:
    if series.recorded is None:
        return "-"
    counts = series.recorded
    share = counts["exchange"] / series.requests if series.requests else 0.0
    catch_up = statistics.median(series.catch_up) if series.catch_up else 0.0
    parts = [f"{counts['exchange']:,} / {series.requests:,} ({share:.1%})"]
    labels = {"violation": "violations", "unobserved": "unobserved", "gap": "gaps"}
    parts += [f"{counts[kind]:,} {labels[kind]}" for kind in RECORDED_KINDS[1:] if counts[kind]]
    return "; ".join([*parts, f"+{catch_up:.1f} s"])


def results_table(configs: list[Config], results: dict[str, Series], rounds: int) -> Table:
    table = Table(title=f"golem-proxy and other hops, medians of {rounds} interleaved rounds "
                        "(± half the range across rounds)")  # fmt: skip
    columns = ("configuration", "added p50", "16 MiB responses", "pipelined tiny frames",
               "… until idle", "peak RSS", "byte-exact",
               "exchanges recorded / sent; busy after a pipelined run")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "configuration" else "right")
    for config in configs:
        if config.missing:
            table.add_row(config.name, config.missing, "", "", "", "", "", "")
            continue
        s = results[config.name]
        added_valid = [a for a in s.added if not math.isnan(a)]
        if config.name == "direct":
            added = f"0 (p50 {median(s.rtt) * 1e6:.0f} µs)"
        elif added_valid:
            half = (max(added_valid) - min(added_valid)) / 2
            added = f"{median(added_valid) * 1e6:.0f} µs ±{half * 1e6:.0f}"
        else:
            added = "failed"
        table.add_row(
            config.name,
            added,
            _cell(s.big, 1, " MB/s"),
            _cell(s.tiny, 1e3, "k/s"),
            _cell(s.sustained, 1e3, "k/s", 1),
            f"{s.peak_rss / 2**20:.0f} MiB" if s.peak_rss else "-",
            {True: "yes", False: "NO", None: "?"}[s.exact],
            _observed(s),
        )
    return table


@dataclass
class Target:
    label: str
    ours: list[float]
    theirs: list[float]
    bound: float
    at_most: bool
    """True when the ratio must stay at or under ``bound``, False when at or over it."""

    def ratio(self) -> float:
        theirs = median(self.theirs)
        return median(self.ours) / theirs if theirs else NAN

    def per_round(self) -> list[float]:
        """The ratio in each round where both sides were measured."""
        pairs = zip(self.ours, self.theirs)
        return [a / b for a, b in pairs if b and not (math.isnan(a) or math.isnan(b))]

    def met(self, ratio: float) -> bool:
        return ratio <= self.bound if self.at_most else ratio >= self.bound

    def verdict(self) -> str:
        if math.isnan(self.ratio()):
            return "not measured"
        if self.met(self.ratio()):
            return "met"
        rounds = self.per_round()
        hits = sum(self.met(r) for r in rounds)
        if hits:
            return f"MISSED, within noise ({hits}/{len(rounds)} rounds met it)"
        return f"MISSED, beyond noise (0/{len(rounds)} rounds met it)"


def targets(results: dict[str, Series]) -> list[Target]:
    """Issue 13's targets that this run can check (a missing peer drops its rows)."""
    ours = results.get(OURS)
    if ours is None:
        return []
    rows = []
    relay = results.get(RELAY)
    if relay is not None:
        rows += [
            Target("added p50 vs the relay's", ours.added, relay.added, 0.8, True),
            Target("16 MiB responses vs the relay", ours.big, relay.big, 1.0, False),
            Target("pipelined tiny frames vs the relay", ours.tiny, relay.tiny, 0.85, False),
            Target("… counted until idle", ours.sustained, relay.sustained, 0.85, False),
        ]
    mitm = results.get(MITM)
    if mitm is not None:
        rows.append(Target("added p50 vs mitmdump's", ours.added, mitm.added, 0.3, True))
    return rows


def _times(ratio: float) -> str:
    if math.isnan(ratio):
        return "-"
    return f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.4f}x"


def targets_table(rows: list[Target]) -> Table:
    table = Table(title="golem-proxy's targets (issue 13): ratio of medians, per-round range")
    for column in ("measure", "ratio", "rounds", "target", "verdict"):
        table.add_column(column)
    for row in rows:
        rounds = row.per_round()
        table.add_row(
            row.label,
            _times(row.ratio()),
            f"{_times(min(rounds))} - {_times(max(rounds))}" if rounds else "-",
            f"{'≤' if row.at_most else '≥'} {row.bound:.2f}x",
            row.verdict(),
        )
    return table


def describe_rig(configs: list[Config]) -> str:
    commit = tool_version(["git", "-C", str(ROOT), "describe", "--always", "--dirty"])
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    parts = [f"checkout {commit}", f"{os.cpu_count()} cores (load {load})",
             f"Python {platform.python_version()}"]  # fmt: skip
    if any(c.name == "socat" and not c.missing for c in configs):
        parts.append(tool_version(["socat", "-V"], "socat version").split(" on ")[0])
    mitmdump = find_mitmdump()
    if mitmdump and any(c.name == MITM and not c.missing for c in configs):
        parts.append(tool_version([mitmdump, "--version"]))
    return "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2 rounds of fewer iterations")
    parser.add_argument("--json", metavar="FILE", help="also write every per-round value here")
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    trips = 300 if args.quick else 2000
    bigs = 4 if args.quick else 16
    # golem-proxy's observer may trail the wire: each pipelined run waits until it is idle again
    # (minutes for a million frames today), which bounds how many frames a run can afford.
    tiny = 50_000 if args.quick else 300_000
    console = Console(width=150)
    with tempfile.TemporaryDirectory() as record_dir:
        with configurations(record_dir) as configs:
            console.print(describe_rig(configs))
            results = run(configs, rounds, trips, bigs, tiny)
        if OURS in results:  # once golem-proxy has stopped and closed its recording
            recording = Path(record_dir) / "bench.jsonl"
            results[OURS].recorded = count_kinds(recording, RECORDED_KINDS)
    console.print(
        f"{trips} round trips, {bigs} x {BIG // 2**20} MiB responses and {tiny:,} pipelined "
        f"frames per configuration and round; {OURS} records to a file"
    )
    console.print(results_table(configs, results, rounds))
    console.print(targets_table(targets(results)))
    for name, series in results.items():
        for error, times in Counter(series.errors).items():
            repeated = f" (x{times})" if times > 1 else ""
            console.print(f"[red]{name}[/]: {escape(error)}{repeated}")
    console.print("load average at the end: " + "/".join(f"{x:.1f}" for x in os.getloadavg()))
    if args.json:
        dump = {name: vars(series) for name, series in results.items()}
        Path(args.json).write_text(json.dumps(dump, indent=1))


if __name__ == "__main__":
    main()
