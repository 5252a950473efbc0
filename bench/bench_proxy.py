"""Proxy benchmark: one upstream reached directly, through a minimal trio byte relay, socat,
mitmdump (reverse TCP mode) and golem-proxy (decoding, pairing and recording on; observing in
the forwarding process, and in a child process of its own), all in one interleaved run;
medians of several rounds.

    python bench/bench_proxy.py [--rounds 3] [--quick] [--mode both|full|flood]
                                [--observer both|in-process|child-process]
                                [--baseline DIR] [--json FILE]

Two modes, each with its own processes and recording. *Full observation* is what a user
recording a regression trace does: a sequential GOLEM client (small calls, then 16 MiB
responses) and a modest pipelined run, after which the recording must hold every exchange with
no ``unobserved`` or ``gap`` line. The *flood* pipelines far more noop frames than the observer
can decode, and prints the share it observed.

Each measures the round trip of one ~200-byte call at a time (the GOLEM client's pattern: the
median minus the direct median of the same round, the latency a hop adds; the 99th percentile;
and sequential calls a second), 16 MiB responses one after the other (MB/s), and tiny frames
pipelined both ways (frames/s: to the last response byte, and again counting until the hop's
process is idle, which charges an observer that trails the wire for its catch-up), plus each
hop's peak RSS and what golem-proxy's recording holds, counted from the file. After each
measure the recording is read again: a figure obtained while the observer shed (the file gained
an ``unobserved`` or ``gap`` line) is marked ``*``. Ratios are to the minimal relay's median.
The upstream answers from pre-encoded bytes and the client only counts bytes (see
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
OURS_CHILD = "golem-proxy --observer child-process"
BASELINE = "golem-proxy (baseline)"
RECORDING = {OURS: "bench.jsonl", OURS_CHILD: "child.jsonl", BASELINE: "baseline.jsonl"}
"""Each golem-proxy's recording, in the mode's temporary directory."""
OBSERVERS = {OURS: "in-process", OURS_CHILD: "child-process"}
"""The golem-proxy configurations by where their observer runs (``--observer``)."""


def proxy_command(port: int, upstream: int, record: str, observer: str = "") -> list[str]:
    """golem-proxy with everything on (decoding, pairing, recording), log quiet; ``observer``:
    where it observes (``--observer``; the default when empty)."""
    route = f"main@127.0.0.1:{port}=127.0.0.1:{upstream}"
    chosen = ["--observer", observer] if observer else []
    return [sys.executable, "-m", "golem_proxy", "proxy", "--quiet", "--route", route,
            "--record", record, "--overwrite", *chosen]  # fmt: skip


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
def configurations(
    record_dir: Path, baseline: Optional[Path], ours: Sequence[str] = (OURS,)
) -> Iterator[list[Config]]:
    """Every configuration, started in front of one upstream (each golem-proxy of ``ours``
    recording into ``record_dir``; with ``baseline``, also the golem-proxy of that checkout);
    stopped on exit."""
    up = free_port()
    processes = [start_process([sys.executable, PEERS, "upstream", str(up)], up)]
    configs = [Config("direct", up)]

    def add(
        name: str, command: list[str], port: int, *, required: bool = False, **popen: object
    ) -> None:
        try:
            processes.append(start_process(command, port, **popen))
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
        for name in ours:
            port = free_port()
            record = str(record_dir / RECORDING[name])
            add(name, proxy_command(port, up, record, OBSERVERS[name]), port, required=True)
        if baseline is not None:
            port = free_port()
            command = proxy_command(port, up, str(record_dir / RECORDING[BASELINE]))
            env = dict(os.environ, PYTHONPATH=str(baseline))
            add(BASELINE, command, port, required=True, cwd=baseline, env=env)
        yield configs
    finally:
        for process in processes:
            stop(process)


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


def round_trips(port: int, count: int) -> list[float]:
    """Seconds of each of ``count`` sequential round trips of the ``rtt`` workload (after a
    few that warm the path up and are not counted)."""
    work = workload("rtt")
    size, answer = work.request_size, work.response_size
    buffer = bytearray(answer)
    times = []
    with opened(port, "rtt") as sock:
        for n in range(count + WARM_UP):
            request = work.requests[(n % work.ring) * size : (n % work.ring + 1) * size]
            start = time.perf_counter()
            sock.sendall(request)
            _drain(sock, answer, buffer)
            times.append(time.perf_counter() - start)
    return times[WARM_UP:]


def percentile(values: Sequence[float], share: float) -> float:
    """The value below which ``share`` of ``values`` lie (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


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


@dataclass
class Series:
    """One configuration's value per round, for each measure."""

    rtt: list[float] = field(default_factory=list)
    """Median seconds of a sequential round trip."""
    added: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)
    """The 99th percentile of those round trips, in seconds."""
    per_second: list[float] = field(default_factory=list)
    """Sequential round trips a second (one at a time, as the GOLEM client calls)."""
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
    shed: set[str] = field(default_factory=set)
    """Measures during which the recording gained an ``unobserved`` or ``gap`` line: figures
    obtained while the observer shed work."""


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


