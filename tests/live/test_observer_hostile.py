"""A hostile observing process for ``proxy --observer child-process``: a fake one
(fake_observing.py) does the real handshake, then misbehaves without dying: it closes the
handoff pipe or the control socket and runs on, floods acknowledgements, sends garbage on the
control socket, stops reading while it acknowledges old offsets, or never says it is ready.
Whatever it does, the real proxy forwards on byte-exact (while clients make a mix of calls),
stays within a bound of CPU time and memory, says once (with the true reason) that observation
stopped where it must stop and never where it need not, exits 0 on Ctrl-C, and leaves a
recording that loads and, where observation stopped, ends saying so."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Optional

import pytest
import trio

from bench.processes import children_of, observing_process, status
from bench.robustness.proxy_cli import ROOT, ProxyCli
from golem_core.profiles import GOLEM
from golem_proxy.live import observer_launch
from golem_proxy.live.log import Verbosity
from golem_proxy.live.observer_launch import TEST_MODULE, ObserverSetup, ObserverStartError
from golem_proxy.live.observer_link import STALL_LIMIT
from golem_proxy.live.observer_process import ObservingProcess
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.recording.format import read_recording
from golem_proxy.recording.shared_file import STOPPED_KIND

from .fake_observing import EARLY_EXIT, MODE
from .observer_child_helpers import (
    MixedTraffic,
    observed_proxy,
    process_gone,
    said_observation_stopped,
    tcp_connector,
    wait_for,
)

FAKE = "tests.live.fake_observing"
AGAIN = 3
"""Answers every small-call client must get after the misbehaviour (the large one, one)."""
SERVED = 30.0
"""How long forwarding may take to serve every client again (a loaded machine)."""
BEFORE = 1
"""Large calls answered before the misbehaviour is looked at: MiBs handed on, well past where
the fake starts to misbehave (`fake_observing.MISBEHAVE_AFTER`)."""
QUIET = 0.5
"""Seconds without clients over which the proxy's CPU time is measured (the fake may still
flood it meanwhile)."""
QUIET_CPU = 0.15
"""CPU seconds the proxy may spend in `QUIET`: well above an idle proxy's (0 to 0.01) or one
flooded with acknowledgements (0.06), well below a busy loop's (0.27 to 0.46 measured when
every repeated acknowledgement was read at once)."""
MEMORY = 512 * 1024 * 1024
"""The proxy's peak resident memory: the handoff backlog (64 MiB) and the relay's buffers fit
well within it."""

STALLED = f"the observing process acknowledged nothing for {STALL_LIMIT:g} s, and was stopped"
BEYOND = "the observing process acknowledged more than was handed on"
WHY: dict[str, Optional[str]] = {
    "close-pipe": "the observing process closed the handoff pipe, and was stopped",
    "close-control": "the observing process closed the control socket, and was stopped",
    "flood-same": None,
    "flood-steps": None,
    "flood-learned-same": None,
    "flood-learned-new": None,
    "backwards-huge-rate": None,
    "beyond": BEYOND,
    "random-bytes": BEYOND,
    "half-message": STALLED,
    "stop-reading": STALLED,
}
"""What the proxy says of each misbehaviour (the start of it; None: observation goes on)."""


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of ``pid`` alone (not the fake's, which may spin)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize("mode", list(WHY))
def test_forwarding_outlives_a_hostile_observing_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv(TEST_MODULE, FAKE)
    monkeypatch.setenv(MODE, mode)
    why = WHY[mode]
    record = tmp_path / f"{mode}.jsonl"
    with observed_proxy(
        record, "-q", "--observer", "child-process", "--observer-restarts", "0"
    ) as cli:
        fake = observing_process(cli.process.pid)
        traffic = MixedTraffic(tcp_connector(cli, STALL_LIMIT + SERVED), seed=25)
        try:
            wait_for(
                lambda: traffic.errors or traffic.answers[-1] >= BEFORE,
                timeout=SERVED,
                what="a large answer",
            )
            assert traffic.errors == []
            if why is not None:
                wait_for(
                    lambda: process_gone(fake),
                    timeout=STALL_LIMIT + SERVED,
                    what="the proxy to stop the observing process",
                )
            traffic.wait_each_answers(AGAIN, timeout=SERVED)
        finally:
            traffic.stop()
        assert cli.process.poll() is None, "the proxy died"
        if why is None:
            assert not process_gone(fake), "observation stopped where it need not"
        busy = _cpu_seconds(cli.process.pid)
        # A wait of its own: how much CPU the proxy takes while nobody calls.
        time.sleep(QUIET)
        quiet = _cpu_seconds(cli.process.pid) - busy
        memory = status(cli.process.pid, "VmHWM")
        cli.stop()
    assert quiet < QUIET_CPU, f"{quiet:.2f} CPU seconds in {QUIET} s of no traffic"
    assert 0 < memory < MEMORY, f"peak RSS {memory / 2**20:.0f} MiB"
    _check(cli, record, why)


def _check(cli: ProxyCli, record: Path, why: Optional[str]) -> None:
    """The proxy exited 0 and said once (or never) that observation stopped, and why; the
    recording loads, and ends saying so when it stopped."""
    said_observation_stopped(cli, why)
    recording = read_recording(str(record))
    assert not recording.truncated_tail
    lines = [json.loads(line) for line in record.read_bytes().splitlines()[1:]]
    stopped = [line for line in lines if line["kind"] == STOPPED_KIND]
    if why is None:
        assert stopped == []
    else:
        # The session then ended in order: the forwarding process's line, last.
        assert lines[-1]["kind"] == "session-end"
        assert stopped == [lines[-2]]
        assert lines[-2]["detail"].startswith(why.split(",")[0])


@pytest.mark.parametrize(
    ("mode", "limit", "why"),
    [
        # Its exit status, not "no answer", and without waiting out the start's time limit.
        ("exit-before-ready", 30.0, f"the observing process exited with status {EARLY_EXIT}"),
        ("never-ready", 2.0, "no answer in 2 s"),
    ],
)
@pytest.mark.trio
async def test_an_observing_process_that_is_never_ready_fails_the_start_saying_why_in_time(
    monkeypatch: pytest.MonkeyPatch, mode: str, limit: float, why: str
) -> None:
    monkeypatch.setenv(TEST_MODULE, FAKE)
    monkeypatch.setenv(MODE, mode)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # where the fake's module is found
    monkeypatch.setattr(observer_launch, "START_TIMEOUT", limit)
    setup = ObserverSetup(GOLEM.name, (), ProxyOptions(), None, None, Verbosity.QUIET, 1000)
    started = trio.current_time()
    with pytest.raises(ObserverStartError) as failed:
        await ObservingProcess.start(setup, None, trio.current_time)
    assert str(failed.value) == f"the observing process did not start ({why})"
    took = trio.current_time() - started
    assert took < (limit if mode == "exit-before-ready" else limit + SERVED)
    assert children_of(os.getpid()) == [], "the observing process was left running"
