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
  carry them in ``tool_calls``, and their answers end them; and the MCP layer's rules go on
  from what the recording holds of each session (`recording.mcp_session_scan`: its
  ``initialize``, the tools listed; `LayerTaps.taken_up`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Mapping
from typing import Optional

from ..recording.inflight_scan import NOTHING, InFlight, in_flight
from ..recording.mcp_session_scan import UNKNOWN_START, McpKnown, mcp_known
from ..recording.resume_scan import ResumePoint, resume_points
from .layer_taps import LayerTaps
from .tap import ConnectionTap

__all__ = ["UNKNOWN", "standing", "take_up"]

UNKNOWN = ResumePoint(False, (0, 0))
"""A connection the recording holds nothing of: its ``open`` line is to be written, and its
frames are numbered from 0."""


def standing(fd: int, conns: Collection[int]) -> dict[int, ResumePoint]:
    """Where each of ``conns`` stands in the recording open on ``fd`` (-1: none): its frame
    numbers, whether its ``open`` line is there (`recording.resume_scan.resume_points`,
    unbounded: back to the line that answers it). Unknown for all when the recording cannot
    be read back (as without one: a new process that crashed here would be replaced by one
    that crashes the same way, until no restart is left)."""
    if fd < 0 or not conns:
        return dict.fromkeys(conns, UNKNOWN)
    try:
        return resume_points(fd, list(conns))
    except OSError:
        return dict.fromkeys(conns, UNKNOWN)


def take_up(
    fd: int,
    taps: Mapping[int, ConnectionTap],
    make_tap: Callable[..., ConnectionTap],
    known: Optional[Mapping[int, ResumePoint]] = None,
    held_again: Callable[[int], None] = lambda requests: None,
) -> dict[int, ResumePoint]:
    """Resume each connection's tap (``taps``, by connection) where the recording open on
    ``fd`` (read with `os.pread` only; -1: no recording) left it (``known``: where some stand,
    looked up already, `standing`); ``make_tap``, the session's maker of taps, is told the
    frames in flight when it is `LayerTaps` (its tool-call tracker follows them). Returns
    where each connection stands in the recording. What cannot be read is unknown, as without
    a recording (answers to requests sent before the restart are no orphans). ``held_again``
    is told how many requests recorded in flight are waited for again (the closing line
    counts those never answered)."""
    known = known or {}
    points = {conn: known[conn] for conn in taps if conn in known}
    points.update(standing(fd, [conn for conn in taps if conn not in known]))
    layers = make_tap if isinstance(make_tap, LayerTaps) else None
    found: dict[int, InFlight] = {}
    if fd >= 0:
        framed = {conn: taps[conn].profile for conn, point in points.items() if point.opened}
        with contextlib.suppress(OSError):
            found = in_flight(fd, framed, methods=layers.followed if layers is not None else ())
    if layers is not None:
        _sessions_taken_up(fd, layers, taps)
    requests = 0
    for conn, tap in taps.items():
        recorded = found.get(conn, NOTHING)
        if layers is not None:
            for frame in recorded.frames:
                layers.recovered(tap.route, frame)
        tap.resume(points[conn].next_n, recorded.frames, recorded.unread)
        requests += sum(frame.expects_answer for frame in recorded.frames)
    held_again(requests)
    return points


def _sessions_taken_up(fd: int, layers: LayerTaps, taps: Mapping[int, ConnectionTap]) -> None:
    """Tell each MCP hop's rules what the recording holds of its sessions taken up (nothing
    known when it cannot be read: the rules that need it are silent for them)."""
    for route in layers.mcp_routes():
        conns = [conn for conn, tap in taps.items() if tap.route == route]
        known = McpKnown(dict.fromkeys(conns, UNKNOWN_START))
        if fd >= 0 and conns:
            with contextlib.suppress(OSError):
                known = mcp_known(fd, route, conns)
        layers.taken_up(route, known)