def _trips(series: Series, port: int, count: int) -> None:
    try:
        times = round_trips(port, count)
    except (OSError, RuntimeError) as exc:
        series.errors.append(f"round trips: {exc or type(exc).__name__}")
        times = []
    series.rtt.append(statistics.median(times) if times else NAN)
    series.p99.append(percentile(times, 0.99) if times else NAN)
    series.per_second.append(len(times) / sum(times) if times else NAN)


def run(
    configs: list[Config],
    rounds: int,
    trips: int,
    bigs: int,
    tiny: int,
    recordings: dict[str, RecordingTail],
) -> dict[str, Series]:
    """Every measure for every configuration, ``rounds`` times interleaved. ``recordings``
    follows each golem-proxy's recording: a measure after which it holds new ``unobserved``
    or ``gap`` lines is marked as obtained while the observer shed."""
    live = [c for c in configs if not c.missing]
    results = {c.name: Series() for c in live}
    for config in live:
        series = results[config.name]
        exact = attempt(series, "byte-exact check", byte_exact, config.port)
        series.exact = None if math.isnan(exact) else exact == 1.0
        series.requests += EXACT_REQUESTS

    def check_losses(config: Config, measure: str) -> float:
        """Wait until ``config`` is idle; for golem-proxy, note whether ``measure`` shed."""
        busy = settle(config.process, limit=600.0)
        recording = recordings.get(config.name)
        if recording is not None:
            time.sleep(0.2)  # its recorder flushes every 50 to 100 ms once idle
            if recording.new_losses():
                results[config.name].shed.add(measure)
        return busy

    pids = {c.name: c.process.pid for c in live if c.process is not None}
    with RssSampler(pids) as rss:
        for number in range(rounds):
            # Interleaved, and in a rotated order, so drift and position hit every config alike.
            order = live[number % len(live) :] + live[: number % len(live)]
            for config in order:
                series = results[config.name]
                check_losses(config, "before")
                _trips(series, config.port, trips)
                check_losses(config, "rtt")
                series.big.append(attempt(series, "16 MiB", big_responses, config.port, bigs))
                check_losses(config, "big")
                series.tiny.append(attempt(series, "pipelined", pipelined, config.port, tiny))
                series.catch_up.append(check_losses(config, "tiny"))
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


class RecordingTail:
    """Counts the lines of each of ``kinds`` in a recording as it grows, without parsing it (it
    holds gigabytes of base64, which never contains a quoted marker): each `count` reads only
    what was written since the last one."""

    def __init__(self, path: Path, kinds: Sequence[str] = RECORDED_KINDS) -> None:
        self.path = path
        self.markers = {kind: f'"kind":"{kind}"'.encode() for kind in kinds}
        self.counts = dict.fromkeys(kinds, 0)
        self._offset = 0
        self._tail = b""
        self._losses = 0

    def count(self, block: int = 64 << 20) -> Optional[dict[str, int]]:
        """The counts so far; None if there is no file."""
        keep = max(len(m) for m in self.markers.values()) - 1
        try:
            with open(self.path, "rb") as recording:
                recording.seek(self._offset)
                while chunk := recording.read(block):
                    self._offset += len(chunk)
                    data = self._tail + chunk
                    for kind, marker in self.markers.items():
                        # A marker may straddle two reads: count it in the read where it ends.
                        self.counts[kind] += data.count(marker) - self._tail.count(marker)
                    self._tail = data[-keep:]
        except OSError:
            return None
        return dict(self.counts)

    def new_losses(self) -> int:
        """``unobserved`` and ``gap`` lines written since the last call."""
        counts = self.count() or {}
        losses = counts.get("unobserved", 0) + counts.get("gap", 0)
        new, self._losses = losses - self._losses, losses
        return new


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


