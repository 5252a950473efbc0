"""``export --format pcapng`` stamps packets truthfully: from the header's ``started_at``, and
when the header has none it can read, from the epoch with a note on stderr and in the capture's
comment, never a silent 1970; in the recording's order, a packet recorded before the one
before it stamped with that one's time, its comment holding its own, never a time going
back."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.events import ConnectionClosed, ConnectionOpened, Direction, Event, FrameSeen
from golem_proxy.recording.samples import sample_path
from tests.support.cli_helpers import run_cli
from tests.support.trace_builder import write_recording
from tests.support.tshark_helpers import needs_tshark, tshark

COMPLAINTS = "_ws.malformed || _ws.expert.severity >= warning || tcp.checksum.status == 0"
CAPINFOS = shutil.which("capinfos")  # shipped with tshark (wireshark-common)


def export(recording: Path, tmp_path: Path) -> tuple[Path, str]:
    """The pcapng export of ``recording`` and what the command said on stderr."""
    capture = tmp_path / "x.pcapng"
    done = run_cli("export", str(recording), "--format", "pcapng", "--out", str(capture))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return capture, done.stderr


def with_started_at(tmp_path: Path, value: object) -> Path:
    """The error-session sample with its header's ``started_at`` set to ``value`` (removed for
    None)."""
    lines = sample_path("error-session").read_bytes().split(b"\n")
    header = json.loads(lines[0])
    if value is None:
        del header["started_at"]
    else:
        header["started_at"] = value
    lines[0] = json.dumps(header).encode()
    path = tmp_path / "odd-start.jsonl"
    path.write_bytes(b"\n".join(lines))
    return path


def epoch_times(capture: Path) -> list[float]:
    """Each packet's time, in seconds since the epoch, in the capture's order."""
    out = tshark("-r", str(capture), "-T", "fields", "-e", "frame.time_epoch")
    return [float(t) for t in out.split()]


def section_comment(capture: Path) -> str:
    assert CAPINFOS is not None
    done = subprocess.run(
        [CAPINFOS, "-k", str(capture)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return " ".join(
        line.split(":", 1)[1].strip()
        for line in done.stdout.splitlines()
        if line.startswith("Capture comment")
    )


@needs_tshark
@pytest.mark.parametrize(
    ("value", "said"),
    [
        (None, "no started_at"),
        ("yesterday", 'a started_at that is not an ISO 8601 time ("yesterday")'),
        ("1969-07-20T20:17:40Z", "a started_at before 1970"),
    ],
    ids=["missing", "unreadable", "before-1970"],
)
def test_a_start_the_header_lacks_is_said_not_silently_1970(
    tmp_path: Path, value: object, said: str
) -> None:
    recording = with_started_at(tmp_path, value)
    capture, stderr = export(recording, tmp_path)
    notes = [line for line in stderr.splitlines() if "started_at" in line]
    assert len(notes) == 1 and notes[0].startswith("note:"), stderr
    assert f"its header has {said}" in notes[0]
    assert "count from 1970-01-01 00:00:00 UTC" in notes[0]
    # The capture says it too, for whoever opens it without having seen the command run.
    assert "count from 1970-01-01 00:00:00 UTC" in section_comment(capture)
    assert said in section_comment(capture)
    assert 0 <= epoch_times(capture)[0] < 60  # the sample starts at t ≈ 0: kept from the epoch


@needs_tshark
def test_a_readable_start_is_used_and_nothing_is_said(tmp_path: Path) -> None:
    recording = with_started_at(tmp_path, "2024-01-01T00:00:00+01:00")
    capture, stderr = export(recording, tmp_path)
    assert "started_at" not in stderr
    assert section_comment(capture) == ""
    assert 1704063600.0 <= epoch_times(capture)[0] < 1704063600.0 + 60


def _frame(conn: int, direction: Direction, t: float, obj: object) -> FrameSeen:
    payload = GOLEM.encode_payload(obj)
    return FrameSeen(
        conn=conn,
        route="main",
        direction=direction,
        index=0,
        t=t,
        size=4 + len(payload),
        payload=payload,
        message=GOLEM.parse(payload, None),
    )


def _call(conn: int, t: float) -> list[Event]:
    """A connection's open, one call and its clean close, from ``t`` on."""
    request = {"id": conn, "method": "ping", "params": {}}
    answer = {"id": conn, "result": {}, "error": None}
    client = f"127.0.0.1:{50000 + conn}"
    return [
        ConnectionOpened(conn=conn, route="main", client=client, upstream="127.0.0.1:9876", t=t),
        _frame(conn, Direction.C2S, t + 0.1, request),
        _frame(conn, Direction.S2C, t + 0.2, answer),
        ConnectionClosed(
            conn=conn, route="main", reason="client closed", t=t + 0.3, bytes_c2s=0,
            bytes_s2c=0, resets=(),
        ),
    ]  # fmt: skip


