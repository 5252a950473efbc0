"""``proxy --observer child-process`` keeps the recording close to the wire: when the observing
process falls behind (here: stopped with SIGSTOP), the relay takes no new bytes until it
catches up (nothing lost, no gap), for at most ``--observer-hold``; past it, forwarding goes
on and the span is recorded as unobserved; when it stops acknowledging for the stall limit,
it is stopped and forwarding goes on without it (live/observer_link.py)."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.processes import observing_process
from bench.robustness.crash import ThreadedUpstream
from bench.robustness.proxy_cli import start_proxy_cli
from golem_proxy.live.observer_link import STALL_LIMIT
from golem_proxy.recording.format import read_recording
from golem_proxy.recording.shared_file import STOPPED_KIND
from tests.support.cli_helpers import run_cli

from .observer_child_helpers import CountingClient, wait_for

CHILD = ("--observer", "child-process")


def _stalled(client: CountingClient, quiet: float = 0.3) -> bool:
    """No answer came for ``quiet`` seconds (the relay holds the connection)."""
    before = client.answers
    time.sleep(quiet)
    return client.answers == before


def _recorded_kinds(record: Path) -> list[str]:
    return [json.loads(line)["kind"] for line in record.read_bytes().splitlines()[1:]]


def _session(record: Path, act: Callable[[CountingClient, int], None], *args: str) -> _Run:
    """A recorded child-process session: a client gets its first answers, ``act(client,
    observing process id)``, the client gets 50 more; then everything stops (cleanly)."""
    with ThreadedUpstream() as upstream:
        cli = start_proxy_cli("--route", f"127.0.0.1:0={upstream.address}", "--record",
                              str(record), "-q", *CHILD, "--observer-restarts", "0",
                              *args)  # fmt: skip
        try:
            observer = observing_process(cli.process.pid)
            client = CountingClient(cli.port)
            wait_for(lambda: client.answers >= 50, what="the first answers")
            act(client, observer)
            acted = client.answers
            wait_for(
                lambda: client.answers >= acted + 50,
                timeout=STALL_LIMIT + 20,
                what="forwarding to go on",
            )
            answered = client.stop()
        finally:
            cli.stop()
    assert cli.process.returncode == 0
    return _Run(cli.stderr, answered, acted)


@contextmanager
def _stopped(pid: int) -> Iterator[None]:
    """The process stopped (SIGSTOP) for the block, then continued."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@dataclass
class _Run:
    stderr: str
    answered: int
    acted: int
    """Answers when ``act`` returned."""


def test_a_stopped_observer_holds_forwarding_which_resumes_with_nothing_lost(
    tmp_path: Path,
) -> None:
    def stop_and_continue(client: CountingClient, observer: int) -> None:
        with _stopped(observer):
            # Without the hold, answers would go on while the handoff pipe fills.
            wait_for(lambda: _stalled(client), timeout=STALL_LIMIT / 2, what="a hold")

    record = tmp_path / "held.jsonl"
    run = _session(record, stop_and_continue)
    assert "observation stopped" not in run.stderr
    kinds = _recorded_kinds(record)
    assert "gap" not in kinds and "unobserved" not in kinds and STOPPED_KIND not in kinds
    assert len(read_recording(str(record)).exchanges()) == run.answered


def test_an_observer_that_stops_acknowledging_is_stopped_and_forwarding_goes_on(
    tmp_path: Path,
) -> None:
    def stop(client: CountingClient, observer: int) -> None:
        os.kill(observer, signal.SIGSTOP)  # and never continued: killed by the proxy
        wait_for(lambda: _stalled(client), timeout=STALL_LIMIT / 2, what="a hold")

    record = tmp_path / "stalled.jsonl"
    run = _session(record, stop)
    stopped = [
        line for line in run.stderr.splitlines() if line.startswith("golem-proxy: observation")
    ]
    assert stopped == [
        f"golem-proxy: observation stopped (the observing process acknowledged nothing for "
        f"{STALL_LIMIT:g} s, and was stopped); forwarding goes on"
    ]
    recording = read_recording(str(record))
    assert not recording.truncated_tail
    last, ended = (json.loads(line) for line in record.read_bytes().splitlines()[-2:])
    assert last["kind"] == STOPPED_KIND
    # The session then ended in order: the forwarding process says so, without counts.
    assert ended["kind"] == "session-end" and "exchanges" not in ended
    assert "acknowledged nothing" in last["detail"]
    assert len(recording.exchanges()) <= run.acted
    shown = run_cli("show", str(record))
    assert shown.returncode == 0
    assert "unobserved:stopped" in shown.stdout
    assert "acknowledged nothing" in shown.stderr
    assert "what was forwarded after it is not in this recording" in shown.stderr


def test_past_the_hold_limit_forwarding_goes_on_and_the_span_is_recorded_as_unobserved(
    tmp_path: Path,
) -> None:
    def stop_a_while(client: CountingClient, observer: int) -> None:
        with _stopped(observer):
            stopped_at = client.answers
            # Far more than fit the trail limit: past the hold, the relay sheds.
            wait_for(
                lambda: client.answers >= stopped_at + 1000,
                timeout=STALL_LIMIT * 0.8,
                what="forwarding to go on while the observer is stopped",
            )

    record = tmp_path / "shed.jsonl"
    run = _session(record, stop_a_while, "--observer-hold", "0.2")
    assert "observation stopped" not in run.stderr
    kinds = _recorded_kinds(record)
    assert "unobserved" in kinds and STOPPED_KIND not in kinds
    assert 50 <= len(read_recording(str(record)).exchanges()) < run.answered
    shown = run_cli("show", str(record))
    assert "unobserved:behind" in shown.stdout