def _ratio(series: Series, relay: Optional[Series], measure: str) -> str:
    """`` (0.54x)``: the median of ``measure`` as a ratio to the minimal relay's, when both
    were measured (and ``relay`` is given)."""
    if relay is None:
        return ""
    theirs, ours = median(getattr(relay, measure)), median(getattr(series, measure))
    if math.isnan(theirs) or math.isnan(ours) or not theirs:
        return ""
    return f" ({_times(ours / theirs)})"


_WORKLOAD_OF = {"p99": "rtt", "per_second": "rtt", "added": "rtt", "big": "big",
                "tiny": "tiny", "sustained": "tiny"}  # fmt: skip


def _measured(series: Series, relay: Optional[Series], measure: str, scale: float, unit: str,
              digits: int = 0) -> str:  # fmt: skip
    """One cell: median ± spread, ``*`` if the observer shed meanwhile, ratio to the relay."""
    shed = "*" if _WORKLOAD_OF[measure] in series.shed else ""
    values = getattr(series, measure)
    return _cell(values, scale, unit, digits) + shed + _ratio(series, relay, measure)


def results_table(configs: list[Config], results: dict[str, Series], mode: Mode) -> Table:
    table = Table(title=f"{mode.name}: medians of {mode.rounds} interleaved rounds (± half the "
                        "range across rounds; ratio to the minimal relay; * = the observer "
                        "shed during that measure)")  # fmt: skip
    columns = ("configuration", "added p50", "p99", "sequential req/s", "16 MiB responses",
               "pipelined noop frames", "… until idle", "peak RSS", "byte-exact",
               "exchanges recorded / sent; busy after a pipelined run")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "configuration" else "right")
    relay = results.get(RELAY)
    for config in configs:
        if config.missing:
            table.add_row(config.name, config.missing, *[""] * (len(columns) - 2))
            continue
        s = results[config.name]
        against = relay if config.name not in ("direct", RELAY) else None

        added_valid = [a for a in s.added if not math.isnan(a)]
        if config.name == "direct":
            added = f"0 (p50 {median(s.rtt) * 1e6:.0f} µs)"
        elif added_valid:
            half = (max(added_valid) - min(added_valid)) / 2
            added = f"{median(added_valid) * 1e6:.0f} µs ±{half * 1e6:.0f}"
            added += ("*" if "rtt" in s.shed else "") + _ratio(s, against, "added")
        else:
            added = "failed"
        table.add_row(
            config.name,
            added,
            _measured(s, against, "p99", 1e-6, " µs"),
            _measured(s, against, "per_second", 1, "/s"),
            _measured(s, against, "big", 1, " MB/s"),
            _measured(s, against, "tiny", 1e3, "k/s"),
            _measured(s, against, "sustained", 1e3, "k/s", 1),
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


def targets(results: dict[str, Series], mode: Mode, name: str) -> list[Target]:
    """Issue 25's targets for ``mode`` that this run can check for the golem-proxy ``name``
    (ratios to the minimal relay)."""
    ours, relay = results.get(name), results.get(RELAY)
    if ours is None or relay is None:
        return []
    if mode.full:
        return [
            Target("added p50 vs the relay's", ours.added, relay.added, 1.0, True),
            Target("p99 vs the relay's", ours.p99, relay.p99, 1.5, True),
            Target("sequential req/s vs the relay", ours.per_second, relay.per_second, 0.9, False),
            Target("16 MiB responses vs the relay", ours.big, relay.big, 0.9, False),
        ]
    return [Target("pipelined noop frames vs the relay", ours.tiny, relay.tiny, 0.95, False)]


def observation_verdict(series: Series, mode: Mode) -> str:
    """Whether the recording holds what ``mode`` demands: every exchange and no gap (full
    observation), or at least half of them (flood); counted from the file."""
    counts = series.recorded
    if counts is None:
        return "no recording"
    share = counts["exchange"] / series.requests if series.requests else 0.0
    losses = counts["unobserved"] + counts["gap"]
    said = (f"{counts['exchange']:,} exchanges of {series.requests:,} sent ({share:.1%}), "
            f"{counts['unobserved']:,} unobserved, {counts['gap']:,} gaps")  # fmt: skip
    if mode.full:
        met = counts["exchange"] == series.requests and not losses
        return f"every exchange recorded, 0 gaps: {'met' if met else 'MISSED'} ({said})"
    return f"at least half observed: {'met' if share >= 0.5 else 'MISSED'} ({said})"


def _times(ratio: float) -> str:
    if math.isnan(ratio):
        return "-"
    return f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.4f}x"


