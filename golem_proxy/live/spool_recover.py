"""``golem-proxy recover REC``: the recording of a session killed with ``--observer-spool``
rebuilt from its spool, decoded by the same observing code (observing.py) the killed observing
process ran.

A spool is what one observing process was fed, from the session's start or from the
``RESUME`` record a replacement starts with; its header (spool_header.py) holds that process's
setup and the size the recording had when it started writing. The recording is copied, cut to
that size (what that process wrote, torn line included, goes), and the whole spool is decoded
onto the copy as that process would have: the spool read to its end (no doorbell to wait
for), a take-up reading the copy as it stood then. Decoding depends on the records alone (their
times are the forwarding process's, written in them), so the copy holds what the killed
process would have written, and then a ``session-end`` line saying it was recovered.

The copy replaces REC only when it holds every exchange REC held; otherwise both stay (REC
untouched, the copy beside it as ``NAME.recovered.jsonl``). The spool is removed either way:
what it held is in the copy.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import socket
import tempfile
import threading
from dataclasses import dataclass

import trio

from ..recording.reader import read_recording
from ..recording.schema import RecordingError
from ..recording.spool_left import quiet_about
from ..recording.writer_lock import writer_holds_lock
from .observer_launch import ObserverSetup
from .observing import observe, session_config
from .spool import spool_path
from .spool_header import read_header
from .spool_pickle import safe_loads
from .spool_place import OpenedSpool, SpoolGone, open_spool, remove_dangling
from .spool_trust import check_tied

__all__ = ["RecoverError", "Recovered", "recover"]

COPY_CHUNK = 1 << 20


class RecoverError(Exception):
    """Nothing was changed: one line saying why."""


@dataclass(frozen=True)
class Recovered:
    path: str
    """Where the recovered recording is: REC, or beside it when it held less than REC."""
    exchanges: int
    """The exchanges it holds."""
    before: int
    """The exchanges REC held."""
    replaced: bool
    """REC was replaced by it."""


def recover(path: str) -> Recovered:
    """Rebuild ``path`` from the spool beside it (see the module docstring). Raises
    RecoverError (nothing changed), OSError."""
    spool = spool_path(path)
    quiet_about(path)  # the spool this command is at work on
    try:
        opened = open_spool(spool)
    except FileNotFoundError:
        raise RecoverError(f"{spool}: no spool beside the recording, nothing to recover") from None
    except SpoolGone as exc:
        # Its bytes went with a restart: the link alone tells readers of a spool left.
        removed = "; the link is removed" if remove_dangling(spool, exc.filename) else ""
        raise RecoverError(f"{exc.strerror}{removed}") from None
    except OSError as exc:
        raise RecoverError(str(exc)) from None
    try:
        return _recover(path, opened)
    finally:
        with contextlib.suppress(OSError):
            os.close(opened.fd)


def _recover(path: str, opened: OpenedSpool) -> Recovered:
    spool, spool_fd = opened.link, opened.fd
    record_fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        if writer_holds_lock(record_fd):
            raise RecoverError(
                f"{path} is being written by a live proxy: its spool is that proxy's "
                "(recover what a killed one left)"
            )
        try:
            header = read_header(spool_fd)
            check_tied(header, record_fd)  # before anything is decoded or removed
        except ValueError as exc:
            raise RecoverError(f"{spool}: {exc}") from None
        if header.recorded is None:
            opened.remove()  # the process it was for was fed nothing
            count = len(_exchanges(path))
            return Recovered(path, count, count, False)
        if os.fstat(record_fd).st_size < header.recorded:
            raise RecoverError(f"{path} is shorter than when its spool began: not its recording")
        directory, name = os.path.split(os.path.abspath(path))
        fd, copy = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".recovering")
        try:
            _copy(record_fd, fd, header.recorded)
            os.close(fd)
            fd = -1
            _decode(copy, spool, spool_fd, header.setup, header.records_start)
            return _put_in_place(path, copy, opened)
        finally:
            if fd >= 0:
                os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(copy)
    finally:
        os.close(record_fd)


def _copy(source: int, target: int, size: int) -> None:
    done = 0
    while done < size:
        chunk = os.pread(source, min(COPY_CHUNK, size - done), done)
        if not chunk:
            raise OSError("the recording ended while it was copied")
        os.write(target, chunk)
        done += len(chunk)


def _decode(copy: str, spool: str, spool_fd: int, setup_data: bytes, start: int) -> None:
    """Decode the spool onto ``copy`` as its observing process would have."""
    setup: ObserverSetup = safe_loads(setup_data)
    setup = dataclasses.replace(setup, tui=False, notes=())
    write_fd = os.open(copy, os.O_WRONLY)
    os.lseek(write_fd, 0, os.SEEK_END)
    read_fd = os.open(copy, os.O_RDONLY)
    # The doorbell has rung its last: the spool holds all there will be.
    doorbell, rung = os.pipe()
    os.close(rung)
    ours, theirs = socket.socketpair()
    # The acknowledgements go nowhere; read so that the decoding never waits on them.
    drain = threading.Thread(target=_discard, args=(ours,), daemon=True)
    drain.start()
    try:
        os.lseek(spool_fd, start, os.SEEK_SET)
        config = session_config(setup, write_fd)  # the session's writer owns write_fd now
        trio.run(
            lambda: observe(
                config,
                setup,
                doorbell,
                theirs,
                record_read_fd=read_fd,
                spool_fd=spool_fd,
                recovered=f"recovered from {spool} after the proxy was killed",
            )
        )
    finally:
        theirs.close()
        drain.join(5)
        ours.close()
        os.close(doorbell)
        os.close(read_fd)


def _discard(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while sock.recv(65536):
            pass


def _exchanges(path: str) -> collections.Counter[tuple[object, ...]]:
    """The exchanges ``path`` holds, each by what the wire decided (its connection, route and
    the forwarding process's times of its request and answer)."""
    return collections.Counter(
        (e.conn, e.route, e.request.t, e.response.t) for e in read_recording(path).exchanges()
    )


def _put_in_place(path: str, copy: str, spool: OpenedSpool) -> Recovered:
    try:
        before = _exchanges(path)
    except RecordingError:
        if os.path.getsize(path):
            raise
        before = collections.Counter()  # killed before its header was written
    after = _exchanges(copy)
    count, held = sum(after.values()), sum(before.values())
    if not before - after:
        os.replace(copy, path)
        spool.remove()
        return Recovered(path, count, held, True)
    root, ext = os.path.splitext(path)
    beside = f"{root}.recovered{ext or '.jsonl'}"
    os.link(copy, beside)  # never over another file (FileExistsError); the copy's name goes
    spool.remove()
    return Recovered(beside, count, held, False)
