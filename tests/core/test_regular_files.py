"""Reading a file a user names: only a regular file is read, never blocking on a FIFO or
reading a device without end, and no more than the bound the caller gives."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from golem_core.regular_files import FileTooLarge, NotARegularFile, read_regular


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "x.json"
    os.mkfifo(fifo)  # nobody writes to it: a blocking open would wait forever
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            read_regular(str(fifo), 100)
        except BaseException as exc:  # handed to the test's thread
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():
        with open(fifo, "wb"):  # lets the blocked open go on, to an empty file
            pass
        reader.join(timeout=10)
        pytest.fail("reading a FIFO blocked until a writer came")
    assert len(outcome) == 1 and isinstance(outcome[0], NotARegularFile), outcome
    assert outcome[0].kind == "a FIFO"
    assert outcome[0].filename == str(fifo)
    assert str(outcome[0]) == f"{fifo}: a FIFO, not a regular file"


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_device_and_a_directory_are_refused_unread(tmp_path: Path) -> None:
    with pytest.raises(NotARegularFile, match="a character device"):
        read_regular("/dev/zero", 100)
    link = tmp_path / "zero.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(NotARegularFile, match="a character device"):
        read_regular(str(link), 100)
    with pytest.raises(NotARegularFile, match="a directory"):
        read_regular(str(tmp_path), 100)


def test_a_file_is_read_whole_up_to_the_limit_and_refused_past_it(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b"x" * 100)
    assert read_regular(str(path), 100) == b"x" * 100
    with pytest.raises(FileTooLarge, match="over 99 bytes") as refused:
        read_regular(str(path), 99)
    assert refused.value.limit == 99
    with pytest.raises(FileTooLarge, match="larger than 1 MiB"):
        with open(path, "wb") as file:
            file.truncate(1024 * 1024 + 1)
        read_regular(str(path), 1024 * 1024)


def test_a_missing_file_is_the_os_error() -> None:
    with pytest.raises(FileNotFoundError):
        read_regular("/nonexistent/x.json", 100)
