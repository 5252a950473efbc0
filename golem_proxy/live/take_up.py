"""How an observing process that takes over from one that died (``--observer child-process``)
takes up the connections that were still open: where the recording left each of them.

* Its frame numbers go on from the recording's (`recording.resume_scan.resume_points`), and
  whether its ``open`` line is there is said (the caller writes it when it is not).
* Its pairing goes on from the recording (`recording.inflight_scan.in_flight`): the requests
  recorded and not answered in the file are waited for again, so an answer that comes after
  the restart is paired with its request (``answers``, an ``exchange`` line with its status
  and latency) as if no process had died; an answer to a request the dead process was handed
  but never recorded, or that lies beyond the scan's bounds, is no orphan, and is not paired.
* With an MCP layer, the ``tools/call`` requests among them are in flight again for the
  tool-call tracker (`LayerTaps.recovered`), so the GOLEM frames decoded after the restart
  carry them in ``tool_calls``, and their answers end them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping

from ..recording.inflight_scan import NOTHING, InFlight, in_flight
from ..recording.resume_scan import ResumePoint, resume_points
from .layer_taps import LayerTaps
from .tap import ConnectionTap

__all__ = ["take_up"]

_UNKNOWN = ResumePoint(False, (0, 0))


def take_up(
    fd: int, taps: Mapping[int, ConnectionTap], make_tap: Callable[..., ConnectionTap]
) -> dict[int, ResumePoint]:
    """Resume each connection's tap (``taps``, by connection) where the recording open on
    ``fd`` (read with `os.pread` only; -1: no recording) left it; ``make_tap``, the session's
    maker of taps, is told the frames in flight when it is `LayerTaps` (its tool-call
    tracker follows them). Returns where each connection stands in the recording. Raises
    OSError when that cannot be read; when only what was in flight cannot be, it is unknown,
    as without a recording (answers to requests sent before the restart are no orphans)."""
    layers = make_tap if isinstance(make_tap, LayerTaps) else None
    found: dict[int, InFlight] = {}
    if fd < 0:
        points = {conn: _UNKNOWN for conn in taps}
    else:
        points = resume_points(fd, list(taps))
        framed = {conn: taps[conn].profile for conn, point in points.items() if point.opened}
        with contextlib.suppress(OSError):
            found = in_flight(fd, framed, methods=layers.followed if layers is not None else ())
    for conn, tap in taps.items():
        recorded = found.get(conn, NOTHING)
        if layers is not None:
            for frame in recorded.frames:
                layers.recovered(tap.route, frame)
        tap.resume(points[conn].next_n, recorded.frames, recorded.unread)
    return points
