"""After the spool (``--observer-spool``) reached ``--spool-limit``, the relay does not wait
for the observing process to decode what the spool held (`Ledger.drain`): forwarding goes on
while that process trails, stopped even, and the recording still gets every exchange, the
spool's first, then the pipe's."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from pathlib import Path

from bench.processes import observing_process
from golem_core.blocking import MessageReader, send_message
from golem_core.messages import Role
from golem_proxy.live.observer_link import STALL_LIMIT
from golem_proxy.recording.format import read_recording
from tests.live.observer_child_helpers import (
    STOPPED,
    observed_proxy,
    process_gone,
    wait_for,
)

CALLS = 400
"""Sequential calls while the observing process is stopped: ~100 fill the 16 KiB spool."""
CALL_TIMEOUT = 3.0
"""Seconds a call may take: under the 5 s after which a link without a spool gives up on an
observing process that acknowledges nothing, so a call held until then fails here."""


def _stopped(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def test_after_the_spool_fills_calls_are_answered_while_the_observing_process_is_stopped(
    tmp_path: Path,
) -> None:
    record = tmp_path / "session.jsonl"
    with observed_proxy(record, "--observer-spool", "--spool-limit", "0.015625") as cli:
        observer = observing_process(cli.process.pid)
        os.kill(observer, signal.SIGSTOP)
        try:
            with socket.create_connection(("127.0.0.1", cli.port), CALL_TIMEOUT) as sock:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                reader = MessageReader(sock)
                for n in range(CALLS):
                    send_message(sock, {"id": n, "method": "echo", "params": {"n": n}})
                    answer = reader.read_message(Role.RESPONSE)
                    assert answer is not None and answer.id == n, (n, answer)
            # Every call was answered while the observing process could decode nothing.
            assert _stopped(observer)
            assert os.path.getsize(f"{record}.spool") >= 16 * 1024  # it filled
        finally:
            os.kill(observer, signal.SIGCONT)
        cli.stop(timeout=60)
    assert cli.process.returncode == 0, cli.stderr
    assert cli.stderr.count("golem-proxy: the spool is full (--spool-limit 0.015625 MiB)") == 1
    assert "observation stopped" not in cli.stderr, cli.stderr
    ids = [e.request.message.id for e in read_recording(str(record)).exchanges()]
    assert ids == list(range(CALLS))
    lines = record.read_bytes().splitlines()
    assert not [line for line in lines if b'"kind":"unobserved"' in line]
    assert not Path(f"{record}.spool").exists()


SLACK = 2.5
"""Seconds of a busy machine's scheduling allowed beyond the stall watch's own bound."""


def test_after_a_full_spool_drained_a_stuck_observer_holds_calls_as_long_as_without_one(
    tmp_path: Path,
) -> None:
    """Once the recording caught up with what the full spool held, an observing process that
    stops acknowledging is given up after the stall limit of a session without a spool (5 s),
    not a quarter of the spool's (60 s) later."""
    record = tmp_path / "session.jsonl"
    spool = Path(f"{record}.spool")
    with observed_proxy(record, "--observer-spool", "--spool-limit", "0.015625") as cli:
        observer = observing_process(cli.process.pid)
        with socket.create_connection(("127.0.0.1", cli.port), 30) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            reader = MessageReader(sock)

            def call(n: int, params: dict[str, object]) -> None:
                send_message(sock, {"id": n, "method": "echo", "params": params})
                answer = reader.read_message(Role.RESPONSE)
                assert answer is not None and answer.id == n, (n, answer)

            for n in range(120):  # past the 16 KiB spool, observed
                call(n, {"n": n})
            wait_for(lambda: not spool.exists(), what="the full spool to go")
            # Calls after the spool's, recorded one after the other: the observing process
            # acknowledged the first of them before it wrote the second, so the relay knows
            # the recording caught up with what the spool held.
            for n in range(120, 122):
                call(n, {"n": n})
                wait_for(lambda n=n: _recorded(record) == n + 1, what=f"call {n} recorded")
            os.kill(observer, signal.SIGSTOP)
            try:
                started = time.monotonic()
                call(122, {"blob": "q" * (4 << 20)})  # held while the recording trails
                held = time.monotonic() - started
                wait_for(lambda: process_gone(observer), timeout=60, what="the stuck one gone")
                replaced = time.monotonic() - started
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(observer, signal.SIGCONT)
        cli.stop(timeout=60)
    assert cli.process.returncode == 0, cli.stderr
    stopped = f"{STOPPED}the observing process acknowledged nothing for {STALL_LIMIT:g} s"
    assert cli.stderr.count(stopped) == 1, cli.stderr
    # The watch looks every quarter of its limit: past the limit, at most that much later.
    bound = STALL_LIMIT * 1.25 + SLACK
    assert held < bound and replaced < bound, (held, replaced)


def _recorded(record: Path) -> int:
    """Exchanges whose answer is in the recording now (a line each, read as it stands)."""
    return sum(1 for line in record.read_bytes().splitlines() if b'"kind":"exchange"' in line)
