"""Recordings whose observing process died and was restarted, written as the proxy writes
them: each observing process's `RecordingWriter` on the recording's shared descriptor, a
line the dead one left unfinished, and the forwarding process's ``observation-restarted``
line (`shared_file.restart_recording`) before the next one resumes after it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from golem_core.profiles import GOLEM, Profile
from golem_proxy.events import (
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    ExchangeCompleted,
    GapReason,
    ObservationLost,
)
from golem_proxy.live.redact import Redactor
from golem_proxy.live.tap import ConnectionTap
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo
from golem_proxy.recording.shared_file import RecordingFile, restart_recording
from golem_proxy.recording.writer import write_all
from tests.support.frames import frame_seen

__all__ = [
    "HEADER",
    "UNFINISHED",
    "TappedSession",
    "call",
    "closed",
    "opened",
    "restart_gap",
    "write_observed",
]

HEADER = Header(
    "golem", (RouteInfo("main", "127.0.0.1:19876", "127.0.0.1:9876"),), "2024-01-01T00:00:00Z"
)
UNFINISHED = b'{"seq":999,"t":9.5,"kind":"frame","conn":1,"route":"main","dir":"s2c","n":7,"si'
"""What a death leaves at the end of the file: a line cut short."""


def opened(conn: int, t: float) -> ConnectionOpened:
    return ConnectionOpened(
        conn=conn, route="main", client=f"127.0.0.1:{50000 + conn}", upstream="127.0.0.1:9876", t=t
    )


def closed(conn: int, t: float) -> ConnectionClosed:
    return ConnectionClosed(conn=conn, route="main", reason="client closed", t=t)


def call(conn: int, n: int, t: float, method: str = "ping") -> list[Event]:
    """Request ``n`` of ``conn`` and its answer (the ``n``-th of each direction), as the tap
    publishes them: the frames, then the exchange."""
    ident = f"c{conn}-{n}"
    request = frame_seen(
        GOLEM,
        Direction.C2S,
        n,
        b'{"id": "%s", "method": "%s", "params": {}}' % (ident.encode(), method.encode()),
        conn=conn,
        t=t,
        expects_answer=True,
    )
    response = frame_seen(
        GOLEM,
        Direction.S2C,
        n,
        b'{"id": "%s", "result": {}, "error": null}' % ident.encode(),
        conn=conn,
        t=t + 0.01,
        answers=n,
    )
    outcome = GOLEM.outcome(request.message, response.message)
    exchange = ExchangeCompleted(
        conn=conn, route="main", request=request, response=response, outcome=outcome
    )
    return [request, response, exchange]


def restart_gap(conn: int, t: float, size: int, direction: Direction = Direction.C2S) -> Event:
    """The line a new observing process writes on a connection it picks up again."""
    return ObservationLost(
        conn=conn,
        route="main",
        direction=direction,
        t=t,
        reason=GapReason.RESTARTED,
        size=size,
        detail=f"{size} bytes forwarded while no observing process recorded; decoding "
        "resumed at the next frame boundary",
    )


def write_observed(
    path: Path,
    parts: Sequence[Sequence[Event]],
    restarts: Sequence[tuple[float, str]],
    *,
    unfinished: Optional[bytes] = UNFINISHED,
) -> list[int]:
    """Write ``parts[0]`` as the first observing process, then for each restart (``t``,
    why) the line the dead one left ``unfinished``, the restart line, and the next part as the
    next observing process. Returns the restart lines' ``seq``."""
    assert len(parts) == len(restarts) + 1
    record = RecordingFile.create(str(path))
    seqs = []
    try:
        after: Optional[int] = None
        for index, part in enumerate(parts):
            # Each observing process writes through its own copy of the shared descriptor.
            writer = RecordingWriter(
                os.fdopen(os.dup(record.write_fd), "wb"), HEADER, after_seq=after
            )
            for event in part:
                writer.write(event)
            writer.close()
            if index == len(restarts):
                break
            if unfinished:
                write_all(record.write_fd, [unfinished])
            t, why = restarts[index]
            after = restart_recording(record, t, why)
            seqs.append(after)
    finally:
        record.close()
    return seqs


class TappedSession:
    """The observing process that dies: connections of route "main" decoded by real taps
    (`ConnectionTap`, redacting with ``redact``), their events written to ``path`` by a
    `RecordingWriter`, as a proxy writes them. Each frame's ``t`` is a millisecond after the
    last one's."""

    def __init__(self, path: Path, profile: Profile = GOLEM, redact: Sequence[str] = ()) -> None:
        self.profile = profile
        self.redactor = Redactor(list(redact)) if redact else None
        header = Header(profile.name, HEADER.routes, HEADER.started_at, redact=tuple(redact))
        self.writer = RecordingWriter.create(str(path), header)
        self.taps: dict[int, ConnectionTap] = {}
        self.t = 0.0

    def open(self, conn: int) -> None:
        self.writer.write(opened(conn, self.t))
        self.taps[conn] = ConnectionTap(
            conn, "main", self.profile, self.writer.write, redactor=self.redactor
        )

    def send(self, conn: int, direction: Direction, *payloads: bytes) -> None:
        """Each of ``payloads`` as one frame on the wire."""
        for payload in payloads:
            self.t += 0.001
            self.taps[conn].process(direction, self.profile.frame_payload(payload), self.t)

    def close(self) -> None:
        """Stop writing, the connections left open (no ``close`` lines: the process died)."""
        self.writer.close()
