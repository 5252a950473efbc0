"""``golem-proxy proxy --fault`` with ``--redact``, as a user runs it: a frame a fault keeps
from the recording as it came (a response dropped, a request corrupted) still hides, in the
recording, the log and ``show``, the values the rules would have replaced in it, where a later
frame (or the damaged one) repeats them."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.processes import status
from golem_core.messages import Malformed
from golem_core.profiles import GOLEM
from golem_proxy.events import FrameSeen, FramingErrorSeen
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


@OBSERVERS
def test_a_truncated_request_hides_the_token_in_the_bytes_that_went(
    echo_upstream: EchoUpstream, tmp_path: Path, observer: str
) -> None:
    """``--fault truncate`` sends the first part of the request and closes: what is recorded
    is those bytes, a frame cut short that no rule can read (base64 ``raw``). The token the
    rule replaces in the whole request is masked in them, as long as it was (the bytes are
    counted by their length), and the line says so; it was recorded in clear."""
    record = tmp_path / "session.jsonl"
    proxy = InterceptingProxy(
        "--route", f"127.0.0.1:0=127.0.0.1:{echo_upstream.port}", "--record", str(record),
        "--redact", "params.token", "--fault", "truncate:method=auth.login,at=0.9",
        "--observer", observer, "--verbose",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as client:
            login = {"id": "r0", "method": "auth.login", "params": {"token": SECRET, "user": "bob"}}
            client.sendall(GOLEM.encode(login))
            proxy.wait_for(r"fault truncate auth\.login sent")
            proxy.wait_for(r"closed")
    finally:
        stderr = proxy.stop()
    assert proxy.process.returncode == 0, stderr
    assert SECRET not in "".join(proxy.lines)
    assert_nowhere(record, SECRET)
    errors = [e for e in read_recording(str(record)).events if isinstance(e, FramingErrorSeen)]
    assert [e.redacted for e in errors] == [("echo",)]
    assert b"*" * len(SECRET) in errors[0].raw
    sent = len(GOLEM.encode(login))
    assert len(errors[0].raw) == int(0.9 * (sent - 4)) + 4  # the bytes that went, all counted


@OBSERVERS
def test_a_request_truncated_inside_its_token_hides_what_went_of_it(
    echo_upstream: EchoUpstream, tmp_path: Path, observer: str
) -> None:
    """The cut falls 10 characters into the token: those 10 went, and are masked too (they
    were recorded in clear: no whole form of the token was in the bytes)."""
    record = tmp_path / "session.jsonl"
    login = {"id": "r0", "method": "auth.login", "params": {"token": SECRET, "user": "bob"}}
    payload = GOLEM.encode(login)[4:]
    at = (payload.index(SECRET.encode()) + 10.5) / len(payload)
    proxy = InterceptingProxy(
        "--route", f"127.0.0.1:0=127.0.0.1:{echo_upstream.port}", "--record", str(record),
        "--redact", "params.token", "--fault", f"truncate:method=auth.login,at={at:.6f}",
        "--observer", observer,
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as client:
            client.sendall(GOLEM.encode(login))
            proxy.wait_for(r"fault truncate auth\.login sent")
            proxy.wait_for(r"closed")
    finally:
        stderr = proxy.stop()
    assert proxy.process.returncode == 0, stderr
    errors = [e for e in read_recording(str(record)).events if isinstance(e, FramingErrorSeen)]
    assert [e.redacted for e in errors] == [("echo",)]
    assert errors[0].raw.endswith(b'"token": "' + b"*" * 10)
    assert SECRET[:4].encode() not in record.read_bytes()
    assert_nowhere(record, SECRET[:10])


class TokenUpstream(EchoUpstream):
    """An `EchoUpstream` whose every answer carries a token of its own next to what the
    request's ``params`` held (a 4 MiB blob makes a 4 MiB answer)."""

    def result_for(self, request: dict[str, Any]) -> Any:
        return {"token": f"TOKEN-{request['id']}-7f3a", "echo": request.get("params")}


ANSWERS = 40
BLOB = 4 * 1024 * 1024


def _peak_rss_dropping_answers(tmp_path: Path, *redact: str) -> int:
    """The proxy's peak resident memory while `ANSWERS` answers of `BLOB` bytes, pipelined,
    are dropped by a fault (in-process observer, a small budget)."""
    upstream = TokenUpstream()
    record = tmp_path / f"drop{len(redact)}.jsonl"
    proxy = InterceptingProxy(
        "--route", f"127.0.0.1:0=127.0.0.1:{upstream.port}", "--record", str(record),
        "--fault", "drop:dir=s2c", "--observer", "in-process", "--observer-memory", "32",
        *redact,
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as client:
            blob = "x" * BLOB
            for number in range(ANSWERS):
                request = {"id": f"b{number}", "method": "big", "params": {"blob": blob}}
                client.sendall(GOLEM.encode(request))
            proxy.wait_for(rf"fault drop big withheld response: big id=b{ANSWERS - 1}", 60)
            peak = status(proxy.process.pid, "VmHWM")
    finally:
        stderr = proxy.stop()
        upstream.close()
    assert proxy.process.returncode == 0, stderr
    assert b"TOKEN-" not in record.read_bytes()
    return peak


def test_answers_a_fault_drops_are_not_held_to_be_learned_from(tmp_path: Path) -> None:
    """With ``--redact``, an answer a fault drops teaches the tap the values its rules replace
    in it: the forwarding process finds them and hands the tap those strings only, never the
    answer, which it would hold (uncounted by ``--observer-memory``) until the observer got
    to it: 40 answers of 4 MiB dropped peaked at 231 MB against 99 without ``--redact``."""
    plain = _peak_rss_dropping_answers(tmp_path)
    redacted = _peak_rss_dropping_answers(tmp_path, "--redact", "result.token")
    assert plain > 0 and 0 < redacted < plain + 48 * 1024 * 1024, (plain, redacted)
