"""A frame ``--enforce-limits`` refuses to forward, as a user sees it: ``golem-proxy proxy
--record --enforce-limits`` between a client and an upstream on 127.0.0.1, then ``show`` and
``export`` on the recording. The frame is recorded (a peer did send it) but marked undelivered,
blocked, in both directions, on a plain route (both observers) and a faulted one: the log,
``show`` and ``export`` of the proxy's own recording agree with the bytes the close says were
forwarded."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_proxy.events import ConnectionClosed, Direction, ExchangeCompleted, FrameSeen
from golem_proxy.live.enforce_limits import BLOCKED
from golem_proxy.recording.format import read_recording
from tests.commands.test_undelivered_cli import REQUEST, PromptUpstream, framed
from tests.support.cli_helpers import run_cli, wait_for_line

NOT_JSON = b"{not json"

MODES = [
    pytest.param([], id="child-process"),
    pytest.param(["--observer", "in-process"], id="in-process"),
    pytest.param(["--fault", "delay:ms=1,p=0", "--observer", "in-process"], id="faulted-route"),
]


def _received_all(sock: socket.socket) -> bytes:
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except ConnectionResetError:
        pass
    return got


def _exported(record: Path, out: Path) -> dict[str, dict[str, object]]:
    """``export`` of ``record`` (it must succeed); its streams by direction, the ones with
    bytes."""
    exported = run_cli("export", str(record), "--format", "streams", "--out", str(out))
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "≠" not in exported.stdout, exported.stdout
    streams = json.loads((out / "index.json").read_text())["streams"]
    return {s["direction"]: s for s in streams if s["bytes"]}


def _frame_line(record: Path, direction: str) -> dict[str, object]:
    return next(
        json.loads(text)
        for text in record.read_text().splitlines()
        if f'"dir":"{direction}"' in text and '"kind":"frame"' in text
    )


@pytest.mark.parametrize("extra", MODES)
def test_an_answer_blocked_by_enforce_limits_is_recorded_undelivered(
    tmp_path: Path, extra: list[str]
) -> None:
    up = PromptUpstream(NOT_JSON)
    record = tmp_path / "session.jsonl"
    route = f"main@127.0.0.1:0=127.0.0.1:{up.port}"
    cli = start_proxy_cli("--route", route, "--record", str(record), "--enforce-limits", *extra)
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=20) as client:
            client.sendall(framed(REQUEST))
            assert _received_all(client) == b""  # the proxy closed it, forwarding nothing
        logged = wait_for_line(cli.process, r"scene\.slow\s+malformed").string
    finally:
        cli.stop()
        up.close()
    assert cli.process.returncode == 0, cli.stderr
    assert f"(undelivered: {BLOCKED})" in logged

    recording = read_recording(str(record))
    (exchange,) = [e for e in recording.events if isinstance(e, ExchangeCompleted)]
    assert exchange.response.undelivered == BLOCKED
    assert exchange.response.delivered_bytes == 0
    (closed,) = [e for e in recording.events if isinstance(e, ConnectionClosed)]
    assert closed.bytes_s2c == 0 and closed.reason.startswith("closed by --enforce-limits")
    assert _frame_line(record, "s2c")["undelivered"] == BLOCKED

    shown = run_cli("show", str(record))
    assert shown.returncode == 0, shown.stderr
    assert f"(undelivered: {BLOCKED})" in shown.stdout

    answers = _exported(record, tmp_path / "streams")["s2c"]
    # The file holds the answer as the upstream sent it; the proxy forwarded none of it.
    assert answers["undelivered_frames"] == 1
    assert answers["recorded_bytes"] == 0 and answers["complete"] is True


@pytest.mark.parametrize("extra", MODES)
def test_a_request_blocked_by_enforce_limits_is_recorded_undelivered(
    tmp_path: Path, extra: list[str]
) -> None:
    up = PromptUpstream()
    record = tmp_path / "session.jsonl"
    route = f"main@127.0.0.1:0=127.0.0.1:{up.port}"
    cli = start_proxy_cli("--route", route, "--record", str(record), "--enforce-limits", *extra)
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=20) as client:
            client.sendall(framed(NOT_JSON))
            assert _received_all(client) == b""
        wait_for_line(cli.process, r"closed by --enforce-limits")
    finally:
        cli.stop()
        up.close()
    assert cli.process.returncode == 0, cli.stderr
    assert not up.answered.is_set()  # the upstream never got it

    recording = read_recording(str(record))
    (frame,) = [e for e in recording.events if isinstance(e, FrameSeen)]
    assert frame.direction is Direction.C2S
    assert frame.undelivered == BLOCKED and frame.delivered_bytes == 0
    (closed,) = [e for e in recording.events if isinstance(e, ConnectionClosed)]
    assert closed.bytes_c2s == 0
    requests = _exported(record, tmp_path / "streams")["c2s"]
    assert requests["undelivered_frames"] == 1
    assert requests["recorded_bytes"] == 0 and requests["complete"] is True
