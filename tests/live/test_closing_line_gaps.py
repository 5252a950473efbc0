"""A session whose observation lost bytes says so where it ends: the closing line on stderr
and the recording's ``session-end`` line count the gaps (``unobserved`` rows) by reason, as
`check` counts them, whichever process observed (the proxy's own, one of its own, one fed
through a spool)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench.processes import observing_process
from bench.robustness.proxy_cli import ROOT, ProxyCli
from golem_core.blocking import MessageReader, send_message
from golem_core.messages import Role
from golem_proxy.events import SessionEnded
from golem_proxy.recording.format import read_recording
from golem_proxy.terminal import format_size
from tests.live.observer_child_helpers import golem_calls, observed_proxy

BIG = "q" * (4 << 20)
"""A call's blob: 30 of them each way overflow the 64 MiB the pipe's records may wait in."""


def _lines(record: Path, kind: str) -> list[dict[str, Any]]:
    found = []
    for line in record.read_bytes().splitlines():
        data = json.loads(line)
        if data.get("kind") == kind:
            found.append(data)
    return found


def _closing_line(cli: ProxyCli) -> str:
    said = [line for line in cli.stderr.splitlines() if line.startswith("golem-proxy proxy: ")]
    assert said, cli.stderr
    return said[-1]


def _checked_unobserved(record: Path) -> Any:
    """What ``check --json`` counts of the gaps it did not inspect."""
    checked = subprocess.run(
        [sys.executable, "-m", "golem_proxy", "check", "--json", str(record)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=60,
    )
    assert checked.returncode == 3, checked.stdout + checked.stderr  # inspected in part
    return json.loads(checked.stdout)["not_inspected"]["unobserved"]


def _says_the_gaps(cli: ProxyCli, record: Path) -> None:
    """The closing line and the ``session-end`` line count the recording's gaps, as ``check``
    does, and the recording has some."""
    gaps = _lines(record, "unobserved")
    assert gaps, record.read_text()[-2000:]
    by_reason = Counter(gap["reason"] for gap in gaps)
    sizes = Counter[str]()
    for gap in gaps:
        sizes[gap["reason"]] += gap["size"]
    parts = [
        f"{n} unobserved:{reason}, {format_size(sizes[reason])}" for reason, n in by_reason.items()
    ]
    many = "gaps" if len(gaps) > 1 else "gap"
    said = _closing_line(cli)
    assert said.endswith(f"; {len(gaps)} {many} in what was observed ({'; '.join(parts)})"), said
    ended = _lines(record, "session-end")
    assert len(ended) == 1
    assert ended[0]["unobserved"] == _checked_unobserved(record)
    assert ended[0]["unobserved"]["gaps"] == len(gaps)
    assert ended[0]["unobserved"]["bytes"] == sum(sizes.values())
    # Read back as the reader reads it.
    read = [e for e in read_recording(str(record)).events if isinstance(e, SessionEnded)]
    assert {c.reason: (c.gaps, c.bytes) for c in read[0].unobserved} == {
        reason: (by_reason[reason], sizes[reason]) for reason in by_reason
    }


def test_calls_lost_behind_a_full_spool_are_said_at_the_end(tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    with observed_proxy(record, "--observer-spool", "--spool-limit", "0.015625") as cli:
        observer = observing_process(cli.process.pid)
        with socket.create_connection(("127.0.0.1", cli.port), 30) as sock:
            reader = MessageReader(sock)

            def call(n: int, params: dict[str, object]) -> None:
                send_message(sock, {"id": n, "method": "echo", "params": params})
                answer = reader.read_message(Role.RESPONSE)
                assert answer is not None and answer.id == n, (n, answer)

            os.kill(observer, signal.SIGSTOP)  # nothing decoded: the spool fills, then more
            try:
                for n in range(120):  # ~100 fill the 16 KiB spool
                    call(n, {"n": n})
                for n in range(120, 150):  # past what may wait for room in the pipe
                    call(n, {"blob": BIG})
            finally:
                os.kill(observer, signal.SIGCONT)
            for n in range(150, 160):
                call(n, {"n": n})
        cli.stop(timeout=90)
    assert cli.process.returncode == 0, cli.stderr
    ids = [e.request.message.id for e in read_recording(str(record)).exchanges()]
    assert len(ids) < 160  # calls were lost, in the gaps
    _says_the_gaps(cli, record)


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_frame_too_large_to_observe_is_said_at_the_end(tmp_path: Path, observer: str) -> None:
    record = tmp_path / "session.jsonl"
    calls = [{"id": 1, "method": "echo", "params": {"blob": "b" * (2 << 20)}}]
    calls.append({"id": 2, "method": "echo", "params": {}})
    with observed_proxy(record, "--observer", observer, "--observe-frame-limit", "1") as cli:
        golem_calls(cli.port, calls)
        cli.stop(timeout=60)
    assert cli.process.returncode == 0, cli.stderr
    assert {gap["reason"] for gap in _lines(record, "unobserved")} == {"frame-too-large"}
    _says_the_gaps(cli, record)


def test_a_session_that_lost_nothing_says_no_gap(tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    with observed_proxy(record) as cli:
        golem_calls(cli.port, [{"id": 1, "method": "echo", "params": {}}])
        cli.stop(timeout=60)
    said = _closing_line(cli)
    assert said.endswith(f"recorded 1 exchange (0 errors, 0 violations) to {record}"), said
    assert "unobserved" not in _lines(record, "session-end")[0]
