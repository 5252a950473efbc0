"""Recordings written the way a proxy writes them: bytes through the real tap
(`golem_proxy.live.tap.ConnectionTap`), its events through `RecordingWriter`. For the
memory tests of the views, which must see exactly what the tap publishes."""

from __future__ import annotations

from pathlib import Path

from golem_core.profiles import get_profile
from golem_proxy.events import ConnectionClosed, ConnectionOpened, Direction
from golem_proxy.live.tap import ConnectionTap
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo, open_private

ROUTE = RouteInfo("scrybe", "127.0.0.1:19000", "127.0.0.1:9000")
NOTE = b'{"jsonrpc":"2.0","method":"tick","params":{"n":%d}}\n'
CALL = b'{"jsonrpc":"2.0","id":%d,"method":"set_vim","params":{"enabled":true}}\n'
ANSWER = b'{"jsonrpc":"2.0","id":%d,"result":{"enabled":true}}\n'


def _session(
    path: Path, chunks: list[tuple[Direction, bytes]], profile_name: str = "jsonrpc-ndjson"
) -> Path:
    """Record one connection of ``profile_name`` whose traffic is ``chunks``, in order."""
    profile = get_profile(profile_name)
    header = Header.new(profile.name, [ROUTE])
    with RecordingWriter(open_private(str(path), overwrite=True), header) as writer:
        writer.write(
            ConnectionOpened(
                conn=1, route=ROUTE.name, client="127.0.0.1:50000", upstream=ROUTE.upstream, t=0.0
            )
        )
        tap = ConnectionTap(1, ROUTE.name, profile, writer.write)
        t = 0.0
        for direction, data in chunks:
            t += 0.001
            tap.process(direction, data, t)
        writer.write(ConnectionClosed(conn=1, route=ROUTE.name, reason="closed", t=t + 0.001))
    return path


def notifications(path: Path, count: int = 20_000) -> Path:
    """A server telling its client ``count`` notifications after one unanswered call."""
    notes = [(Direction.S2C, NOTE % n) for n in range(count)]
    return _session(path, [(Direction.C2S, CALL % 0), *notes])


def exchanges(path: Path, count: int = 5_000) -> Path:
    """One client notification, then ``count`` answered calls."""
    chunks = [(Direction.C2S, NOTE % 0)]
    for n in range(1, count + 1):
        chunks += [(Direction.C2S, CALL % n), (Direction.S2C, ANSWER % n)]
    return _session(path, chunks)


def empty(path: Path) -> Path:
    """A connection opened and closed with nothing said."""
    return _session(path, [])
