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

The copy replaces REC only when the decoding read the spool to its end and the copy holds
every exchange REC held; the spool is then removed (what it held is in the copy). Otherwise
REC and the spool both stay as they were, the copy beside them as ``NAME.recovered.jsonl``:
REC holds exchanges the decoding does not, or the spool stops midway at a record that does not
read (`Recovered.stopped`: its offset and what is wrong), and the copy holds what precedes it.

REC is checked before anything is decoded: it must read as a recording (its header torn by the
kill is fine when the spool holds the whole session: it began with REC empty), and the spool's
header must cut it at the end of a line.
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
from typing import Optional

import trio

from ..events import ConnectionClosed, ExchangeCompleted, SessionEnded
from ..recording.files import open_recording
from ..recording.reader import RecordingReader
from ..recording.schema import DEFAULT_MAX_LINE, RecordingError
from ..recording.spool_left import quiet_about
from ..recording.writer_lock import writer_holds_lock
from .handoff_connections import DOUBT, KILLED
from .observer_launch import ObserverSetup
from .observing import observe, session_config
from .spool import spool_path
from .spool_header import read_header
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
    stopped: Optional[str] = None
    """Where and why the decoding stopped before the spool's end (REC and the spool then left
    as they were); None: the spool was decoded to its end."""
    unsure: int = 0
    """Connections the kill left open whose close says the last chunk the spool holds of a
    way may not have been sent on (`handoff_connections.DOUBT`)."""


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
            tied = check_tied(header, record_fd)  # before anything is decoded or removed
        except ValueError as exc:
            raise RecoverError(f"{spool}: {exc}") from None
        setup = dataclasses.replace(tied, tui=False, notes=())
        if header.recorded is None:
            opened.remove()  # the process it was for was fed nothing
            count = sum(_held(path, record_fd, None).values())
            return Recovered(path, count, count, False)
        if os.fstat(record_fd).st_size < header.recorded:
            raise RecoverError(f"{path} is shorter than when its spool began: not its recording")
        before = _held(path, record_fd, header.recorded)
        _check_cut(path, spool, record_fd, header.recorded)
        directory, name = os.path.split(os.path.abspath(path))
        fd, copy = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".recovering")
        try:
            _copy(record_fd, fd, header.recorded)
            os.close(fd)
            fd = -1
            stopped = _decode(copy, spool, spool_fd, setup, header.records_start)
            try:
                after, ended, unsure = _scan(copy)
            except RecordingError as exc:
                where = f"line {exc.line}: " if exc.line is not None else ""
                raise RecoverError(
                    f"{spool}: decoded onto {path} as it was when the spool began, it does not "
                    f"read ({where}{exc.what}): not that recording's spool; nothing changed"
                ) from None
            if stopped is None and not ended:
                stopped = "the recovered lines stop before the spool's end (said above)"
            done = _put_in_place(path, copy, opened, before, after, stopped)
            return dataclasses.replace(done, unsure=unsure)
        finally:
            if fd >= 0:
                os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(copy)
    finally:
        os.close(record_fd)


def _held(path: str, record_fd: int, recorded: Optional[int]) -> collections.Counter[Key]:
    """The exchanges REC holds, read before anything is decoded. A REC that does not read is
    refused (RecoverError), but one whose whole content is a first line the kill tore (or
    nothing) when the spool holds the session from its start (``recorded`` 0): the copy is
    cut to nothing then, and rebuilt whole from the spool."""
    try:
        return _scan(path)[0]
    except RecordingError as exc:
        size = os.fstat(record_fd).st_size
        torn = size <= DEFAULT_MAX_LINE and b"\n" not in os.pread(record_fd, size, 0)
        if recorded == 0 and torn:
            return collections.Counter()
        raise RecoverError(f"{exc}; nothing decoded, nothing changed") from None


def _check_cut(path: str, spool: str, record_fd: int, recorded: int) -> None:
    """The spool's header cuts REC at the end of a line (what the observing process found
    there when it began). Raises RecoverError."""
    if recorded and os.pread(record_fd, 1, recorded - 1) != b"\n":
        raise RecoverError(
            f"{spool}: its header says {path} had {recorded} bytes when it began, which cuts "
            "a line of it in two: not that recording's spool; nothing changed"
        )


def _copy(source: int, target: int, size: int) -> None:
    done = 0
    while done < size:
        chunk = os.pread(source, min(COPY_CHUNK, size - done), done)
        if not chunk:
            raise OSError("the recording ended while it was copied")
        os.write(target, chunk)
        done += len(chunk)


def _decode(
    copy: str, spool: str, spool_fd: int, setup: ObserverSetup, start: int
) -> Optional[str]:
    """Decode the spool onto ``copy`` as its observing process would have. Returns where and
    why it stopped before the spool's end (a record that does not read), None: at its end."""
    stopped: list[str] = []
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
                on_broken=stopped.append,
            )
        )
    finally:
        theirs.close()
        drain.join(5)
        ours.close()
        os.close(doorbell)
        os.close(read_fd)
    return stopped[0] if stopped else None


def _discard(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while sock.recv(65536):
            pass


Key = tuple[object, ...]


def _scan(path: str) -> tuple[collections.Counter[Key], bool, int]:
    """The exchanges ``path`` holds, each by what the wire decided (its connection, route and
    the forwarding process's times of its request and answer), whether its last event is
    a ``session-end``, and how many closes say a last chunk may not have been sent on
    (`Recovered.unsure`). Read one event at a time: a recording of one huge frame's lines is
    never held whole. Raises RecordingError, OSError."""
    found: collections.Counter[Key] = collections.Counter()
    last: object = None
    unsure = 0
    # Whatever follows the doubt (bytes said undelivered late, `_told_late`): counted all
    # the same.
    doubt = f"{KILLED}; {DOUBT.split('{}')[0]}"
    with open_recording(path) as stream:
        if not os.fstat(stream.fileno()).st_size:
            return found, False, 0  # killed before its header was written
        for event in RecordingReader(stream, path=path):
            last = event
            if isinstance(event, ExchangeCompleted):
                found[(event.conn, event.route, event.request.t, event.response.t)] += 1
            elif isinstance(event, ConnectionClosed):
                unsure += event.reason.startswith(doubt)
    return found, isinstance(last, SessionEnded), unsure


def _put_in_place(
    path: str,
    copy: str,
    spool: OpenedSpool,
    before: collections.Counter[Key],
    after: collections.Counter[Key],
    stopped: Optional[str],
) -> Recovered:
    count, held = sum(after.values()), sum(before.values())
    if stopped is None and not before - after:
        os.replace(copy, path)
        spool.remove()
        return Recovered(path, count, held, True)
    root, ext = os.path.splitext(path)
    beside = f"{root}.recovered{ext or '.jsonl'}"
    try:
        os.link(copy, beside)  # never over another file; the copy's name goes
    except FileExistsError:
        raise RecoverError(
            f"{beside} is there already (an earlier recover's?): move it away and run recover "
            "again; nothing changed"
        ) from None
    if stopped is None:
        spool.remove()  # what it held is in the copy
    return Recovered(beside, count, held, False, stopped)
