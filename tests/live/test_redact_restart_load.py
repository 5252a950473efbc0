"""What redaction learned, carried to the forwarding process on the control socket
(live/control_reader.py), under load: hundreds of KB of values handed to the process that takes
over (the setup went out in one send, which a socket takes only part of: the new process never
started), and a session stopped while the observing process still decodes frames that teach it
values (nothing read the control socket then: it blocked on a full one and was killed, its
recording cut). The real command line against a GOLEM upstream that answers anything."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
from pathlib import Path
from typing import Any

from bench.processes import observing_processes
from bench.robustness.crash import ThreadedUpstream
from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.blocking import MessageReader
from golem_core.messages import Role
from golem_core.profiles import GOLEM

from .observer_child_helpers import process_gone, wait_for


def _lines(record: Path) -> list[dict[str, Any]]:
    data = record.read_bytes()
    return [json.loads(line) for line in data[: data.rfind(b"\n") + 1].splitlines()[1:]]


def _kinds(record: Path, kind: str) -> list[dict[str, Any]]:
    return [line for line in _lines(record) if line["kind"] == kind]


def _script(n: int, size: int) -> bytes:
    return GOLEM.encode(
        {
            "id": n,
            "method": "scripting.execute_python",
            "params": {"code": f"# {n:06d}\n" + "x" * size},
        }
    )


def _calls(port: int, first: int, count: int, size: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        reader = MessageReader(sock)
        for n in range(first, first + count):
            sock.sendall(_script(n, size))
            assert reader.read_message(Role.RESPONSE) is not None


def test_hundreds_of_kb_of_values_reach_the_process_that_takes_over(tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    with ThreadedUpstream() as upstream:
        cli = start_proxy_cli(
            "--route", f"127.0.0.1:0={upstream.address}", "--record", str(record),
            "--observer", "child-process", "--redact", "params.code",
        )  # fmt: skip
        try:
            _calls(cli.port, 0, 100, 5000)  # 100 values of 5 KB: ~500 KB to hand on
            wait_for(lambda: len(_kinds(record, "exchange")) == 100, what="100 exchanges")
            wait_for(lambda: len(observing_processes(cli.process.pid)) == 2, what="a standby")
            active = observing_processes(cli.process.pid)[0]
            os.kill(active, signal.SIGKILL)
            wait_for(lambda: process_gone(active), what="the observing process to die")
            wait_for(
                lambda: (
                    _kinds(record, "observation-restarted") or _kinds(record, "observation-stopped")
                ),
                timeout=90,
                what="the restart, or its failure",
            )
            assert not _kinds(record, "observation-stopped"), _kinds(record, "observation-stopped")
            _calls(cli.port, 100, 5, 5000)
            wait_for(lambda: len(_kinds(record, "exchange")) == 105, what="105 exchanges")
        finally:
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert "could not be restarted" not in cli.stderr, cli.stderr
    assert b"x" * 4000 not in record.read_bytes()  # every code redacted, after the restart too


def test_a_session_stopped_while_values_are_learned_ends_its_recording(tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    count, size = 20_000, 2000
    with ThreadedUpstream() as upstream:
        cli = start_proxy_cli(
            "--route", f"127.0.0.1:0={upstream.address}", "--record", str(record),
            "--observer", "child-process", "--redact", "params.code", "--drain-timeout", "2",
        )  # fmt: skip
        burst = b"".join(_script(n, size) for n in range(count))
        sock = socket.create_connection(("127.0.0.1", cli.port), timeout=60)
        answered: list[int] = []

        def send() -> None:
            with contextlib.suppress(OSError):
                sock.sendall(burst)

        def read() -> None:
            reader = MessageReader(sock)
            try:
                while reader.read_message(Role.RESPONSE) is not None:
                    answered.append(1)
            except (OSError, ValueError):
                pass

        threads = [threading.Thread(target=send, daemon=True), threading.Thread(target=read)]
        for thread in threads:
            thread.start()
        try:
            # Stopped mid-burst: the observing process trails the wire by what the relay lets
            # it (its values told on the control socket as it decodes them).
            wait_for(
                lambda: len(_kinds(record, "exchange")) >= 500, timeout=60, what="500 exchanges"
            )
            assert len(answered) < count
        finally:
            cli.stop(timeout=60)
            sock.close()
            threads[1].join(10)
    assert cli.process.returncode == 0, cli.stderr
    assert "did not finish in time" not in cli.stderr, cli.stderr
    assert not _kinds(record, "observation-stopped")
    assert _kinds(record, "session-end")
