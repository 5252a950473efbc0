"""The values a frame not recorded as it came teaches the tap (``--redact``: the strings its
rules replace in it, `Connection.unrecorded`), as ``UNRECORDED`` records on the handoff pipe
(handoff.py): cut into records by the forwarding side (`unrecorded_records`), joined again by
the observing one (`UnrecordedValues`).

A record's data is pieces, each its length (4 bytes, big-endian) and then that many bytes of
a value's UTF-8 (a lone surrogate kept, as JSON may carry one). Values go whole into a record
as long as it has room (at most what the reader takes, `handoff_reader.MAX_DATA`); a value
longer than a record is cut over the next ones, each piece but its last with `GOES_ON` set in
its length. So no value is too long to be handed on: the observing process learns what the
tap of one process learns, whatever ``--observe-frame-limit`` lets a frame (and its values)
be.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Union

from .handoff import HandoffError
from .redact import MAX_ECHOES

__all__ = ["GOES_ON", "UnrecordedValues", "WaitingValues", "unrecorded_records"]

_PIECE = struct.Struct("!I")
GOES_ON = 1 << 31
"""In a piece's length: the value goes on in the next piece (the next record's first)."""


def unrecorded_records(values: Iterable[str], limit: int) -> list[bytes]:
    """The data of the ``UNRECORDED`` records that carry ``values``, in order, each at most
    ``limit`` bytes (more than a piece's length)."""
    records: list[bytes] = []
    parts: list[bytes] = []
    size = 0
    for value in values:
        raw = value.encode("utf-8", "surrogatepass")
        if size and size + _PIECE.size + len(raw) > limit:  # a record of its own: not cut
            records.append(b"".join(parts))
            parts, size = [], 0
        start = 0
        while True:
            piece = raw[start : start + limit - size - _PIECE.size]
            start += len(piece)
            goes_on = start < len(raw)
            parts += [_PIECE.pack(len(piece) | (GOES_ON if goes_on else 0)), piece]
            size += _PIECE.size + len(piece)
            if not goes_on:
                break
            records.append(b"".join(parts))
            parts, size = [], 0
    if parts:
        records.append(b"".join(parts))
    return records


class WaitingValues:
    """Values that wait to be handed on, by connection (`ObserverLink.unrecorded`, while the
    connection sheds): each once, the last `MAX_ECHOES` of a connection, as its tap keeps
    them; nothing else of the frames they came from."""

    def __init__(self) -> None:
        self._by_conn: dict[int, dict[str, None]] = {}

    def add(self, conn: int, values: Iterable[str]) -> None:
        waiting = self._by_conn.setdefault(conn, {})
        for value in values:
            waiting.pop(value, None)
            waiting[value] = None
        while len(waiting) > MAX_ECHOES:
            del waiting[next(iter(waiting))]

    def take(self, conn: int) -> tuple[str, ...]:
        """``conn``'s values, oldest first, and none wait any more."""
        return tuple(self._by_conn.pop(conn, ()))

    def clear(self) -> None:
        self._by_conn.clear()


class UnrecordedValues:
    """One connection's values out of its ``UNRECORDED`` records, in order: a value cut over
    several records is joined again."""

    def __init__(self) -> None:
        self._pieces: list[bytes] = []
        """The pieces so far of a value that goes on in the next record."""

    def read(self, data: Union[bytes, memoryview]) -> list[str]:
        """The values whose last piece is in ``data``, a record's. Raises HandoffError for
        data that is not one (a piece that runs past its end, a value that is no UTF-8):
        what it began of a value is dropped with it."""
        view = memoryview(data)
        values: list[str] = []
        at = 0
        try:
            while at < len(view):
                if at + _PIECE.size > len(view):
                    raise HandoffError("an UNRECORDED record ends inside a piece's length")
                (length,) = _PIECE.unpack_from(view, at)
                at += _PIECE.size
                end = at + (length & (GOES_ON - 1))
                if end > len(view):
                    raise HandoffError("an UNRECORDED record shorter than its piece")
                self._pieces.append(bytes(view[at:end]))
                at = end
                if not length & GOES_ON:
                    raw = b"".join(self._pieces)
                    self._pieces = []
                    values.append(_decoded(raw))
        except HandoffError:
            self._pieces = []
            raise
        return values


def _decoded(raw: bytes) -> str:
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise HandoffError(f"an UNRECORDED value that is no UTF-8 ({exc.reason})") from None
