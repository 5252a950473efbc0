"""A recording as a packet capture: every connection one TCP conversation between the client
and the upstream server, as a capture on loopback would have shown it.

The proxy's hop is folded away: the client's address (the ``open`` line) talks straight to the
upstream's (the ``open`` line, else the route in the header), so a dissector keyed on the
server's port decodes it. Per connection:

* an ``open`` line is the three-way handshake, at its time;
* the bytes each line stands for (exactly what `export --format streams` rebuilds) are data
  segments of at most `MAX_SEGMENT` bytes, at the line's time, with running sequence and
  acknowledgement numbers;
* bytes that crossed but were not observed (``unobserved`` lines, ``behind``,
  ``frame-too-large``, ``observer-failed``, ``restarted``) advance the sequence number by
  their size: a gap a reader reports as missing, never bytes made up;
* an ``end`` line (one side ended its stream while requests waited: a plugin gone mid-call, an
  answer ``--fault truncate`` cut) is that side's FIN, at its time, acknowledged by the other;
* a ``close`` line is a FIN from each side that has not sent one yet when every side was
  closed cleanly (the client's first: which came first is not recorded), else a reset from
  each side that one came from, as its ``resets`` say (``s2c``: from the server; ``c2s``: from
  the client), after any FIN an ``end`` line made. A close that does not say (a recording
  written before ``resets``, the stdio hop of ``golem-proxy mcp``) is a reset from the server
  when it was ``abnormal``.

Packets are in the recording's order (each connection's sequence numbers run in it), and their
times never go back in it: a reader takes a time going back for a damaged or spliced capture.
The lines are not quite in time order (docs/recording-format.md, ``t``): an ``open`` written at
once is ahead of frames the tap had yet to decode; a request held by a fault or an intercept,
or the lines of a file whose clock started again, are behind the lines before them. So a
packet later than the next line that makes packets takes that line's time when it is no
earlier than the packet before (the line ahead is brought back; the lines after it keep their
own times), and a packet earlier than the one before it takes that one's time. Each such
packet's comment holds the time it was recorded at; `CaptureSummary` counts them.

Unix-socket routes, and addresses that are not IP literals, map to pseudo addresses on
127.0.85.0/24 (85 is "U"): the server is 127.0.85.1 on the port of the profile's default route
of the same name (GOLEM: 9876, 9877; else 9876 + the route's index); a client without a TCP
address is 127.0.85.2 on port 49152 + its connection number (mod 16384).
"""

from __future__ import annotations

import datetime
import ipaddress
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Optional

from golem_core.profiles import Profile

from .. import __version__
from ..analysis.flow import gap_size_at_least
from ..events import (
    BytesDiscarded,
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    FrameSeen,
    FramingErrorSeen,
    GapReason,
    ObservationLost,
    StreamEnded,
)
from ..proxy_actions import TRUNCATE_CUT
from ..recording.format import Header
from ..recording.reader import route_profiles
from ..recording.schema import started_at_time
from ..recording.streams import chunks_by_event
from ..terminal import safe_text
from .pcapng import ACK, FIN, MAX_SEGMENT, PSH, RST, SYN, Endpoint, Half, PcapngWriter

__all__ = [
    "PSEUDO_BASE_PORT",
    "PSEUDO_CLIENT",
    "PSEUDO_SERVER",
    "CaptureSummary",
    "parse_endpoint",
    "write_pcapng",
]

PSEUDO_SERVER = ipaddress.IPv4Address("127.0.85.1")
PSEUDO_CLIENT = ipaddress.IPv4Address("127.0.85.2")
_EPHEMERAL = 49152
PSEUDO_BASE_PORT = 9876
"""A Unix-socket server's pseudo port: this + its route's index (when the profile's default
route of that name has no TCP port to lend)."""
# A restart's gap on a connection is a lower bound (`GapReason.RESTARTED`): still a jump.
_BYTE_GAPS = (
    GapReason.BEHIND,
    GapReason.FRAME_TOO_LARGE,
    GapReason.OBSERVER_FAILED,
    GapReason.RESTARTED,
)
_MOD32 = 0xFFFFFFFF
_CLIENT, _SERVER = 0, 1
_SIDE = {Direction.C2S: _CLIENT, Direction.S2C: _SERVER}


