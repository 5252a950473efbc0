"""Safe defaults, checked as a user meets them: loopback-only listening, private files,
redaction before disk, recordings confined to --record-dir, and a reader that an untrusted
trace cannot push into unbounded memory or an unexpected exception."""

from __future__ import annotations

import io
import os
import socket
import stat
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.robustness.crash import ThreadedUpstream
from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.blocking import MessageReader
from golem_core.messages import Malformed
from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, Event, FrameSeen
from golem_proxy.live.redact import REDACTED, Redactor
from golem_proxy.live.tap import ConnectionTap
from golem_proxy.recording.format import (
    Header,
    RecordingError,
    RecordingReader,
    encode_header,
    open_private,
)
from golem_proxy.recording.safe_paths import RecordPathError, resolve_record_path
from tests.support.cli_helpers import run_cli


@pytest.fixture(scope="module")
def upstream() -> Iterator[ThreadedUpstream]:
    with ThreadedUpstream() as running:
        yield running


def run_proxy(*args: str) -> tuple[int, str]:
    """``proxy ARGS`` run to its end: the exit code and everything it printed."""
    done = run_cli("proxy", *args, timeout=30)
    return done.returncode, done.stdout + done.stderr


def test_public_address_needs_the_flag_and_warns(upstream: ThreadedUpstream) -> None:
    code, output = run_proxy("--route", f"0.0.0.0:0={upstream.address}")
    assert code == 2 and "pass --listen-public" in output
    cli = start_proxy_cli("--route", f"0.0.0.0:0={upstream.address}", "--listen-public")
    cli.stop()
    assert "anyone who can reach them" in cli.stderr


def test_recording_and_unix_socket_are_private_and_redacted_before_disk(
    upstream: ThreadedUpstream, tmp_path: Path
) -> None:
    record = tmp_path / "r.jsonl"
    sock_path = tmp_path / "proxy.sock"
    os.umask(0o022)
    cli = start_proxy_cli(
        "--route",
        f"127.0.0.1:0={upstream.address}",
        "--route",
        f"unix:{sock_path}={upstream.address}",
        "--record",
        str(record),
        "--redact",
        "echo:params.token",
        "--redact",
        "result.token",
    )
    try:
        assert stat.S_IMODE(os.stat(sock_path).st_mode) == 0o600
        with socket.create_connection(("127.0.0.1", cli.port), timeout=5) as sock:
            request = {"id": "1", "method": "echo", "params": {"token": "s3cr3t"}}
            reply = MessageReader(sock).ask(request)
            assert reply is not None and reply.obj["result"] == {"token": "s3cr3t"}  # live
    finally:
        cli.stop()
    assert stat.S_IMODE(os.stat(record).st_mode) == 0o600
    text = record.read_text(encoding="utf-8")
    assert "s3cr3t" not in text and REDACTED in text


def test_record_dir_confines_recordings(upstream: ThreadedUpstream, tmp_path: Path) -> None:
    inside = tmp_path / "recs"
    inside.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (inside / "link").symlink_to(outside)
    for bad in ("../escape.jsonl", "link/escape.jsonl", str(outside / "abs.jsonl")):
        code, output = run_proxy(
            "--route",
            f"127.0.0.1:0={upstream.address}",
            "--record-dir",
            str(inside),
            "--record",
            bad,
        )
        assert code == 2 and "outside --record-dir" in output, output
    assert list(outside.iterdir()) == []
    assert resolve_record_path("day1/s.jsonl", str(inside)) == str(inside / "day1/s.jsonl")
    assert resolve_record_path(None, str(inside)).startswith(str(inside / "session-"))
    with pytest.raises(RecordPathError):
        resolve_record_path("x.jsonl", str(tmp_path / "missing"))


def test_a_symlink_at_the_recording_path_is_never_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    link = tmp_path / "r.jsonl"
    link.symlink_to(victim)
    for overwrite in (False, True):
        with pytest.raises(OSError):
            open_private(str(link), overwrite=overwrite)
    assert victim.read_text() == "precious"


def _reader(lines: bytes, max_line: int = 1 << 20) -> list[Event]:
    data = encode_header(Header.new("golem", [])) + lines
    return list(RecordingReader(io.BytesIO(data), max_line=max_line))


