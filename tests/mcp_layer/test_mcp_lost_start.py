"""A session's ``initialize`` that crossed while no observing process recorded it (the one
observing died before writing it) is not in the recording: neither a later observing process
(recording/mcp_session_scan.py, live/mcp_rules_live.py) nor `check` (analysis/mcp_audit.py)
may then say a ``tools/call`` was sent before ``initialize``: the session's start is not
known, and the client did send it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from bench.processes import observing_process
from golem_core.contract import violation
from golem_core.mcp_rules import R_INITIALIZE_FIRST
from golem_core.profiles import MCP
from golem_proxy.events import Direction, ViolationSeen
from golem_proxy.recording.reader import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.live.observer_child_helpers import wait_for
from tests.support.cli_helpers import reap, run_cli
from tests.support.restarts import TappedSession, restart_gap

from .mcp_helpers import INITIALIZE, environment, rpc_line, start_piped, wrapped

INITIALIZE_FIRST = "mcp.lifecycle.initialize-first"


def _lines(record: Path) -> list[dict[str, Any]]:
    """The recording's lines (being written) past its header, an unfinished last one left."""
    found = []
    texts = record.read_text().splitlines()[1:] if record.exists() else []
    for text in texts:
        try:
            found.append(json.loads(text))
        except ValueError:
            continue
    return found


def _answer_recorded(record: Path, ident: int) -> bool:
    return any(
        line.get("route") == "mcp" and line.get("dir") == "s2c" and line.get("id") == ident
        for line in _lines(record)
    )


def _restarts(record: Path) -> int:
    return sum(1 for line in _lines(record) if line["kind"] == "observation-restarted")


def _session_with_its_start_lost(tmp_path: Path) -> tuple[Path, str]:
    """The observing process is stopped before the client's ``initialize`` and killed after
    a call was answered (its start never recorded); after the restart a call is recorded,
    the observing process killed again, and a last call made after the second restart."""
    record, errors = tmp_path / "r.jsonl", tmp_path / "stderr"
    with PluginProcess(seed=10) as plugin, errors.open("wb") as stderr:
        process = start_piped(wrapped(plugin, record), stderr=stderr.fileno())
        assert process.stdin is not None and process.stdout is not None

        def ask(ident: int, method: str, **params: Any) -> None:
            assert process.stdin is not None and process.stdout is not None
            line = INITIALIZE if method == "initialize" else None
            process.stdin.write(line or rpc_line({"id": ident, "method": method, **params}))
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == ident

        def call(ident: int) -> None:
            ask(ident, "tools/call", params={"name": "list_layers", "arguments": {}})

        try:
            wait_for(
                lambda: any(line["kind"] == "open" for line in _lines(record)),
                what="the session's open line",
            )
            observer = observing_process(process.pid)
            # Forwarding goes on; what is handed to the stopped process is never written.
            os.kill(observer, signal.SIGSTOP)
            ask(0, "initialize")
            process.stdin.write(rpc_line({"method": "notifications/initialized"}))
            call(1)
            # Unless the forwarding process found it stalled and replaced it first.
            with contextlib.suppress(ProcessLookupError):
                os.kill(observer, signal.SIGKILL)
            wait_for(lambda: _restarts(record) == 1, what="the first restart")
            call(2)
            wait_for(lambda: _answer_recorded(record, 2), what="call 2 in the recording")
            os.kill(observing_process(process.pid), signal.SIGKILL)
            wait_for(lambda: _restarts(record) == 2, what="the second restart")
            call(3)
            process.stdin.close()
            assert process.wait(60) == 0
        finally:
            reap(process)
            process.stdout.close()
    return record, errors.read_text()


def test_no_rule_says_initialize_was_not_sent_when_its_start_was_lost(tmp_path: Path) -> None:
    record, errors = _session_with_its_start_lost(tmp_path)
    assert "Traceback" not in errors, errors
    lines = _lines(record)
    # The start was lost: no `initialize` in the recording, and calls 2 and 3 are in it.
    assert not any(line.get("method") == "initialize" for line in lines)
    assert {2, 3} <= {line.get("id") for line in lines if line.get("method") == "tools/call"}
    # Live: neither the process after the first restart nor the one after the second.
    events = read_recording(str(record)).events
    found = [e.violation for e in events if isinstance(e, ViolationSeen)]
    assert not any(v.rule == INITIALIZE_FIRST for v in found), found
    # `check`: the gaps leave the session incomplete, and nothing in it fails.
    checked = run_cli("check", "--json", str(record), env=environment())
    assert INITIALIZE_FIRST not in checked.stdout, checked.stdout
    assert checked.returncode == 3, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["errors"] == 0


@pytest.mark.parametrize("lost", [True, False])
def test_check_reads_a_gap_before_a_call_as_a_start_not_known(tmp_path: Path, lost: bool) -> None:
    """A recording whose session's start crossed in a restart's gap, holding the claim a
    process that read no ``initialize`` recorded (as ones made before this was told apart
    do): `check` neither makes it again nor counts the recorded one. Without the gap, the
    call before any ``initialize`` is one."""
    record = tmp_path / "r.jsonl"
    session = TappedSession(record, MCP)
    session.open(1)
    if lost:
        session.writer.write(restart_gap(1, session.t, 0))
    call = {"name": "b", "arguments": {}}
    request = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": call}
    session.send(1, Direction.C2S, json.dumps(request).encode())
    text = "`tools/call` sent before `initialize` was sent"
    claim = violation(R_INITIALIZE_FIRST, text, "$.method")
    seen = ViolationSeen(
        conn=1, route="main", direction=Direction.C2S, frame_index=0, t=session.t, violation=claim
    )
    session.writer.write(seen)
    answer = {"jsonrpc": "2.0", "id": 4, "result": {"content": []}}
    session.send(1, Direction.S2C, json.dumps(answer).encode())
    session.close()
    # As `golem-proxy mcp` writes it: the route is the MCP layer of a GOLEM session.
    header, rest = record.read_bytes().split(b"\n", 1)
    fields = json.loads(header)
    fields["profile"] = "golem"
    fields["routes"][0]["profile"] = "mcp"
    record.write_bytes(json.dumps(fields).encode() + b"\n" + rest)
    checked = run_cli("check", "--json", str(record), env=environment())
    report = json.loads(checked.stdout)
    rules = [group["rule"] for group in report["rules"]]
    assert rules == ([] if lost else [INITIALIZE_FIRST]), checked.stdout
    assert report["errors"] == (0 if lost else 1)
