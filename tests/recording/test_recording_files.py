"""Files we read and write: only regular files are read (never blocking on a FIFO), and what we
create is private (0600), written whole, and never written into someone else's file."""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path

import pytest

from golem_proxy.recording.format import (
    RecordingError,
    open_private,
    open_recording,
    private_temp_file,
    replacing,
    write_private,
)
from golem_proxy.replay.server import dump_summary
from golem_proxy.tui.export import write_copy
from tests.support.cli_helpers import run_main
from tests.support.trace_builder import golem_session, write_recording

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to own a file as another")
OTHER_USER = 4242


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_fifo_a_device_a_socket_and_a_directory_are_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "x.jsonl"
    os.mkfifo(fifo)  # nobody writes to it: opening it for reading would block forever
    with pytest.raises(RecordingError, match="is a FIFO"):
        open_recording(str(fifo))
    with pytest.raises(RecordingError, match="is a character device"):
        open_recording("/dev/zero")
    link = tmp_path / "zero.jsonl"
    link.symlink_to("/dev/zero")
    with pytest.raises(RecordingError, match="is a character device"):
        open_recording(str(link))
    with pytest.raises(RecordingError, match="is a directory"):
        open_recording(str(tmp_path))
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "s.jsonl"))
        with pytest.raises(RecordingError, match="socket"):
            open_recording(str(tmp_path / "s.jsonl"))


def test_created_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        with open_private(str(tmp_path / "a")) as stream:
            stream.write(b"x")
        write_private(str(tmp_path / "b"), b"y")
        with replacing(str(tmp_path / "c")) as stream:
            stream.write(b"z")
    finally:
        os.umask(old)
    assert [mode(tmp_path / n) for n in "abc"] == [0o600] * 3
    assert (tmp_path / "c").read_bytes() == b"z"
    assert sorted(os.listdir(tmp_path)) == ["a", "b", "c"]  # no temporary file left


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), replacing(str(target), overwrite=True) as stream:
        stream.write(b"half")
        raise RuntimeError("the trace was damaged further on")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.jsonl"]


def test_existing_files_and_links_are_never_written_through(tmp_path: Path) -> None:
    existing = tmp_path / "taken"
    existing.write_bytes(b"mine")
    with pytest.raises(FileExistsError):
        write_private(str(existing), b"new")
    with pytest.raises(FileExistsError):
        open_private(str(existing))
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    for overwrite in (False, True):
        with pytest.raises(OSError, match=r"symlink|exists"):
            write_private(str(link), b"x", overwrite=overwrite)
        with pytest.raises(OSError, match=r"symlink|exists"):
            open_private(str(link), overwrite=overwrite)
    assert not (tmp_path / "elsewhere").exists()
    write_private(str(existing), b"new", overwrite=True)  # the user's own file is replaced
    assert existing.read_bytes() == b"new" and mode(existing) == 0o600


@ROOT_ONLY
def test_a_file_planted_by_another_user_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o1777)
    os.chmod(shared, 0o1777)
    planted = shared / "report.json"
    planted.write_bytes(b"planted")
    os.chmod(planted, 0o666)
    os.chown(planted, OTHER_USER, OTHER_USER)
    with pytest.raises(OSError, match="owned by another user"):
        open_private(str(planted), overwrite=True)
    with pytest.raises(OSError, match="owned by another user"):
        write_private(str(planted), b"x", overwrite=True)
    with pytest.raises(OSError, match="owned by another user"):
        dump_summary({"requests": 0}, str(planted))
    assert planted.read_bytes() == b"planted"


def test_export_and_report_files_are_private(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_bytes(write_recording(golem_session().events))
    code, _, _ = run_main(capsys, "export", str(trace), "--out", str(tmp_path / "streams"))
    assert code in (0, 1)
    written = sorted((tmp_path / "streams").iterdir())
    assert written and all(mode(path) == 0o600 for path in written)
    assert mode(tmp_path / "streams") == 0o700
    flows = tmp_path / "flows.jsonl"
    code, _, _ = run_main(capsys, "export", str(trace), "--format", "jsonl", "--out", str(flows))
    assert code == 0 and mode(flows) == 0o600 and len(flows.read_text().splitlines()) == 14
    report = tmp_path / "report.json"
    dump_summary({"requests": 1, "method": "ping\udc80"}, str(report))
    assert mode(report) == 0o600 and json.loads(report.read_text())["method"] == "ping\udc80"


def test_the_copy_goes_to_a_private_directory_under_an_unpredictable_name() -> None:
    first = write_copy('{"method": "a"}\n', 4)
    second = write_copy('{"method": "b"}\n', 4)
    try:
        assert first != second
        directory = os.path.dirname(first)
        info = os.lstat(directory)
        assert stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()
        assert stat.S_IMODE(info.st_mode) == 0o700
        assert mode(Path(first)) == 0o600
        assert os.path.basename(first).startswith("request-4-")
    finally:
        os.unlink(first)
        os.unlink(second)


def test_a_shared_copy_directory_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    planted = tmp_path / f"golem-proxy-{os.geteuid()}"
    planted.mkdir(mode=0o777)
    os.chmod(planted, 0o777)  # made by someone else, open to all
    stream, path = private_temp_file("request-1-", ".json")
    stream.close()
    assert os.path.dirname(path) != str(planted)
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
