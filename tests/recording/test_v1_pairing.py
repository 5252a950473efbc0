"""Version-1 recordings (the shipped samples among them) still read everywhere: their frames
are paired once, as they are read (`golem_proxy.recording.v1_pairing`), exactly as the tap
paired them, and the views show what they showed before."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from golem_proxy.events import Direction, Event
from golem_proxy.recording.format import RecordingReader

from .tapped_traces import ANSWER, CALL, NOTE, _session, exchanges

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ("error-session", "grasshopper-session", "modelling-session")
GOLDEN = Path(__file__).parent / "golden"

_PAIRING = re.compile(rb',"expects_answer":true|,"answers":\d+|,"orphan":true')


def as_version_1(path: Path, out: Path) -> Path:
    """``path`` as a version-1 writer wrote it: no pairing members, version 1."""
    data = path.read_bytes()
    header, _, rest = data.partition(b"\n")
    header = header.replace(b'"version":2', b'"version":1')
    out.write_bytes(header + b"\n" + _PAIRING.sub(b"", rest))
    return out


def read(path: Path) -> list[Event]:
    with open(path, "rb") as stream:
        return list(RecordingReader(stream))


def mixed(path: Path) -> Path:
    """Pipelined calls answered out of order, a server's request and its client's answer, an
    orphan answer, a notification each way, and a call left unanswered."""
    server_asks = b'{"jsonrpc":"2.0","id":7,"method":"roots/list"}\n'
    client_answers = b'{"jsonrpc":"2.0","id":7,"result":{"roots":[]}}\n'
    return _session(
        path,
        [
            (Direction.C2S, CALL % 1 + CALL % 2 + NOTE % 0),
            (Direction.S2C, ANSWER % 2),
            (Direction.S2C, server_asks + NOTE % 1),
            (Direction.C2S, client_answers),
            (Direction.S2C, ANSWER % 1 + ANSWER % 99),
            (Direction.C2S, CALL % 3),
        ],
    )


def mcp_stray_line(path: Path) -> Path:
    """An MCP server's stray stdout line while a call waits, then the call's answer."""
    stray = b"debug: listing layers\n"
    return _session(path, [(Direction.C2S, CALL % 1), (Direction.S2C, stray + ANSWER % 1)], "mcp")


@pytest.mark.parametrize(
    "build", [mixed, exchanges, mcp_stray_line], ids=["mixed", "exchanges", "mcp-stray-line"]
)
def test_a_version_1_file_reads_as_the_tap_decided(tmp_path: Path, build: object) -> None:
    written = build(tmp_path / "v2.jsonl")  # type: ignore[operator]
    assert isinstance(written, Path)
    old = as_version_1(written, tmp_path / "v1.jsonl")
    assert b'"answers"' not in old.read_bytes()
    assert read(old) == read(written)


def test_the_mixed_session_has_every_decision(tmp_path: Path) -> None:
    frames = [e for e in read(mixed(tmp_path / "m.jsonl")) if hasattr(e, "answers")]
    decided = [
        (f.direction.value, f.index, f.expects_answer, f.answers, f.orphan)  # type: ignore[union-attr]
        for f in frames
    ]
    assert decided == [
        ("c2s", 0, True, None, False),
        ("c2s", 1, True, None, False),
        ("c2s", 2, False, None, False),  # a notification
        ("s2c", 0, False, 1, False),  # answers the second call first
        ("s2c", 1, True, None, False),  # the server asks
        ("s2c", 2, False, None, False),
        ("c2s", 3, False, 1, False),  # the client answers the server's request
        ("s2c", 3, False, 0, False),
        ("s2c", 4, False, None, True),  # an orphan
        ("c2s", 4, True, None, False),  # never answered
    ]


@pytest.mark.parametrize("name", SAMPLES)
def test_the_shipped_version_1_samples_show_as_before(name: str) -> None:
    sample = ROOT / "recordings" / f"{name}.jsonl"
    assert b'"version":1' in sample.read_bytes().partition(b"\n")[0]
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    shown = subprocess.run(
        [sys.executable, "-m", "golem_proxy", "show", "--json", str(sample)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        check=True,
    ).stdout
    assert shown == (GOLDEN / f"{name}.show.jsonl").read_bytes()