def targets_table(rows: list[Target], mode: Mode, name: str) -> Table:
    table = Table(title=f"{mode.name}: {name}'s targets (issue 25), ratio of medians")
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


@dataclass(frozen=True)
class Mode:
    """One workload of the run: ``full`` observation paces it so that the recording can hold
    every exchange; the flood pipelines far more frames than the observer can decode."""

    name: str
    full: bool
    rounds: int
    trips: int
    bigs: int
    tiny: int


def modes(quick: bool, rounds: int, only: str) -> list[Mode]:
    trips, bigs = (300, 4) if quick else (2000, 16)
    rounds = 2 if quick else rounds
    # golem-proxy's observer may trail the wire: each pipelined run waits until it is idle
    # again (minutes for a million frames), which bounds how many frames a run can afford.
    found = [
        Mode("full observation", True, rounds, trips, bigs, 2_000 if quick else 10_000),
        Mode("flood", False, rounds, trips, bigs, 50_000 if quick else 300_000),
    ]
    return [m for m in found if only == "both" or m.name.startswith(only)]


def run_mode(
    mode: Mode, console: Console, baseline: Optional[Path], ours: Sequence[str] = (OURS,)
) -> dict[str, Series]:
    with tempfile.TemporaryDirectory() as record_dir:
        with configurations(Path(record_dir), baseline, ours) as configs:
            console.print(describe_rig(configs))
            recordings = {
                c.name: RecordingTail(Path(record_dir) / RECORDING[c.name])
                for c in configs
                if c.name in RECORDING and not c.missing
            }
            results = run(configs, mode.rounds, mode.trips, mode.bigs, mode.tiny, recordings)
        # Once each golem-proxy has stopped and closed its recording:
        for name, recording in recordings.items():
            results[name].recorded = recording.count()
    console.print(
        f"{mode.name}: {mode.trips} sequential round trips, {mode.bigs} x {BIG // 2**20} MiB "
        f"responses and {mode.tiny:,} pipelined frames per configuration and round; {OURS} "
        "records to a file"
    )
    console.print(results_table(configs, results, mode))
    for name in recordings:
        console.print(targets_table(targets(results, mode, name), mode, name))
        console.print(f"{mode.name}, {name}: " + observation_verdict(results[name], mode))
    for name, series in results.items():
        for error, times in Counter(series.errors).items():
            repeated = f" (x{times})" if times > 1 else ""
            console.print(f"[red]{name}[/]: {escape(error)}{repeated}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2 rounds of fewer iterations")
    parser.add_argument("--mode", choices=("both", "full", "flood"), default="both")
    parser.add_argument("--json", metavar="FILE", help="also write every per-round value here")
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        type=Path,
        help="also measure the golem-proxy of this checkout (e.g. from git archive), interleaved",
    )
    parser.add_argument(
        "--observer",
        choices=("both", *OBSERVERS.values()),
        default="both",
        help="which golem-proxy to measure: observing in its own process, in a child process, "
        "or both in the same interleaved run (the default)",
    )
    args = parser.parse_args()
    ours = [name for name, where in OBSERVERS.items() if args.observer in ("both", where)]
    console = Console(width=200)
    dump = {}
    for mode in modes(args.quick, args.rounds, args.mode):
        results = run_mode(mode, console, args.baseline, ours)
        dump[mode.name] = {name: vars(series) for name, series in results.items()}
    console.print("load average at the end: " + "/".join(f"{x:.1f}" for x in os.getloadavg()))
    if args.json:
        Path(args.json).write_text(json.dumps(dump, indent=1, default=sorted))


if __name__ == "__main__":
    main()
