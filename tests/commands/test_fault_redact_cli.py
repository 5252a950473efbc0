"""``golem-proxy proxy --fault`` with ``--redact``, as a user runs it: a frame a fault keeps
from the recording as it came (a response dropped, a request corrupted) still hides, in the
recording, the log and ``show``, the values the rules would have replaced in it, where a later
frame (or the damaged one) repeats them."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem_core.messages import Malformed
from golem_core.profiles import GOLEM
from golem_proxy.events import FrameSeen
from golem_proxy.recording.format import read_recording
from tests.commands.test_intercept_cli import OBSERVERS, InterceptingProxy
from tests.commands.test_intercept_redact_cli import (
    ISSUED,
    SECRET,
    EchoUpstream,
    IssuingUpstream,
    answer_on,
    assert_nowhere,
)


@pytest.fixture
def echo_upstream() -> Iterator[EchoUpstream]:
    up = EchoUpstream()
    yield up
    up.close()


@pytest.fixture
def issuing_upstream() -> Iterator[IssuingUpstream]:
    up = IssuingUpstream()
    yield up
    up.close()


@OBSERVERS
def test_an_answer_a_fault_drops_still_hides_its_token_where_it_comes_back(
    issuing_upstream: IssuingUpstream, tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "session.jsonl"
    proxy = InterceptingProxy(
        "--route", f"127.0.0.1:0=127.0.0.1:{issuing_upstream.port}", "--record", str(record),
        "--redact", "auth.issue:result.token", "--fault", "drop:method=auth.issue,times=1",
        "--fault-seed", "1", "--observer", observer, "--verbose",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as client:
            client.sendall(GOLEM.encode({"id": "i1", "method": "auth.issue", "params": {}}))
            proxy.wait_for(r"fault drop auth\.issue withheld response")
            check = {"id": "c1", "method": "auth.check", "params": {"token": ISSUED}}
            client.sendall(GOLEM.encode(check))
            assert ISSUED in json.dumps(answer_on(client))  # the client gets the real answer
            proxy.wait_for(r"auth\.check +ok")
    finally:
        stderr = proxy.stop()
    assert proxy.process.returncode == 0, stderr
    assert ISSUED not in "".join(proxy.lines)
    assert_nowhere(record, ISSUED)
    frames = [e for e in read_recording(str(record)).events if isinstance(e, FrameSeen)]
    assert [(f.direction.value, f.message.id, f.redacted) for f in frames] == [
        ("c2s", "i1", ()),
        ("c2s", "c1", ("echo",)),
        ("s2c", "c1", ("echo",)),
    ]


@OBSERVERS
def test_a_corrupted_request_hides_the_token_its_rule_no_longer_finds(
    echo_upstream: EchoUpstream, tmp_path: Path, observer: str
) -> None:
    """The corruption makes the request no JSON (seed 2 flips a byte outside the token): no
    rule finds its path in what is recorded, the bytes as sent, but the token the rule
    replaces in the request as it arrived is hidden there all the same."""
    record = tmp_path / "session.jsonl"
    proxy = InterceptingProxy(
        "--route", f"127.0.0.1:0=127.0.0.1:{echo_upstream.port}", "--record", str(record),
        "--redact", "params.token", "--fault", "corrupt:method=auth.login,times=1",
        "--fault-seed", "2", "--observer", observer, "--verbose",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as client:
            login = {"id": "r0", "method": "auth.login", "params": {"token": SECRET, "user": "bob"}}
            client.sendall(GOLEM.encode(login))
            proxy.wait_for(r"fault corrupt auth\.login flipped payload bytes")
            proxy.wait_for(r"upstream ended its stream")  # it could not read the request
    finally:
        stderr = proxy.stop()
    assert proxy.process.returncode == 0, stderr
    assert SECRET not in "".join(proxy.lines)
    assert_nowhere(record, SECRET)
    frames = [e for e in read_recording(str(record)).events if isinstance(e, FrameSeen)]
    assert [(type(f.message), f.redacted) for f in frames] == [(Malformed, ("echo",))]
