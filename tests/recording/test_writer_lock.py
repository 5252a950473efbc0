"""A recording's writer holds a lock on its file while it writes it, and says so in the
header; a reader finds it held while the writer lives and free once the file is closed,
however it was opened; a copy in memory keeps the header it was given, and a writer that
could not take the lock does not say it holds it."""

from __future__ import annotations

import fcntl
import io
import json
import os
from pathlib import Path

from golem_proxy.recording.files import open_private
from golem_proxy.recording.format import RecordingReader, RecordingWriter, open_recording
from golem_proxy.recording.writer_lock import WRITER_LOCK, writer_holds_lock
from tests.support.sessions import golem_header


def _header(path: Path) -> dict[str, object]:
    with open(path, "rb") as stream:
        header = json.loads(stream.readline())
    assert isinstance(header, dict)
    return header


def test_the_writer_holds_its_lock_while_the_file_is_open(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    writer = RecordingWriter.create(str(path), golem_header())
    with open(path, "rb") as reader:
        assert writer_holds_lock(reader.fileno()) is True
        assert _header(path)[WRITER_LOCK] == "flock"
        writer.close()
        assert writer_holds_lock(reader.fileno()) is False
    # Asking took nothing: a new writer of the same file gets the lock.
    again = RecordingWriter.create(str(path), golem_header(), overwrite=True)
    assert _header(path)[WRITER_LOCK] == "flock"
    again.close()


def test_a_shared_descriptor_keeps_the_lock_while_any_holder_has_it(tmp_path: Path) -> None:
    # The forwarding process's descriptor, handed to the observing process (a duplicate).
    path = tmp_path / "shared.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    kept = os.dup(fd)
    writer = RecordingWriter(os.fdopen(fd, "wb"), golem_header())
    writer.close()
    with open(path, "rb") as reader:
        assert writer_holds_lock(reader.fileno()) is True  # the other holder still writes
        os.close(kept)
        assert writer_holds_lock(reader.fileno()) is False


def test_the_header_says_only_what_this_writer_holds(tmp_path: Path) -> None:
    path = tmp_path / "written.jsonl"
    RecordingWriter.create(str(path), golem_header()).close()
    with open_recording(str(path)) as stream:
        header = RecordingReader(stream).header
    assert header.extra[WRITER_LOCK] == "flock"
    # A copy in memory is the same bytes (no file, nothing held, nothing to say otherwise).
    copy = io.BytesIO()
    RecordingWriter(copy, header).flush()
    assert copy.getvalue() == path.read_bytes().splitlines(keepends=True)[0]
    # A file whose lock another holds: this writer holds none and its header says none.
    # (Written through a descriptor of that same file: one created to replace it, as
    # `--overwrite` does, is a new file, whose lock its writer holds.)
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"")
    with open(other, "rb") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
        RecordingWriter(open_private(str(other), overwrite=True), header).close()
    assert WRITER_LOCK not in _header(other)
