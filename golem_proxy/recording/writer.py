"""Writing a recording (docs/recording-format.md): the header at once, then one line per event.

Frames are stored as readable JSON (`frame_lines`): a payload that is valid JSON on one line has
its exact bytes spliced in as the last member, others are stored base64. Every byte that
crossed the proxy can be rebuilt.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import IO, Any, Optional, Union

from golem_core.profiles import Profile, get_profile

from .. import events
from ..events import Direction, Event
from .files import discard_beside, open_beside, put_in_place
from .frame_lines import b64, encode_frame, json_str, json_text, tool_calls_json
from .page_cache import WrittenPages
from .schema import JSON_SAFE, SPOOL_FULL_KIND, VERSION, Header, dumps, encode_header
from .shared_file import RESTARTED_KIND, STOPPED_KIND, session_end_line, session_line
from .writer_lock import WRITER_LOCK, WRITER_LOCK_KIND, hold_writer_lock

__all__ = [
    "RecordingWriter",
    "encode_event",
    "encode_event_parts",
    "write_all",
]


_SESSION_KINDS = {
    events.GapReason.STOPPED: STOPPED_KIND,
    events.GapReason.RESTARTED: RESTARTED_KIND,
}
"""The session's own lines (connection 0): observation stopped, or a new observing process
took over. Written back as the forwarding process wrote them, so a copy reads the same."""


def encode_event(event: Event, profile: Profile, seq: int) -> Optional[bytes]:
    """One JSON line (with its newline) for ``event``; None for events not recorded."""
    parts = encode_event_parts(event, profile, seq)
    return None if parts is None else b"".join(parts)


def encode_event_parts(
    event: Event, profile: Profile, seq: int, *, from_tap: bool = False
) -> Optional[list[bytes]]:
    """The line for ``event`` as pieces to write in order: a large payload is one piece of its
    own, never copied into a new line. ``from_tap``: see `RecordingWriter`."""
    if isinstance(event, events.FrameSeen):
        return encode_frame(event, profile, seq, from_tap=from_tap)
    line = _encode_other(event, profile, seq)
    return None if line is None else [line]


def _encode_other(event: Event, profile: Profile, seq: int) -> Optional[bytes]:
    if isinstance(event, events.ExchangeCompleted):
        return _exchange_line(event, seq)
    if isinstance(event, events.SessionEnded):
        return session_end_line(seq, event)
    base: dict[str, Any] = {"seq": seq, "t": round(event.t, 6)}
    if isinstance(event, events.ConnectionOpened):
        base.update(kind="open", conn=event.conn, route=event.route)
        base.update(client=event.client, upstream=event.upstream)
    elif isinstance(event, events.ConnectionClosed):
        base.update(kind="close", conn=event.conn, route=event.route, reason=event.reason)
        base.update(bytes={"c2s": event.bytes_c2s, "s2c": event.bytes_s2c})
        base.update(abnormal=event.abnormal)
        if event.tool_calls is not None:
            base.update(tool_calls=tool_calls_json(event.tool_calls))
        if event.gone_before_write:
            base.update(gone_before_write=True)
        if event.resets is not None:
            base.update(resets=[direction.value for direction in event.resets])
    elif isinstance(event, events.ViolationSeen):
        base.update(kind="violation", conn=event.conn, route=event.route)
        base.update(dir=event.direction.value if event.direction else None)
        base.update(frame=event.frame_index)
        base.update(event.violation.to_json())
        if event.orphan:
            base.update(orphan=True)
    elif isinstance(event, events.FramingErrorSeen):
        base.update(kind="frame-error", conn=event.conn, route=event.route)
        base.update(dir=event.direction.value, error=event.kind.value, detail=event.detail)
        base.update(recoverable=event.recoverable, declared=event.declared_length)
        _undelivered_members(base, event)
        if event.cut:
            base.update(cut=event.cut)
        if event.redacted:
            base.update(redacted=list(event.redacted))
        base.update(raw=b64(event.raw))
    elif isinstance(event, events.BytesDiscarded):
        base.update(kind="discarded", conn=event.conn, route=event.route)
        base.update(dir=event.direction.value, final=event.final)
        _undelivered_members(base, event)
        if event.redacted:
            base.update(redacted=list(event.redacted))
        base.update(raw=b64(event.raw))
    elif isinstance(event, events.FaultInjected):
        base.update(kind="fault", conn=event.conn, route=event.route)
        base.update(dir=event.direction.value, fault=event.fault, detail=event.detail)
        if event.held_s is not None:
            base.update(held=event.held_s)
        base.update(method=event.method)
        if event.message_id is not None:
            base.update(id=event.message_id)
        if event.among > 1:
            base.update(among=event.among)
        if event.server_request:
            base.update(server_request=True)
        base.update(withheld=event.withheld)
    elif isinstance(event, events.InterceptStep):
        base.update(kind="intercept", conn=event.conn, route=event.route)
        base.update(dir=event.direction.value, step=event.kind.value, detail=event.detail)
        base.update(method=event.method)
        if event.message_id is not None:
            base.update(id=event.message_id)
        base.update(withheld=event.withheld)
        if event.original:  # sent edited: its payload as it came (redacted, maybe)
            base.update(original=b64(event.original))
        if event.redacted:
            base.update(redacted=list(event.redacted))
    elif isinstance(event, events.EventsMissed):
        base.update(kind="gap", missed=event.count, consumer=event.consumer)
    elif isinstance(event, events.ProcessOutput):
        base.update(kind="stderr", conn=event.conn, route=event.route)
        try:  # readable when it is text; exact either way
            base.update(text=event.data.decode("utf-8"))
        except UnicodeDecodeError:
            base.update(raw=b64(event.data))
    elif isinstance(event, events.ObservationLost):
        kind = _SESSION_KINDS.get(event.reason) if event.conn == 0 else None
        if kind is not None:  # the session's line, as the forwarding process writes it
            return session_line(seq, event.t, kind, event.detail)
        base.update(kind="unobserved", conn=event.conn, route=event.route)
        base.update(dir=event.direction.value, reason=event.reason.value, size=event.size)
        base.update(detail=event.detail)
        if event.digest:
            base.update(digest=event.digest, header=b64(event.header))
        if event.frames is not None:
            base.update(frames=[list(run) for run in event.frames])
        if event.answers is not None:
            base.update(answers=event.answers)
    elif isinstance(event, events.SpoolFull):
        base.update(kind=SPOOL_FULL_KIND, limit=event.limit)
    elif isinstance(event, events.UpstreamStatus):
        base.update(kind="upstream", route=event.route, state="back" if event.up else "down")
        base.update(detail=event.detail)
    elif isinstance(event, events.StreamEnded):
        base.update(kind="end", conn=event.conn, route=event.route, dir=event.direction.value)
        base.update(unanswered=list(event.unanswered))
        if event.cut:
            base.update(cut=event.cut)
    else:  # pragma: no cover - exhaustive over Event
        return None
    return dumps(base) + b"\n"


def exchange_members(event: events.ExchangeCompleted, seq: int) -> dict[str, Any]:
    """An exchange line's members, in their order."""
    outcome = event.outcome
    return {
        "seq": seq,
        "t": round(event.t, 6),
        "kind": _exchange_kind(event),
        "conn": event.conn,
        "route": event.route,
        "req": event.request.index,
        "resp": event.response.index,
        "method": event.method,
        "status": outcome.text,
        "latency": round(event.latency, 6),
        "outcome": outcome.kind.value,
    }