@dataclass
class CaptureSummary:
    """What `write_pcapng` wrote."""

    connections: int = 0
    packets: int = 0
    payload_bytes: int = 0
    gaps: int = 0
    """Sequence jumps standing for bytes that crossed unobserved."""
    gap_bytes: int = 0
    gap_bytes_at_least: bool = False
    """``gap_bytes`` is only the least that crossed (a restart's gap: `gap_size_at_least`)."""
    start_problem: Optional[str] = None
    """Why the header's ``started_at`` gave no wall time, as what the header has (``no
    started_at``, ``a started_at that is not an ISO 8601 time ("yesterday")``), or None: times
    then count from the epoch, as the capture's comment says."""
    restamped: int = 0
    """Packets stamped with another packet's time so that times never go back in the file's
    order (`write_pcapng`); each one's comment holds its recorded time."""
    most_moved: int = 0
    """The most a packet's stamp is from its recorded time, in microseconds."""


def parse_endpoint(spec: str) -> Optional[Endpoint]:
    """``HOST:PORT`` or ``[V6]:PORT`` with an IP literal as an endpoint; None for anything
    else (``unix:PATH``, a host name, garbage)."""
    host, sep, port = spec.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        return None
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return Endpoint(ipaddress.ip_address(host), int(port))
    except ValueError:
        return None


def _same_family(client: Endpoint, server: Endpoint) -> tuple[Endpoint, Endpoint]:
    """Both ends in one family: an IPv4 end becomes IPv4-mapped IPv6 beside an IPv6 one."""
    if client.address.version == server.address.version:
        return client, server

    def six(end: Endpoint) -> Endpoint:
        if end.address.version == 6:
            return end
        return Endpoint(ipaddress.IPv6Address(f"::ffff:{end.address}"), end.port)

    return six(client), six(server)


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _start(started_at: str) -> tuple[int, Optional[str]]:
    """``started_at`` as microseconds since the epoch, and None; or 0 and why it cannot be.
    The recording holds no other wall time (``t`` is a monotonic clock's), so a capture of a
    recording without one counts from the epoch: its times between packets stay right."""
    if not started_at.strip():
        return 0, "no started_at"
    shown = safe_text(json.dumps(started_at[:60], ensure_ascii=False))
    when = started_at_time(started_at.strip())
    if when is None:
        return 0, f"a started_at that is not an ISO 8601 time ({shown})"
    if when < _EPOCH:
        return 0, f"a started_at before 1970, which pcapng cannot hold ({shown})"
    delta = when - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds, None


class _Conversation:
    """Both halves of one connection's conversation and the next sequence number of each
    (index 0: client to server, 1: server to client)."""

    def __init__(self, conn: int, client: Endpoint, server: Endpoint) -> None:
        client, server = _same_family(client, server)
        self.halves = (Half(client, server), Half(server, client))
        # Fixed initial sequence numbers: the same recording always exports the same bytes.
        self.next = [(0x10000000 + conn) & _MOD32, (0x20000000 + conn) & _MOD32]
        self.ended: set[int] = set()
        """The sides that sent their FIN already (an ``end`` line)."""


