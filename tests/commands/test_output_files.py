"""Commands that write a file never replace the recording they read, and replace another
existing file only when asked (``--overwrite``), as ``proxy --record`` does: a cassette is
never lost to a report, an export or a dissector written over it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.cli_helpers import run_cli
from tests.support.trace_builder import golem_session, write_recording


def recording(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "session.jsonl"
    data = write_recording(golem_session().events)
    path.write_bytes(data)
    return path, data


def refused(done: subprocess.CompletedProcess[str], words: str) -> None:
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert words in line


def test_an_export_never_replaces_the_recording_it_reads(tmp_path: Path) -> None:
    path, data = recording(tmp_path)
    for form in ("jsonl", "pcapng", "parquet"):
        for asked in ((), ("--overwrite",)):
            done = run_cli("export", str(path), "--format", form, "--out", str(path), *asked)
            refused(done, "is a file this command reads")
            assert path.read_bytes() == data
    link = tmp_path / "another-name.jsonl"
    link.symlink_to(path)
    refused(run_cli("export", str(path), "--format", "jsonl", "--out", str(link)), "reads")
    assert path.read_bytes() == data


def test_an_existing_output_is_replaced_only_with_overwrite(tmp_path: Path) -> None:
    path, _ = recording(tmp_path)
    out = tmp_path / "flows.jsonl"
    out.write_text("keep me\n")
    refused(
        run_cli("export", str(path), "--format", "jsonl", "--out", str(out)),
        "already exists (pass --overwrite to replace it)",
    )
    assert out.read_text() == "keep me\n"
    done = run_cli("export", str(path), "--format", "jsonl", "--out", str(out), "--overwrite")
    assert done.returncode == 0, done.stderr
    assert out.read_text().startswith("{")


def test_a_dissector_is_not_written_over_an_existing_file(tmp_path: Path) -> None:
    path, data = recording(tmp_path)
    refused(run_cli("dissector", "--out", str(path)), "already exists")
    assert path.read_bytes() == data
    assert run_cli("dissector", "--out", str(path), "--overwrite").returncode == 0


def test_a_directory_is_refused_as_an_output_overwrite_or_not(tmp_path: Path) -> None:
    path, _ = recording(tmp_path)
    folder = tmp_path / "out"
    folder.mkdir()
    for asked in ((), ("--overwrite",)):
        refused(run_cli("dissector", "--out", str(folder), *asked), "is a directory")
        done = run_cli("export", str(path), "--format", "jsonl", "--out", str(folder), *asked)
        refused(done, "is a directory")
    assert folder.is_dir() and not any(folder.iterdir())


def test_a_replay_refuses_its_outputs_before_it_serves(tmp_path: Path) -> None:
    path, data = recording(tmp_path)
    other = tmp_path / "other.jsonl"
    other.write_bytes(data)
    listen = ("--listen", "127.0.0.1:0", "--gh-listen", "127.0.0.1:0", "--idle-exit", "0.2")
    for option, target, words in (
        ("--record-new", path, "is a file this command reads"),
        ("--report", path, "is a file this command reads"),
        ("--record-new", other, "already exists"),
        ("--report", other, "already exists"),
    ):
        refused(run_cli("replay", str(path), *listen, option, str(target)), words)
    assert path.read_bytes() == data and other.read_bytes() == data
    done = run_cli("replay", str(path), *listen, "--report", str(other), "--overwrite")
    assert done.returncode == 0, done.stderr
    assert other.read_text().startswith("{")
    assert path.read_bytes() == data