@needs_tshark
def test_times_that_go_back_keep_the_files_order_and_say_so(tmp_path: Path) -> None:
    # Two sessions in one file, the second's clock starting again (a resumed recording).
    recording = tmp_path / "resumed.jsonl"
    recording.write_bytes(write_recording([*_call(1, 100.0), *_call(2, 0.0)]))
    capture, stderr = export(recording, tmp_path)
    start = 1704067200.0  # the builder's started_at, 2024-01-01T00:00:00Z
    times = epoch_times(capture)
    assert times == sorted(times), times  # never backwards: no reader takes it for damaged
    streams = tshark("-r", str(capture), "-T", "fields", "-e", "tcp.stream").split()
    # Each connection: a handshake, a request, its answer, FIN, FIN, ACK.
    assert streams == ["0"] * 8 + ["1"] * 8  # the file's order: connection 1, then 2
    assert times[:8] == [pytest.approx(start + t, abs=1e-6) for t in [100.0] * 3 + [
        100.1, 100.2, 100.3, 100.3, 100.3]]  # fmt: skip
    # Connection 2's packets keep the last time written, and each says when it was recorded.
    assert times[8:] == [pytest.approx(start + 100.3, abs=1e-6)] * 8
    rows = tshark("-r", str(capture), "-T", "fields", "-e", "frame.comment").splitlines()
    assert rows[:8] == [""] * 8
    assert rows[8].startswith("recorded at t = 0.000000 s, 100.300000 s before the packet")
    assert rows[11].startswith("recorded at t = 0.100000 s, 100.200000 s before the packet")
    notes = [line for line in stderr.splitlines() if line.startswith("note:")]
    assert notes == [
        f"note: {recording}: 8 packets stamped up to 100.30 s from their recorded time, so "
        "that times never go back in the recording's order (each one's comment holds its "
        "recorded time)"
    ]
    assert tshark("-r", str(capture), "-Y", COMPLAINTS).strip() == ""


@needs_tshark
def test_times_in_order_are_kept_as_recorded(tmp_path: Path) -> None:
    recording = tmp_path / "in-order.jsonl"
    recording.write_bytes(write_recording([*_call(1, 1.0), *_call(2, 2.0)]))
    capture, stderr = export(recording, tmp_path)
    assert "note:" not in stderr
    start = 1704067200.0
    assert epoch_times(capture)[8] == pytest.approx(start + 2.0, abs=1e-6)
    assert set(tshark("-r", str(capture), "-T", "fields", "-e", "frame.comment").split()) == set()


@needs_tshark
def test_a_line_written_ahead_of_its_time_is_brought_back_alone(tmp_path: Path) -> None:
    # The sample's second connection opened while the tap had the first's frames still to
    # decode: its open line (t = 0.022227) is written before frames of 0.009851 to 0.021809.
    capture, stderr = export(sample_path("error-session"), tmp_path)
    fields = ["-T", "fields", "-e", "frame.time_epoch", "-e", "tcp.stream", "-e", "frame.comment"]
    rows = [line.split("\t") for line in tshark("-r", str(capture), *fields).splitlines()]
    times = [float(row[0]) for row in rows]
    assert times == sorted(times)
    moved = [index for index, row in enumerate(rows) if row[2]]
    assert moved == [4, 5, 6]  # the handshake of the second connection only
    assert {row[1] for row in rows[4:7]} == {"1"}
    assert rows[4][2].startswith("recorded at t = 0.022227 s, 0.012376 s after the packet after")
    assert times[4] == times[7]  # the time of the first connection's next packet, its own
    start = times[0] - 0.006781  # the sample's first line
    assert times[7] - start == pytest.approx(0.009851, abs=1e-6)
    assert "3 packets stamped up to 12.4 ms from their recorded time" in stderr
