"""Chaos for the observing process of ``proxy --observer child-process``: while clients make a
mix of calls (sequential small ones, pipelined bursts, frames of a few MiB), the observing
process is, at a seeded moment, killed, stopped for a while, stopped past the stall limit, or
killed while a large frame waits for room in the handoff pipe. Whatever it is, forwarding goes
on byte-exact, the proxy exits 0, says at most once that observation stopped, and the
recording is whole (every line, contiguous numbers), holds no violation (every call is a
good one), and ends saying so when observation stopped. The real command line, real
loopback peers and signals."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.processes import observing_process
from bench.robustness.proxy_cli import ProxyCli
from golem_proxy.events import ViolationSeen
from golem_proxy.live.observer_link import STALL_LIMIT
from golem_proxy.recording.format import read_recording
from golem_proxy.recording.shared_file import STOPPED_KIND

from .observer_child_helpers import (
    STOPPED,
    MixedTraffic,
    observed_proxy,
    pipe_fill,
    process_gone,
    said_observation_stopped,
    tcp_connector,
    wait_for,
)

CHILD = ("-q", "--observer", "child-process", "--observer-restarts", "0")
"""Observation stops for good at the first death here (tests/live/test_observer_restart.py has
the replacement)."""
AGAIN = 3
"""Answers every small-call client must get after the chaos (the large one, one)."""
SERVED = 30.0
"""How long forwarding may take to serve every client again (a loaded machine)."""

WHY = {
    "kill": "the observing process was killed by SIGKILL",
    "kill-mid-frame": "the observing process was killed by SIGKILL",
    "stall": f"the observing process acknowledged nothing for {STALL_LIMIT:g} s, and was stopped",
}
"""What the proxy says when the chaos stops observation (a pause does not)."""


def _kill(observer: int, traffic: MixedTraffic, rng: random.Random) -> None:
    os.kill(observer, signal.SIGKILL)
    wait_for(lambda: process_gone(observer), what="the observing process to die")


def _pause(observer: int, traffic: MixedTraffic, rng: random.Random) -> None:
    """Stopped for well under the stall limit: the relay holds, then catches up."""
    os.kill(observer, signal.SIGSTOP)
    try:
        # The chaos's own timing (how long it stays stopped), not a wait for a state.
        time.sleep(rng.uniform(0.1, 1.0))
    finally:
        os.kill(observer, signal.SIGCONT)


def _stall(observer: int, traffic: MixedTraffic, rng: random.Random) -> None:
    """Stopped for good: the proxy notices nothing is acknowledged and kills it."""
    os.kill(observer, signal.SIGSTOP)
    wait_for(
        lambda: process_gone(observer),
        timeout=STALL_LIMIT + SERVED,
        what="the proxy to kill the stuck observing process",
    )


def _kill_mid_frame(observer: int, traffic: MixedTraffic, rng: random.Random) -> None:
    """Stopped while the clients go on, until the handoff pipe is full (the rest of a large
    frame then waits for room in the forwarding process) or stops filling (the link holds
    the connections before the pipe is full: what the stopped process had read but not
    acknowledged counts too), at most half the stall limit (past it the proxy would kill it
    itself); then killed there."""
    os.kill(observer, signal.SIGSTOP)
    try:
        fills: list[int] = []
        deadline = time.monotonic() + STALL_LIMIT / 2
        while time.monotonic() < deadline:
            waiting, capacity = pipe_fill(observer)
            fills.append(waiting)
            if waiting >= capacity - 64 * 1024 or fills[-HELD:] == [waiting] * HELD:
                break
            time.sleep(0.02)
    finally:
        os.kill(observer, signal.SIGKILL)
    wait_for(lambda: process_gone(observer), what="the observing process to die")


HELD = 25
"""Polls (20 ms apart) that find the pipe's fill unchanged: the link holds."""


CHAOS: dict[str, Callable[[int, MixedTraffic, random.Random], None]] = {
    "kill": _kill,
    "pause": _pause,
    "stall": _stall,
    "kill-mid-frame": _kill_mid_frame,
}


def _unix(path: Path) -> Callable[[], socket.socket]:
    def connect() -> socket.socket:
        sock = socket.socket(socket.AF_UNIX)
        sock.settimeout(STALL_LIMIT + SERVED)
        sock.connect(str(path))
        return sock

    return connect


