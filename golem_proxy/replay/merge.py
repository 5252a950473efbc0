"""Appending one recording's events to another (the "new episodes" of a VCR-style workflow):
connection numbers, sequence numbers and times are shifted so the result reads as one session
that went on."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from typing import Any

from ..events import ExchangeCompleted
from ..recording.files import replacing
from ..recording.format import RecordingReader, encode_event

__all__ = ["append_recording"]


def append_recording(base: str, extra: str) -> int:
    """Append the events of ``extra`` to ``base`` (which is created from ``extra`` when it does
    not exist), via a new file that atomically replaces ``base``. Returns the number of
    events appended. Raises OSError or RecordingError."""
    if not os.path.exists(base):
        shutil.copyfile(extra, base)
        os.chmod(base, 0o600)
        with open(extra, "rb") as stream:
            return sum(1 for _ in RecordingReader(stream))
    last_seq, last_conn, last_t = _tail_numbers(base)
    count = 0
    with replacing(base, overwrite=True) as out, open(base, "rb") as source:
        shutil.copyfileobj(source, out)
        with open(extra, "rb") as stream:
            reader = RecordingReader(stream)
            for event in reader:
                line = encode_event(
                    _shift(event, last_conn, last_t), reader.profile, last_seq + count + 1
                )
                if line is not None:
                    out.write(line)
                    count += 1
    return count


def _tail_numbers(path: str) -> tuple[int, int, float]:
    """The last seq, the highest conn and the last time in a recording."""
    seq, conn, t = 0, 0, 0.0
    with open(path, "rb") as stream:
        stream.readline()
        for line in stream:
            if not line.endswith(b"\n"):
                break
            head = line.split(b',"msg":', 1)[0]
            data = json.loads(head if head.endswith(b"}\n") else head + b"}")
            seq = max(seq, int(data.get("seq", 0)))
            conn = max(conn, int(data.get("conn", 0)))
            t = max(t, float(data.get("t", 0.0)))
    return seq, conn, t


def _shift(event: Any, conn: int, t: float) -> Any:
    if isinstance(event, ExchangeCompleted):
        return dataclasses.replace(
            event,
            conn=event.conn + conn,
            request=_shift(event.request, conn, t),
            response=_shift(event.response, conn, t),
        )
    changes: dict[str, Any] = {"t": event.t + t}  # every other event has a t field
    if getattr(event, "conn", 0):  # connection 0 is the session's (observation stopped)
        changes["conn"] = event.conn + conn
    return dataclasses.replace(event, **changes)