def test_huge_line_is_refused_without_reading_it_whole() -> None:
    huge = b'{"kind":"gap","missed":1,"pad":"' + b"x" * (8 << 20) + b'"}\n'
    stream = io.BytesIO(encode_header(Header.new("golem", [])) + huge)
    tracemalloc.start()
    try:
        with pytest.raises(RecordingError, match="longer than"):
            list(RecordingReader(stream, max_line=1 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20  # the 8 MiB line was never held in memory


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deeply_nested_line_or_header_is_a_recording_error(depth: int) -> None:
    nested = b"[" * depth + b"]" * depth + b"\n"
    with pytest.raises(RecordingError, match="nested too deep"):
        _reader(nested)
    with pytest.raises(RecordingError, match="nested too deep"):
        RecordingReader(io.BytesIO(nested))


def test_member_of_the_wrong_type_is_a_recording_error() -> None:
    with pytest.raises(RecordingError, match="line 2"):
        _reader(b'{"kind":"close","conn":1,"bytes":5}\n')


def test_redacting_a_deeply_nested_request_does_not_crash_the_tap() -> None:
    """Regression: the redactor deep-copied the whole message; ~900 nested arrays in a
    request raised RecursionError inside the tap."""
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append, redactor=Redactor(["params.x"]))
    nested = b"[" * 900 + b"]" * 900
    payload = b'{"id":"1","method":"m","params":{"x":"secret","y":' + nested + b"}}"
    tap.process(Direction.C2S, GOLEM.frame_payload(payload), 0.0)
    frame = next(e for e in events if isinstance(e, FrameSeen))
    assert frame.message.obj["params"]["x"] == REDACTED
    assert b"secret" not in frame.payload


@pytest.mark.parametrize(
    "payload",
    [
        b'{"id":1.5,"method":"layer.create","params":{"x":"secret"}}',  # an id GOLEM refuses
        b'{"method":"layer.create","params":{"x":"secret"}}',  # no id
        b'{"id":"2","method":7,"params":{"x":"secret"}}',  # a method that is no string
    ],
)
def test_a_malformed_message_that_is_json_is_redacted_too(payload: bytes) -> None:
    """Its envelope is wrong, its members are there: the rules and the echoes apply to them
    as to a valid message's (it was recorded as it came, secrets and all)."""
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append, redactor=Redactor(["params.x"]))
    tap.process(Direction.C2S, GOLEM.frame_payload(payload), 0.0)
    frame = next(e for e in events if isinstance(e, FrameSeen))
    assert isinstance(frame.message, Malformed) and frame.redacted == ("params.x",)
    assert b"secret" not in frame.payload and frame.message.obj["params"]["x"] == REDACTED


@pytest.mark.parametrize("broken", [b'{nope "secret-value"', b"\xff\xfe secret-value"])
def test_a_redacted_value_is_scrubbed_from_bytes_that_decode_to_nothing(broken: bytes) -> None:
    """No rule finds its path in bytes that are not JSON (they are recorded raw), but a
    value redacted before is still found where its UTF-8 recurs, and replaced."""
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append, redactor=Redactor(["params.x"]))
    first = b'{"id":"1","method":"m","params":{"x":"secret-value"}}'
    tap.process(Direction.C2S, GOLEM.frame_payload(first), 0.0)
    tap.process(Direction.C2S, GOLEM.frame_payload(broken), 0.1)
    frames = [e for e in events if isinstance(e, FrameSeen)]
    assert [frame.redacted for frame in frames] == [("params.x",), ("echo",)]
    assert isinstance(frames[1].message, Malformed)
    assert all(b"secret-value" not in frame.payload for frame in frames)


def test_a_scrub_that_would_mend_broken_bytes_keeps_nothing_of_them() -> None:
    """The value carried the fault (an unescaped quote): scrubbed out, the bytes would read
    as a valid request that never crossed the wire. They are recorded as the placeholder
    alone, as malformed as they came."""
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append, redactor=Redactor(["params.x"]))
    first = b'{"id":"1","method":"m","params":{"x":"a\\"bcdefgh"}}'
    broken = b'{"id":"2","method":"m","params":{"y":"a"bcdefgh"}}'
    for payload in (first, broken):
        tap.process(Direction.C2S, GOLEM.frame_payload(payload), 0.0)
    frame = [e for e in events if isinstance(e, FrameSeen)][1]
    assert frame.redacted == ("echo",) and frame.payload == REDACTED.encode()
    assert isinstance(frame.message, Malformed) and frame.message.kind.value == "invalid-json"


def test_too_deep_to_decode_is_malformed_and_recorded_raw() -> None:
    """Past the JSON decoder's depth the payload is malformed; redaction cannot apply to what
    cannot be decoded, so it is recorded raw (documented in docs/reliability.md)."""
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append, redactor=Redactor(["params.x"]))
    payload = b'{"id":"1","method":"m","params":' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    tap.process(Direction.C2S, GOLEM.frame_payload(payload), 0.0)
    frame = next(e for e in events if isinstance(e, FrameSeen))
    assert frame.message.kind.value == "invalid-json"  # type: ignore[union-attr]