class _Exporter:
    def __init__(self, header: Header, profile: Profile, writer: PcapngWriter, start: int) -> None:
        self.writer = writer
        self.start = start
        self.summary = CaptureSummary()
        self.latest = 0
        """The stamp of the packet written last, microseconds since the epoch."""
        self.ahead: Optional[int] = None
        """The time of the next line that makes packets, when known (`write_pcapng`)."""
        self.conversations: dict[int, _Conversation] = {}
        defaults = {route.name: route.upstream for route in profile.default_routes({})}
        self.servers: dict[str, Endpoint] = {}
        for index, route in enumerate(header.routes):
            pseudo_port = PSEUDO_BASE_PORT + index
            default = parse_endpoint(defaults.get(route.name, ""))
            if default is not None:
                pseudo_port = default.port
            self.servers[route.name] = parse_endpoint(route.upstream) or Endpoint(
                PSEUDO_SERVER, pseudo_port
            )

    def server_of(self, route: str, upstream: str = "") -> Endpoint:
        found = parse_endpoint(upstream) if upstream else None
        if found is None:
            found = self.servers.get(route)
        return found or Endpoint(PSEUDO_SERVER, PSEUDO_BASE_PORT)

    def conversation(self, conn: int, route: str) -> _Conversation:
        found = self.conversations.get(conn)
        if found is None:
            # Bytes of a connection whose open line is not in the file: no handshake is made up.
            client = Endpoint(PSEUDO_CLIENT, _EPHEMERAL + conn % 16384)
            found = self.conversations[conn] = _Conversation(conn, client, self.server_of(route))
            self.summary.connections += 1
        return found

    def send(
        self, when: int, conv: _Conversation, side: int, flags: int, data: bytes = b""
    ) -> None:
        comment = ""
        if self.ahead is not None and self.latest <= self.ahead < when:
            comment = self._moved(when, self.ahead, "after it")
            when = self.ahead
        elif when < self.latest:
            comment = self._moved(when, self.latest, "before it")
            when = self.latest
        self.latest = when
        seq = conv.next[side]
        headers = conv.halves[side].headers(seq, conv.next[1 - side], flags, data)
        self.writer.packet(when, headers, data, comment)
        taken = len(data) + (1 if flags & (SYN | FIN) else 0)
        conv.next[side] = (seq + taken) & _MOD32

    def _moved(self, recorded: int, stamp: int, where: str) -> str:
        """Count a packet stamped at ``stamp`` rather than when it was ``recorded`` (both
        microseconds since the epoch), and say why in its comment; ``where``: the packet whose
        time it takes is the one written ``before it`` or the first one ``after it``."""
        moved = abs(stamp - recorded)
        self.summary.restamped += 1
        self.summary.most_moved = max(self.summary.most_moved, moved)
        way = "after" if stamp < recorded else "before"
        return (
            f"recorded at t = {(recorded - self.start) / 1e6:.6f} s, {moved / 1e6:.6f} s {way} "
            f"the packet {where}: stamped with that packet's time to keep the recording's order"
        )

    def feed(self, event: Event, chunks: list[bytes]) -> None:
        if chunks and isinstance(event, (FrameSeen, FramingErrorSeen, BytesDiscarded)):
            self._data(event, chunks)
        elif isinstance(event, ConnectionOpened):
            self._opened(self.when(event.t), event)
        elif isinstance(event, ObservationLost) and event.reason in _BYTE_GAPS and event.size:
            conv = self.conversation(event.conn, event.route)
            side = _SIDE[event.direction]
            conv.next[side] = (conv.next[side] + event.size) & _MOD32
            self.summary.gaps += 1
            self.summary.gap_bytes += event.size
            self.summary.gap_bytes_at_least |= gap_size_at_least(event)
        elif isinstance(event, StreamEnded):
            self._ended(self.when(event.t), event)
        elif isinstance(event, ConnectionClosed):
            self._closed(self.when(event.t), event)

    def when(self, t: float) -> int:
        """Microseconds since the epoch of a line's ``t`` (any finite number the reader let
        through: the writer clamps what pcapng cannot hold)."""
        return self.start + round(min(max(t, -1e12), 1e12) * 1_000_000)

    def _data(
        self, event: FrameSeen | FramingErrorSeen | BytesDiscarded, chunks: list[bytes]
    ) -> None:
        when = self.when(event.t)
        conv = self.conversations.get(event.conn) or self.conversation(event.conn, event.route)
        side = _SIDE[event.direction]
        for chunk in chunks:
            if not chunk:
                continue  # a framing error at the end of the stream may carry no bytes
            self.summary.payload_bytes += len(chunk)
            if len(chunk) <= MAX_SEGMENT:
                self.send(when, conv, side, PSH | ACK, chunk)
                continue
            view = memoryview(chunk)
            for start in range(0, len(chunk), MAX_SEGMENT):
                self.send(when, conv, side, PSH | ACK, bytes(view[start : start + MAX_SEGMENT]))

    def _opened(self, when: int, event: ConnectionOpened) -> None:
        client = parse_endpoint(event.client) or Endpoint(
            PSEUDO_CLIENT, _EPHEMERAL + event.conn % 16384
        )
        conv = _Conversation(event.conn, client, self.server_of(event.route, event.upstream))
        self.conversations[event.conn] = conv
        self.summary.connections += 1
        self.send(when, conv, _CLIENT, SYN)
        # The SYN-ACK acknowledges the SYN: the client's next number is already one on.
        self.send(when, conv, _SERVER, SYN | ACK)
        self.send(when, conv, _CLIENT, ACK)

    def _ended(self, when: int, event: StreamEnded) -> None:
        """One side's FIN when it ended its stream, acknowledged by the other: a side that
        went first is seen going first, when it did, not at the connection's close. A stream
        the proxy ended otherwise than with a FIN (`StreamEnded.cut`: a reset, its stop) has
        none then: the close says how the connection ended."""
        conv = self.conversation(event.conn, event.route)
        side = _SIDE[event.direction]
        if side in conv.ended or event.cut not in _FIN_CUTS:
            return
        conv.ended.add(side)
        self.send(when, conv, side, FIN | ACK)
        self.send(when, conv, 1 - side, ACK)

    def _closed(self, when: int, event: ConnectionClosed) -> None:
        conv = self.conversation(event.conn, event.route)
        resets = event.resets
        if resets is None:  # not said: a failure taken for a reset, as the server's
            resets = (Direction.S2C,) if event.abnormal else ()
        if resets:
            # From the server first (toward the client), whatever order they were written in.
            for side in sorted({_SIDE[direction] for direction in resets}, reverse=True):
                self.send(when, conv, side, RST | ACK)
        else:
            left = [side for side in (_CLIENT, _SERVER) if side not in conv.ended]
            if len(left) == 2:
                self.send(when, conv, _CLIENT, FIN | ACK)
                self.send(when, conv, _SERVER, FIN | ACK)  # acknowledging the client's
                self.send(when, conv, _CLIENT, ACK)
            elif left:
                self.send(when, conv, left[0], FIN | ACK)
                self.send(when, conv, 1 - left[0], ACK)
        del self.conversations[event.conn]