def _chaos_round(
    tmp_path: Path, kind: str, seed: int, *options: str, unix: bool = False
) -> tuple[ProxyCli, Path]:
    """One session: mixed traffic, the chaos ``kind`` at a moment chosen by ``seed``, more
    traffic that must all be served; then the proxy is stopped. Returns it and its
    recording."""
    rng = random.Random(seed)
    record = tmp_path / f"{kind}-{seed}.jsonl"
    listen = "127.0.0.1:0"
    if unix:
        private = tmp_path / "run"
        private.mkdir(mode=0o700)
        listen = f"unix:{private / 'proxy.sock'}"
    with observed_proxy(record, *CHILD, *options, listen=listen) as cli:
        try:
            observer = observing_process(cli.process.pid)
            connect = (
                _unix(private / "proxy.sock") if unix else tcp_connector(cli, STALL_LIMIT + SERVED)
            )
            traffic = MixedTraffic(connect, seed)
            try:
                # The chaos strikes after a seeded number of answers, mid-traffic.
                before = rng.randrange(50, 800)
                wait_for(
                    lambda: traffic.errors or traffic.total() >= before,
                    timeout=SERVED,
                    what=f"{before} answers",
                )
                assert traffic.errors == []
                CHAOS[kind](observer, traffic, rng)
                assert cli.process.poll() is None, "the proxy died"
                traffic.wait_each_answers(AGAIN, timeout=SERVED)
            finally:
                traffic.stop()
            assert cli.process.poll() is None, "the proxy died"
        finally:
            cli.stop()
    return cli, record


def _check(cli: ProxyCli, record: Path, why: str | None) -> None:
    """The proxy exited 0 and said once (or never) that observation stopped, and why; the
    recording is whole, numbered without a hole, and ends saying so when it stopped."""
    said = said_observation_stopped(cli, why)
    assert said is None or said == f"{STOPPED}{why}); forwarding goes on", cli.stderr
    recording = read_recording(str(record))
    assert not recording.truncated_tail
    # Every call was a good one: a violation would be the chaos misread (an answer paired
    # across a gap with a request it does not answer).
    assert [e for e in recording.events if isinstance(e, ViolationSeen)] == []
    lines = [json.loads(line) for line in record.read_bytes().splitlines()[1:]]
    assert [line["seq"] for line in lines] == list(range(1, len(lines) + 1))
    stopped = [line for line in lines if line["kind"] == STOPPED_KIND]
    assert lines[-1]["kind"] == "session-end"  # the session ended in order, last
    if why is None:
        assert stopped == []
    else:
        assert stopped == [lines[-2]]
        assert why.split(",")[0] in lines[-2]["detail"]


HOLD = ("--observer-hold", "0.05")
"""Connections held longer than this shed (go on unobserved): the shedding path."""


@pytest.mark.parametrize(
    ("kind", "seed", "options"),
    [("kill", 1, ()), ("kill", 2, ()), ("pause", 3, ()), ("pause", 4, ()),
     ("kill-mid-frame", 5, ()), ("kill-mid-frame", 6, ()), ("stall", 7, ()),
     ("pause", 9, HOLD), ("kill-mid-frame", 10, HOLD)],
    ids=lambda value: "sheds" if value == HOLD else "holds" if value == () else None,
)  # fmt: skip
def test_forwarding_outlives_whatever_happens_to_the_observing_process(
    tmp_path: Path, kind: str, seed: int, options: tuple[str, ...]
) -> None:
    cli, record = _chaos_round(tmp_path, kind, seed, *options)
    _check(cli, record, WHY.get(kind))


@pytest.mark.parametrize(
    "route",
    [("--fault", "delay:ms=1,method=nothing"), ("--intercept", "~m nothing"), ("unix",)],
    ids=["fault", "intercept", "unix"],
)
def test_deciding_and_unix_routes_outlive_a_killed_observing_process(
    tmp_path: Path, route: tuple[str, ...]
) -> None:
    unix = route == ("unix",)
    options = () if unix else route
    cli, record = _chaos_round(tmp_path, "kill-mid-frame", 8, *options, unix=unix)
    _check(cli, record, WHY["kill-mid-frame"])
