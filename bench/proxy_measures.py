"""bench_proxy's measures: the client side of each workload (round trips, 16 MiB responses,
pipelined frames, the byte-exact check), the rounds that run them interleaved over every
configuration, and the count of what each golem-proxy's recording holds."""

from __future__ import annotations

import math
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from bench_peers import hello, read_exactly, workload
from processes import RssSampler, observing_processes, process_cpu_seconds, settle
from proxy_rig import Config

CHUNK = 1 << 20


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
    cpu_per_call: list[list[float]] = field(default_factory=list)
    """CPU seconds the hop's processes spent per sequential round trip, each process of its
    tree apart (the first is the one started; an observing process of its own follows): on
    a machine whose cores the rig shares, their sum bounds the sequential rate."""
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


def _trips(series: Series, config: Config, count: int) -> None:
    pid = config.process.pid if config.process is not None else None
    before = process_cpu_seconds(pid) if pid is not None else {}
    try:
        times = round_trips(config.port, count)
    except (OSError, RuntimeError) as exc:
        series.errors.append(f"round trips: {exc or type(exc).__name__}")
        times = []
    if pid is not None and times:
        after = process_cpu_seconds(pid)
        calls = len(times) + WARM_UP
        spent = {p: (after[p] - before.get(p, 0.0)) / calls for p in after}
        # A standby waiting to replace the observing process (the ones after the first) is
        # counted in the observing process's share: one share per role, whatever the round.
        observing = observing_processes(pid)
        for standby in observing[1:]:
            if standby in spent and observing[0] in spent:
                spent[observing[0]] += spent.pop(standby)
        series.cpu_per_call.append(list(spent.values()))
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
    warm_bigs: int = 0,
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
        if warm_bigs:
            attempt(series, "warm-up", big_responses, config.port, warm_bigs)
            series.requests += warm_bigs + 1  # and its connection's workload request

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
                _trips(series, config, trips)
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
    warm_bigs: int = 0
    """16 MiB responses through each configuration before the rounds, unmeasured: the TUI
    keeps the newest large payloads (256 MiB), and until it holds them each is memory touched
    for the first time (bench/cpu_budget.py --warm)."""


WARM_BIGS = 64
"""16 MiB responses through each configuration before a full run's rounds (`Mode.warm_bigs`)."""


def modes(quick: bool, rounds: int, only: str) -> list[Mode]:
    trips, bigs = (300, 4) if quick else (2000, 16)
    rounds = 2 if quick else rounds
    warm = 0 if quick else WARM_BIGS
    # golem-proxy's observer may trail the wire: each pipelined run waits until it is idle
    # again (minutes for a million frames), which bounds how many frames a run can afford.
    found = [
        Mode("full observation", True, rounds, trips, bigs, 2_000 if quick else 10_000, warm),
        Mode("flood", False, rounds, trips, bigs, 50_000 if quick else 300_000, warm),
    ]
    return [m for m in found if only == "both" or m.name.startswith(only)]