_FIN_CUTS = frozenset(("", TRUNCATE_CUT))
"""The ends of stream (`StreamEnded.cut`) a FIN carried: a side's own, and ``--fault
truncate``'s (it sends part of a frame, then closes with a FIN)."""

_HELD_LINES = 256
"""Lines held, at most, waiting for the next line that makes packets (a file of nothing but
lines that make none is not held whole)."""


def _makes_packets(event: Event, chunks: list[bytes]) -> bool:
    if isinstance(event, (ConnectionOpened, ConnectionClosed, StreamEnded)):
        return True
    return bool(chunks) and isinstance(event, (FrameSeen, FramingErrorSeen, BytesDiscarded))


def write_pcapng(
    events: Iterable[Event], header: Header, profile: Profile, out: IO[bytes]
) -> CaptureSummary:
    """Write the recording ``events`` (with its ``header``) to ``out`` as a pcapng capture, one
    TCP conversation per connection (see the module's docstring). Holds one connection's state
    per open connection, never a stream. Raises OSError from ``out`` and whatever reading
    ``events`` raises."""
    start, problem = _start(header.started_at)
    comment = ""
    if problem is not None:
        comment = (
            f"The recording's header has {problem}: packet times count from "
            "1970-01-01 00:00:00 UTC; only the times between packets are right."
        )
    writer = PcapngWriter(out, f"golem-proxy {__version__}", comment=comment)
    exporter = _Exporter(header, profile, writer, start)
    exporter.summary.start_problem = problem
    # Each route's payloads framed with its own profile (the mcp hop of `golem-proxy mcp`).
    # A line is written once the next line that makes packets is read: its time is the one
    # a packet ahead of it is brought back to (the module's docstring).
    held: list[tuple[Event, list[bytes]]] = []
    for event, chunks in chunks_by_event(events, profile, route_profiles(header)):
        if _makes_packets(event, chunks) or len(held) >= _HELD_LINES:
            exporter.ahead = exporter.when(event.t) if _makes_packets(event, chunks) else None
            for line in held:
                exporter.feed(*line)
            held.clear()
        held.append((event, list(chunks)))  # the list is reused for the next line
    exporter.ahead = None
    for line in held:
        exporter.feed(*line)
    exporter.summary.packets = writer.packets
    return exporter.summary