def _exchange_kind(event: events.ExchangeCompleted) -> str:
    # A request the server sent (its answer came from the client) is a kind of its own: a
    # reader that does not know it skips it rather than pairing the wrong frames.
    return "exchange" if event.request.direction is Direction.C2S else "server-exchange"


def _exchange_line(event: events.ExchangeCompleted, seq: int) -> bytes:
    """`exchange_members` as a line, byte for byte what `dumps` writes for them (a test pins
    the equivalence), written by hand: one per exchange, it was the recorder's largest cost
    after the frames'."""
    outcome = event.outcome
    method = event.method
    return (
        f'{{"seq":{seq},"t":{_json_number(round(event.t, 6))},"kind":"{_exchange_kind(event)}",'
        f'"conn":{event.conn},"route":{json_text(event.route)},"req":{event.request.index},'
        f'"resp":{event.response.index},'
        f'"method":{"null" if method is None else json_text(method)},'
        f'"status":{json_text(outcome.text)},"latency":{_json_number(round(event.latency, 6))},'
        f'"outcome":{json_text(outcome.kind.value)}}}\n'
    ).encode("utf-8", JSON_SAFE)


def _undelivered_members(
    base: dict[str, Any], event: Union[events.FramingErrorSeen, events.BytesDiscarded]
) -> None:
    """A framing error's or discarded bytes' ``undelivered`` and ``delivered_bytes``, when
    the receiver never got them (as a frame line has them)."""
    if event.undelivered:
        base["undelivered"] = event.undelivered
        if event.delivered_bytes:
            base["delivered_bytes"] = event.delivered_bytes


