"""``--enforce-limits`` on the forwarding path: the tap that judges a connection's bytes before
they are forwarded and publishes nothing (`limit_check_tap`), the check itself
(`stopped_by_limits`, called by the plain and the faulted pumps before each write), and how
bytes it refuses are marked (`BLOCKED`).

Apart from connection.py and proxy_options.py because it is one option's job, the same on
every pump: a connection only carries its judge (`Connection.judge`).
"""

from __future__ import annotations

from typing import Optional

import trio

from golem_core.framing import Frame
from golem_core.profiles import Profile

from ..events import Direction, Event
from .connection import Connection
from .proxy_options import ProxyOptions
from .tap import ConnectionTap, TapVerdict

__all__ = ["BLOCKED", "limit_check_tap", "stopped_by_limits"]

BLOCKED = "--enforce-limits"
"""Why bytes ``--enforce-limits`` refused to forward never reached their receiver (short: a
log line's status says ``malformed:invalid-json (undelivered: --enforce-limits)`` whole)."""


def limit_check_tap(
    conn: int, route: str, profile: Profile, options: ProxyOptions
) -> ConnectionTap:
    """A tap that only judges ``--enforce-limits`` verdicts and publishes nothing
    (`Connection.judge`): the verdict must come before a chunk is forwarded, and the tap that
    records (in this process, or the observing process's) is handed the chunk after its write,
    when it is known whether it was delivered. The same `ConnectionTap` as the recording one,
    so both find the same frames at fault; without the catalogue, redaction and annotation,
    which no verdict depends on."""
    return ConnectionTap(conn, route, profile, _discard, cap=options.cap, limits=options.observe)


def _discard(event: Event) -> None:
    """Where the limit check's events go: the recording tap reports them."""


def stopped_by_limits(
    conn: Connection,
    direction: Direction,
    data: bytes,
    t: float,
    scope: trio.CancelScope,
    frame: Optional[Frame] = None,
) -> bool:
    """``--enforce-limits``: check bytes about to be forwarded on ``conn`` (``frame``: they are
    that frame). When a frame among them breaks the limits, they are recorded though not
    forwarded, marked undelivered (`BLOCKED`: the recording counts them apart from what was
    forwarded, as the close does), the connection is closed saying why (``scope`` cancelled),
    and True is returned; False (always, without the option: ``conn`` has no judge): forward
    them."""
    verdict = _judged(conn.judge, direction, data, t, frame)
    if verdict is None:
        return False
    conn.observe_undelivered(direction, data, t, BLOCKED)
    conn.note(f"closed by --enforce-limits: {verdict.reason}", True)
    scope.cancel()
    return True


def _judged(
    judge: Optional[ConnectionTap],
    direction: Direction,
    data: bytes,
    t: float,
    frame: Optional[Frame],
) -> Optional[TapVerdict]:
    if judge is None or judge.failed is not None:
        return None
    try:
        return judge.process(direction, data, t, frame)
    except Exception as exc:  # a decoding bug costs the check, not the relay
        judge.fail(exc, t)
        return None
