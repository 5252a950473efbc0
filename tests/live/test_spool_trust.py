"""A spool is trusted only as far as it is this user's and its recording's: ``golem-proxy
recover`` refuses, in one line, a spool that is not a regular file, one others may write or
own, one made beside another recording, and a pickle naming anything the proxy never pickles
(nothing of it run); it removes only what it opened; readers say what a spool beside a
recording means, a link to bytes gone included. The real command line, a real killed session
(loopback sockets, a slowed observing process) for the readers' notes and the tie."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from golem_proxy.live.observer_launch import TEST_MODULE
from golem_proxy.live.spool_header import write_header
from golem_proxy.live.spool_place import open_spool
from tests.live.observer_child_helpers import golem_calls, observed_proxy
from tests.live.test_spool_recover import SLOW, _calls, _golem, _kill_everything

HEADER = (
    '{"format":"golem-proxy-recording","version":2,"profile":"golem","routes":[],'
    '"started_at":"2024-01-01T00:00:00.000000Z","clock":"t","tool":"t","redact":[]}\n'
)


class _Runs:
    """Pickled, names a function that writes ``marker``: what a crafted spool would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, ...]]:
        return (shutil.copyfile, (sys.executable, str(self.marker)))


def _spool_file(path: Path, setup: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        write_header(fd, setup)
    finally:
        os.close(fd)


def _recover(record: Path) -> subprocess.CompletedProcess[str]:
    return _golem("recover", str(record), cwd=record.parent)


def test_a_crafted_pickle_in_a_spool_is_refused_and_never_run(tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    record.write_text(HEADER)
    marker = tmp_path / "ran"
    _spool_file(tmp_path / "session.jsonl.spool", pickle.dumps(_Runs(marker)))
    done = _recover(record)
    assert not marker.exists()
    assert done.returncode != 0
    assert done.stderr.count("\n") == 1, done.stderr
    assert "names shutil.copyfile, which the proxy never pickles there: refused" in done.stderr


@pytest.mark.parametrize("kind", ["fifo", "link to a fifo", "directory", "group-writable"])
def test_recover_refuses_what_is_no_spool_at_once(tmp_path: Path, kind: str) -> None:
    record = tmp_path / "session.jsonl"
    record.write_text(HEADER)
    spool = tmp_path / "session.jsonl.spool"
    elsewhere = tmp_path / "shm"
    elsewhere.mkdir(mode=0o700)
    if kind == "fifo":
        os.mkfifo(spool, 0o600)
    elif kind == "link to a fifo":
        os.mkfifo(elsewhere / "golem-proxy-x.spool", 0o600)
        os.symlink(elsewhere / "golem-proxy-x.spool", spool)
    elif kind == "directory":
        spool.mkdir()
    else:
        _spool_file(spool, b"")
        os.chmod(spool, 0o620)
    done = _recover(record)  # a FIFO opened for reading waited for a writer forever
    assert done.returncode != 0
    assert done.stderr.count("\n") == 1, done.stderr
    said = {
        "fifo": f"{spool} is a FIFO, not a spool",
        "link to a fifo": f"{spool} links to {elsewhere}/golem-proxy-x.spool, a FIFO, not a spool",
        "directory": f"{spool} is a directory, not a spool",
        "group-writable": f"{spool}: a spool others may write (mode 620",
    }[kind]
    assert said in done.stderr, done.stderr


def test_a_link_into_a_directory_anyone_may_write_is_refused(tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    record.write_text(HEADER)
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # no sticky bit: anyone may swap the file in it
    _spool_file(shared / "golem-proxy-x.spool", b"")
    os.symlink(shared / "golem-proxy-x.spool", tmp_path / "session.jsonl.spool")
    done = _recover(record)
    assert done.returncode != 0
    assert "which anyone may write and which has no sticky bit" in done.stderr, done.stderr


def test_removal_takes_only_what_was_opened(tmp_path: Path) -> None:
    memory = tmp_path / "shm"
    memory.mkdir(mode=0o700)
    ours, other = memory / "golem-proxy-a.spool", memory / "golem-proxy-b.spool"
    _spool_file(ours, b"")
    _spool_file(other, b"")
    link = tmp_path / "session.jsonl.spool"
    os.symlink(ours, link)
    opened = open_spool(str(link))
    os.close(opened.fd)
    # Swapped while the spool was decoded: the names now lead to another session's spool.
    os.unlink(link)
    os.symlink(other, link)
    opened.remove()
    assert other.exists() and os.path.islink(link)
    assert not ours.exists()


def test_readers_and_recover_say_what_a_spool_beside_a_recording_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TEST_MODULE, SLOW)
    record = tmp_path / "session.jsonl"
    spool = Path(f"{record}.spool")
    with observed_proxy(record, "--observer-spool") as cli:
        golem_calls(cli.port, _calls(150))
        live = _golem("show", str(record), cwd=tmp_path)
        _kill_everything(cli.process.pid)
        cli.process.communicate()
    # While the proxy lives, the recording trails the wire by what the spool holds.
    assert "recording through a spool" in live.stderr, live.stderr
    assert f"it may trail the wire by what its spool ({spool}) holds" in live.stderr
    assert "100 ms" not in live.stderr

    killed = _golem("show", str(record), cwd=tmp_path)
    assert f"it may trail the wire by what its spool ({spool}) holds" in killed.stderr
    assert f"golem-proxy recover {record} rebuilds it" in killed.stderr
    assert "100 ms" not in killed.stderr

    # Another session's recording (its header's start differs), the spool linked beside it:
    # refused, nothing decoded onto it.
    data = os.path.realpath(spool)
    other = tmp_path / "other.jsonl"
    lines = record.read_bytes().split(b"\n", 1)
    started = json.loads(lines[0])["started_at"]
    other.write_bytes(lines[0].replace(started.encode(), b"2020-01-01T00:00:00.000000Z") + b"\n")
    os.symlink(data, f"{other}.spool")
    refused = _recover(other)
    assert refused.returncode != 0
    assert "made for a session started at" in refused.stderr, refused.stderr
    assert os.path.exists(data)

    # The recording and its spool copied elsewhere together (another file system, a CI
    # artifact): the same session, whatever the inodes, is recovered there.
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.copyfile(record, moved / "session.jsonl")
    shutil.copyfile(data, moved / "session.jsonl.spool")
    os.chmod(moved / "session.jsonl.spool", 0o600)
    recovered = _recover(moved / "session.jsonl")
    assert recovered.returncode == 0, recovered.stderr
    assert "recovered, 150 exchanges" in recovered.stdout + recovered.stderr
    assert os.path.exists(data)  # the original's spool is untouched

    # The machine restarted: the link names nothing.
    os.unlink(data)
    gone = _golem("show", str(record), cwd=tmp_path)
    said = f"note: {spool} links to {data}, which is gone"
    assert said in gone.stderr and f"golem-proxy recover {record} removes the link" in gone.stderr
    done = _recover(record)
    assert "nothing to recover; the link is removed" in done.stderr, done.stderr
    assert not os.path.lexists(spool)
    after = _golem("show", str(record), cwd=tmp_path)
    assert str(spool) not in after.stderr, after.stderr