def _json_number(value: float) -> str:
    """A number as `dumps` writes it (``float.__repr__``; ``Infinity`` and ``NaN`` as the
    json module spells them)."""
    return repr(value) if math.isfinite(value) else json_str(value)


class RecordingWriter:
    """Writes a recording: the header at once, then one line per event, in order.

    Lines are queued and written by ``flush()`` (the proxy calls it at least every 50 ms), so
    what was flushed is in the file for any reader; a killed writer leaves at worst one
    incomplete last line, which readers skip. A large payload is written as its own piece,
    never copied into a line buffer."""

    def __init__(
        self,
        stream: IO[bytes],
        header: Header,
        *,
        after_seq: Optional[int] = None,
        from_tap: bool = False,
    ) -> None:
        """Write ``header`` to ``stream``, then events from ``seq`` 1. With ``after_seq``, go
        on with a recording the stream already holds (a new observing process taking over
        after an ``observation-restarted`` line, `shared_file.restart_recording`): no header
        is written (the file has it; ``header`` is still what the events are encoded by) and
        the next line is numbered ``after_seq`` + 1, written at the stream's offset.
        ``from_tap``: the events are the tap's, whose frames' ``elided`` counts opaque strings
        only (`frame_lines.encode_frame`); events read back or kept by a view are not."""
        self.stream = stream
        self.from_tap = from_tap
        # Events carry the pairing decision whatever file they were read from: what is
        # written is always this version (a version-1 header copied from a file read is not).
        if header.version != VERSION:
            header = dataclasses.replace(header, version=VERSION)
        self._fd = _descriptor(stream)
        # Held while the file is open, so a reader can tell this writer is alive
        # (`writer_lock`); a file's header says so only when it is held (a copied header's
        # say is this writer's, not the one it was copied from). Written elsewhere (memory,
        # a pipe), the header goes as it was given: a copy reads the same.
        locked = None if self._fd is None else hold_writer_lock(self._fd)
        promised = header.extra.get(WRITER_LOCK) == WRITER_LOCK_KIND
        if locked is not None and locked != promised:
            extra = {name: value for name, value in header.extra.items() if name != WRITER_LOCK}
            if locked:
                extra[WRITER_LOCK] = WRITER_LOCK_KIND
            header = dataclasses.replace(header, extra=extra)
        self.header = header
        self.profile = get_profile(header.profile)
        self.route_profiles = {
            name: get_profile(profile) for name, profile in header.route_profile_names().items()
        }
        """The routes whose frames have a profile of their own (the ``mcp`` route)."""
        self.seq = 0 if after_seq is None else after_seq
        self._pending: list[bytes] = []
        self._pending_size = 0
        if after_seq is None:
            self.stream.write(encode_header(header))
            self.stream.flush()
        self._pages = None if self._fd is None else WrittenPages(self._fd)

    @classmethod
    def create(
        cls, path: str, header: Header, *, overwrite: bool = False, from_tap: bool = False
    ) -> RecordingWriter:
        """Open ``path`` (mode 0600) and write the header. With ``overwrite``, a file already
        there is replaced only once the header is written (the new one is written beside it
        and renamed over it): a writer that fails to start leaves it whole. Raises OSError
        (FileExistsError)."""
        stream, temp = open_beside(path, overwrite=overwrite)
        try:
            writer = cls(stream, header, from_tap=from_tap)
            if temp is not None:
                put_in_place(temp, path)
        except BaseException:
            stream.close()
            if temp is not None:
                discard_beside(temp)
            raise
        return writer

    def position(self) -> Optional[int]:
        """The offset in the file where the next line written will start (what is queued by
        `write` not counted); None for a stream that has none (a pipe)."""
        self.stream.flush()
        try:
            if self._fd is not None:
                return os.lseek(self._fd, 0, os.SEEK_CUR)
            return self.stream.tell()
        except (OSError, ValueError):  # io.UnsupportedOperation is both
            return None

    def write(self, event: Event) -> None:
        """Queue one event's line; it reaches the file at the next `flush()` (or when 1 MiB
        is queued)."""
        parts = self.encode(event)
        if parts is None:
            return
        self._pending.extend(parts)
        self._pending_size += sum(len(part) for part in parts)
        if self._pending_size >= 1024 * 1024:
            self.flush()

    def encode(self, event: Event) -> Optional[list[bytes]]:
        """The next line for ``event`` as pieces (see `encode_event_parts`), numbered in
        order; None for events not recorded. For a caller that writes the pieces itself with
        `write_pieces` (the proxy's recorder does, from its own thread)."""
        profile = self.profile
        if self.route_profiles:
            profile = self.route_profiles.get(getattr(event, "route", ""), profile)
        parts = encode_event_parts(event, profile, self.seq + 1, from_tap=self.from_tap)
        if parts is not None:
            self.seq += 1
        return parts

    def write_pieces(self, pieces: list[bytes]) -> None:
        """Write encoded lines and flush the file. Raises OSError. A file with a descriptor
        gets them in one system call (`os.writev`) rather than one or more per piece: the
        recorder writes from a thread of its own, and each call gives up the interpreter and
        may wait up to its switch interval (5 ms) to get it back while the relay's thread is
        busy."""
        self.stream.flush()  # what the stream holds (the header) goes first
        if not pieces:
            return
        if self._fd is None:
            self.stream.writelines(pieces)
            self.stream.flush()
        else:
            written = write_all(self._fd, pieces)
            if self._pages is not None:
                self._pages.wrote(written)

    def flush(self) -> None:
        """Write every queued line and flush the file."""
        pending, self._pending = self._pending, []
        self._pending_size = 0
        self.write_pieces(pending)

    def close(self) -> None:
        self.flush()
        self.stream.close()

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


IOV_MAX = 1024
"""Pieces one `os.writev` takes at most (Linux's and macOS's ``IOV_MAX``)."""


def write_all(fd: int, pieces: list[bytes]) -> int:
    """Write every piece to ``fd`` in order, as few `os.writev` calls as the kernel takes
    (a short write goes on from where it stopped); the bytes written. Raises OSError."""
    views: list[Union[bytes, memoryview]] = list(pieces)
    total = 0
    while views:
        batch, views = views[:IOV_MAX], views[IOV_MAX:]
        written = os.writev(fd, batch)
        total += written
        for index, piece in enumerate(batch):
            if written < len(piece):
                views = [memoryview(piece)[written:], *batch[index + 1 :], *views]
                break
            written -= len(piece)
    return total


def _descriptor(stream: IO[bytes]) -> Optional[int]:
    """The file descriptor under ``stream``, or None (an in-memory stream)."""
    try:
        return stream.fileno()
    except (OSError, AttributeError, ValueError):  # io.UnsupportedOperation is both
        return None
