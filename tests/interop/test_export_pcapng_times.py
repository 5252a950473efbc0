"""``export --format pcapng`` stamps packets truthfully: from the header's ``started_at``, and
when the header has none it can read, from the epoch with a note on stderr and in the capture's
comment, never a silent 1970."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from golem_proxy.recording.samples import sample_path
from tests.support.cli_helpers import run_cli
from tests.support.tshark_helpers import needs_tshark, tshark

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
    notes = [line for line in stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1, stderr
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
    assert "note:" not in stderr
    assert section_comment(capture) == ""
    assert 1704063600.0 <= epoch_times(capture)[0] < 1704063600.0 + 60
