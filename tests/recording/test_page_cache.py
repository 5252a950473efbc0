"""A growing recording's pages go back to the system once on disk (`recording/page_cache.py`),
and nothing written is lost on the way."""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
from pathlib import Path

import pytest

from golem_proxy.recording.page_cache import RELEASE_EVERY, WrittenPages
from golem_proxy.recording.schema import Header
from golem_proxy.recording.writer import RecordingWriter

pytestmark = pytest.mark.skipif(
    not hasattr(os, "posix_fadvise"), reason="no posix_fadvise on this system"
)

PAGE = mmap.PAGESIZE


def resident_fraction(path: Path, start: int, end: int) -> float:
    """The share of the pages of ``path`` in [start, end) that are in the page cache
    (``mincore`` over a shared read-only mapping, which touches none of them)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    start -= start % PAGE  # a mapping starts on a page
    length = end - start
    pages = (length + PAGE - 1) // PAGE
    fd = os.open(path, os.O_RDONLY)
    try:
        address = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, start)
        assert address not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
        try:
            vector = (ctypes.c_ubyte * pages)()
            assert libc.mincore(address, length, vector) == 0, os.strerror(ctypes.get_errno())
            return sum(byte & 1 for byte in vector) / pages
        finally:
            libc.munmap(address, length)
    finally:
        os.close(fd)


def drops_pages_here(directory: Path) -> bool:
    """Whether this file system lets written-back pages go when asked (tmpfs keeps them:
    they are the file)."""
    path = directory / "control.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.write(fd, b"x" * (64 * PAGE))
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    dropped = resident_fraction(path, 0, 64 * PAGE) < 0.5
    path.unlink()
    return dropped


def test_pages_written_back_are_dropped_and_every_byte_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not drops_pages_here(tmp_path):
        pytest.skip("this file system keeps a file's pages whatever it is asked (tmpfs)")
    asked: list[tuple[int, int]] = []
    drop = os.posix_fadvise

    def spied(fd: int, offset: int, length: int, advice: int) -> None:
        assert advice == os.POSIX_FADV_DONTNEED
        asked.append((offset, offset + length))
        drop(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", spied)
    path = tmp_path / "big.jsonl"
    chunks = [bytes([ord("a") + index]) * RELEASE_EVERY for index in range(4)]
    tail = b"t" * (RELEASE_EVERY // 8)  # under RELEASE_EVERY: appended with no call after it
    with RecordingWriter.create(str(path), Header.new("golem", ())) as writer:
        header_size = path.stat().st_size
        assert writer.stream.fileno() >= 0
        for chunk in chunks:
            writer.write_pieces([chunk])
            os.fsync(writer.stream.fileno())  # the write-back done, as time would do it
        writer.write_pieces([tail])
        # Each call asks about what the two calls before it did not: the first starts a
        # range's write-back, the next drops it (the file's end at each call: e1..e4).
        ends = [header_size + (number + 1) * RELEASE_EVERY for number in range(4)]
        assert asked == [(0, ends[0]), (0, ends[1]), (ends[0], ends[2]), (ends[1], ends[3])]
        # What was written back before the last call is out of the cache (whether the last
        # range is depends on how soon the disk is done with it: not asserted).
        early = resident_fraction(path, 0, header_size + 3 * RELEASE_EVERY - PAGE)
        assert early < 0.1, early
    data = path.read_bytes()
    assert data[header_size:] == b"".join(chunks) + tail


def test_small_writes_make_no_call_until_enough_is_written(tmp_path: Path) -> None:
    path = tmp_path / "small.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        pages = WrittenPages(fd)
        os.write(fd, b"y" * 4096)
        os.fsync(fd)
        pages.wrote(4096)
        assert resident_fraction(path, 0, 4096) == 1.0  # under RELEASE_EVERY: kept
    finally:
        os.close(fd)


def test_a_pipe_is_left_alone(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    try:
        pages = WrittenPages(write_end)
        os.write(write_end, b"z" * 16)
        pages.wrote(RELEASE_EVERY)  # lseek fails on a pipe: nothing dropped, no error
        pages.wrote(RELEASE_EVERY)
        assert os.read(read_end, 64) == b"z" * 16
    finally:
        os.close(read_end)
        os.close(write_end)
