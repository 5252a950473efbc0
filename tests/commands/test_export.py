"""``golem-proxy export``: the rebuilt streams are the bytes that crossed, byte for byte."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import random
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from golem_core.profiles import JSONRPC_NDJSON
from golem_proxy.events import Direction, Event, FrameSeen
from golem_proxy.recording.format import RecordingReader, read_recording
from golem_proxy.recording.streams import rebuild_streams, write_streams
from tests.support.cli_helpers import cli_env, run_cli, run_main
from tests.support.trace_builder import TapSimulator, golem_session, write_recording


def test_streams_round_trip_byte_exact(tmp_path: Path) -> None:
    tap = golem_session()
    path = tmp_path / "session.jsonl"
    path.write_bytes(write_recording(tap.events))
    out = tmp_path / "streams"
    result = run_cli("export", str(path), "--format", "streams", "--out", str(out))
    assert result.returncode == 0, result.stderr
    index = json.loads((out / "index.json").read_text(encoding="utf-8"))
    assert index["profile"] == "golem" and len(index["streams"]) == 6
    for entry in index["streams"]:
        fed = tap.fed(entry["conn"], Direction(entry["direction"]))
        data = (out / entry["file"]).read_bytes()
        assert data == fed, entry["file"]
        assert entry["bytes"] == len(fed)
        assert entry["sha256"] == hashlib.sha256(fed).hexdigest()
        assert entry["exact"] is True
        assert entry["complete"] is (True if entry["conn"] != 3 else None)
    assert (out / "conn-0002-c2s.bin").read_bytes()[-4:] != b"xxxx"  # ends with request b2
    gh = next(s for s in index["streams"] if s["file"] == "conn-0002-c2s.bin")
    assert (gh["frames"], gh["frame_errors"], gh["discarded_bytes"]) == (2, 1, 1500)


def test_random_chunking_and_garbage_round_trip() -> None:
    """Whatever the bytes and however they arrive, the recording rebuilds them."""
    rng = random.Random(4)
    for _ in range(20):
        tap = TapSimulator(cap=256)
        tap.open(1)
        sent = bytearray()
        for _ in range(rng.randint(1, 12)):
            choice = rng.random()
            if choice < 0.5:
                piece = tap.profile.encode(
                    {"id": str(rng.random()), "method": "ping", "params": {}}
                )
            elif choice < 0.8:
                piece = tap.profile.frame_payload(rng.randbytes(rng.randint(0, 40)))
            else:
                piece = rng.randint(257, 600).to_bytes(4, "big") + rng.randbytes(
                    rng.randint(0, 700)
                )
            sent += piece
        tap.send(1, Direction.C2S, bytes(sent), chunk=rng.randint(1, 64))
        tap.close(1)
        events = list(RecordingReader(io.BytesIO(write_recording(tap.events))))
        streams = rebuild_streams(events, tap.profile)
        assert bytes(streams[(1, Direction.C2S)].data) == bytes(sent)
        assert streams[(1, Direction.C2S)].complete is True


def test_ndjson_streams_use_newline_framing(tmp_path: Path) -> None:
    tap = TapSimulator(JSONRPC_NDJSON)
    tap.open(1)
    tap.send(1, Direction.C2S, b'{"jsonrpc":"2.0","id":1,"method":"state","params":{}}\n', chunk=5)
    tap.send(1, Direction.S2C, b'{"jsonrpc":"2.0","id":1,"result":{"theme":"dark"}}\n{bad\n')
    tap.close(1)
    path = tmp_path / "scrybe.jsonl"
    path.write_bytes(write_recording(tap.events, "jsonrpc-ndjson"))
    streams = rebuild_streams(read_recording(str(path)).events, JSONRPC_NDJSON)
    for direction in Direction:
        assert bytes(streams[(1, direction)].data) == tap.fed(1, direction)


def test_redacted_streams_are_flagged_not_exact(tmp_path: Path) -> None:
    tap = golem_session()
    events = [
        dataclasses.replace(e, redacted=("x",)) if isinstance(e, FrameSeen) and e.conn == 3 else e
        for e in tap.events
    ]
    path = tmp_path / "redacted.jsonl"
    path.write_bytes(write_recording(events))
    code = run_cli("export", str(path), "--out", str(tmp_path / "out"))
    assert code.returncode == 0
    index = json.loads((tmp_path / "out" / "index.json").read_text(encoding="utf-8"))
    entry = next(s for s in index["streams"] if s["file"] == "conn-0003-c2s.bin")
    assert entry["exact"] is False and entry["redacted_frames"] == 1
    assert "not exact" in code.stdout


def test_lost_bytes_are_a_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tap = golem_session()
    events = [
        e for e in tap.events if not (isinstance(e, FrameSeen) and e.conn == 1 and e.index == 2)
    ]
    path = tmp_path / "lossy.jsonl"
    path.write_bytes(write_recording(events))
    code, _out, err = run_main(capsys, "export", str(path), "--out", str(tmp_path / "o"))
    assert code == 1 and "differ" in err


def test_jsonl_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(write_recording(golem_session().events))
    target = tmp_path / "flows.jsonl"
    code, _, _ = run_main(capsys, "export", str(path), "--format", "jsonl", "--out", str(target))
    assert code == 0
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 14 and rows[0]["request"]["method"] == "ping"
    assert rows[0]["response"]["result"] == {"alive": True}
    code, out, _ = run_main(capsys, "export", str(path), "--format", "jsonl")
    assert code == 0 and len(out.splitlines()) == 14


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(write_recording(golem_session().events))
    code, _, err = run_main(capsys, "export", str(path))
    assert code == 2 and "--out" in err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run_main(capsys, "export", str(path), "--out", str(blocker / "sub"))
    assert code == 2 and "cannot write" in err


COMMANDS = [
    ["show"],
    ["show", "--json"],
    ["stats"],
    ["stats", "--json"],
    ["check"],
    ["check", "--json"],
    ["export", "--format", "jsonl"],
]


def test_every_command_reads_a_truncated_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_recording(golem_session().events)
    header_end = data.index(b"\n") + 1
    rng = random.Random(7)
    cuts = [*sorted(rng.sample(range(header_end, len(data)), 6)), header_end, len(data) - 1]
    for cut in cuts:
        path = tmp_path / f"cut-{cut}.jsonl"
        path.write_bytes(data[:cut])
        for command in [*COMMANDS, ["export", "--out", str(tmp_path / f"s-{cut}")]]:
            code, _, err = run_main(capsys, command[0], str(path), *command[1:])
            # A file cut short is no whole session: check says so (3).
            expected = (0, 1, 3) if command[0] == "check" else (0, 1)
            assert code in expected, (cut, command, err)
            assert "Traceback" not in err
            if cut < len(data) and data[cut - 1 : cut] != b"\n":
                assert "incomplete line" in err
    # Cut inside the header: refused with a one-line message.
    path = tmp_path / "header.jsonl"
    path.write_bytes(data[: header_end - 10])
    for command in COMMANDS:
        code, _, err = run_main(capsys, command[0], str(path), *command[1:])
        assert code == 2 and "header" in err


def test_streams_go_straight_to_files_without_being_held(tmp_path: Path) -> None:
    tap = golem_session()
    events = read_recording_events(tmp_path, tap)
    expected = rebuild_streams(events, tap.profile)
    out = tmp_path / "out"
    out.mkdir()
    written = write_streams(iter(events), tap.profile, str(out))
    assert [s.filename for s in written] == [s.filename for s in expected.values()]
    for stream in written:
        kept = expected[(stream.conn, stream.direction)]
        assert stream.data == bytearray()  # nothing held in memory
        assert (out / stream.filename).read_bytes() == bytes(kept.data)
        assert stream.to_json() == kept.to_json()


def test_a_damaged_line_leaves_no_stream_file(tmp_path: Path) -> None:
    lines = write_recording(golem_session().events).splitlines(keepends=True)
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(b"".join(lines[:-2]) + b'{"seq":1,"t":NaN,"kind":"gap"}\n' + lines[-1])
    out = tmp_path / "out"
    result = run_cli("export", str(path), "--out", str(out))
    assert result.returncode == 2 and "NaN" in result.stderr
    assert list(out.iterdir()) == []


def read_recording_events(tmp_path: Path, tap: TapSimulator) -> list[Event]:
    path = tmp_path / "session.jsonl"
    path.write_bytes(write_recording(tap.events))
    return read_recording(str(path)).events


CONNECTIONS_AT_ONCE = 6000


def test_streams_of_more_connections_open_at_once_than_files_may_be_open(tmp_path: Path) -> None:
    """Each open connection has two stream files being written: with 6,000 open together,
    and a process allowed 1,024 open files, every stream is still written whole."""
    tap = TapSimulator()
    for conn in range(1, CONNECTIONS_AT_ONCE + 1):
        tap.open(conn)
        tap.request(conn, {"id": f"r{conn}", "method": "ping", "params": {}})
    for conn in range(1, CONNECTIONS_AT_ONCE + 1):
        tap.respond(conn, {"id": f"r{conn}", "result": {"conn": conn}, "error": None})
    for conn in range(1, CONNECTIONS_AT_ONCE + 1):
        tap.close(conn)
    path = tmp_path / "crowd.jsonl"
    path.write_bytes(write_recording(tap.events))
    out = tmp_path / "out"

    def few_open_files() -> None:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))

    done = subprocess.run(
        [sys.executable, "-m", "golem_proxy", "export", str(path), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=few_open_files,
        env=cli_env(),
    )
    assert done.returncode == 0, done.stderr
    index = json.loads((out / "index.json").read_text())
    streams = index["streams"]
    assert len(streams) == 2 * CONNECTIONS_AT_ONCE
    assert all(stream["complete"] for stream in streams)
    for conn in (1, CONNECTIONS_AT_ONCE // 2, CONNECTIONS_AT_ONCE):
        for direction in Direction:
            written = out / f"conn-{conn:04d}-{direction.value}.bin"
            assert written.read_bytes() == tap.fed(conn, direction)
