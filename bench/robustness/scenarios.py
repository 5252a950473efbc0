"""In-process robustness scenarios, sized by their arguments: the CI tests run them small,
``bench/soak.py`` runs them big. Each returns its figures as a dict; the callers assert on them.

Everything runs on loopback in one trio run: clients, proxy (with recording) and upstream.
"""

from __future__ import annotations

import random
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import trio

from golem_core.framing import Frame
from golem_core.messages import Response, Role
from golem_core.profiles import GOLEM
from golem_proxy.events import ConnectionClosed, Direction, ObservationLost
from golem_proxy.live.hub import Subscription
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.session import ProxySession, SessionConfig
from golem_proxy.live.tap import ObserveLimits
from golem_proxy.net.addresses import Address, Route
from golem_proxy.net.listeners import close_abortively
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.upstreams import GolemUpstream, TracingUpstream

from .figures import open_fds, percentile, rss_kib, trio_tasks

Figures = dict[str, Any]


@dataclass
class Served:
    session: ProxySession
    listen: Address
    closed: list[ConnectionClosed] = field(default_factory=list)


async def serve(
    nursery: trio.Nursery,
    upstream: Address,
    record: Optional[Path] = None,
    options: Optional[ProxyOptions] = None,
) -> Served:
    """A proxy session with a consumer that keeps only connection closes (bounded memory)."""
    config = SessionConfig(
        routes=[Route("main", Address("127.0.0.1", 0), upstream)],
        profile=GOLEM,
        options=options or ProxyOptions(drain_timeout=1.0),
        record_path=str(record) if record else None,
    )
    session = ProxySession(config)
    served = Served(session, Address())

    async def closes(subscription: Subscription) -> None:
        async for event in subscription.receive_channel:
            if isinstance(event, ConnectionClosed):
                served.closed.append(event)

    session.add_consumer("closes", closes, buffer=float("inf"))
    bound = await nursery.start(session.run)
    served.listen = bound[0].listen
    return served


async def stop(served: Served) -> None:
    served.session.stop()
    with trio.fail_after(30):
        await served.session.finished.wait()


async def connect(address: Address) -> trio.SocketStream:
    return await trio.open_tcp_stream(address.host, address.port)


async def read_frame(stream: trio.SocketStream, decoder: Any) -> Optional[Frame]:
    while True:
        for event in decoder.events():
            if isinstance(event, Frame):
                return event
            return None
        chunk = await stream.receive_some(65536)
        if not chunk:
            return None
        decoder.receive_data(chunk)


async def load(tmp: Path, connections: int = 200, seconds: float = 5.0) -> Figures:
    """``connections`` clients each doing sequential echo round trips for ``seconds``, through
    the proxy with recording on. Compares what clients saw with what was recorded."""
    record = tmp / "load.jsonl"
    latencies: list[float] = []
    done: dict[int, list[str]] = {}
    errors: list[str] = []
    rss = {"start": rss_kib()}
    async with trio.open_nursery() as nursery:
        upstream = GolemUpstream()
        await nursery.start(upstream.serve)
        served = await serve(nursery, upstream.address, record)
        deadline = trio.current_time() + seconds

        async def client(number: int) -> None:
            ids = done.setdefault(number, [])
            stream = await connect(served.listen)
            decoder = GOLEM.new_decoder()
            n = 0
            while trio.current_time() < deadline:
                ident = f"{number}-{n}"
                params = {"n": n, "pad": "x" * (n % 64)}
                start = trio.current_time()
                await stream.send_all(
                    GOLEM.encode({"id": ident, "method": "echo", "params": params})
                )
                frame = await read_frame(stream, decoder)
                latencies.append(trio.current_time() - start)
                reply = GOLEM.parse(frame.payload, Role.RESPONSE) if frame else None
                if not isinstance(reply, Response) or reply.id != ident or reply.result != params:
                    errors.append(f"{ident}: {reply!r}")
                    break
                ids.append(ident)
                n += 1
            await stream.aclose()

        async with trio.open_nursery() as clients:
            for number in range(connections):
                clients.start_soon(client, number)
            await trio.sleep(min(1.0, seconds / 2))
            rss["warm"] = rss_kib()
            samples = [rss["warm"]]
            while trio.current_time() < deadline:
                await trio.sleep(min(1.0, max(0.0, deadline - trio.current_time())))
                samples.append(rss_kib())
        rss["end"] = rss_kib()
        backlog = served.session.proxy.observer.backlog
        queued = max(
            sub.receive_channel.statistics().current_buffer_used
            for sub in served.session.hub._subscriptions
        )
        await stop(served)
        nursery.cancel_scope.cancel()
    sent = sum(len(ids) for ids in done.values())
    recording = read_recording(str(record))
    exchanges = recording.exchanges()
    recorded_ids = {(e.conn, e.request.message.id) for e in exchanges}
    mispaired = sum(1 for e in exchanges if e.request.message.id != e.response.message.id)
    client_ids = {ident for ids in done.values() for ident in ids}
    return {
        "connections": connections,
        "seconds": seconds,
        "exchanges_client": sent,
        "exchanges_recorded": len(exchanges),
        "exchanges_per_s": round(sent / seconds, 1),
        "lost": len(client_ids - {str(i) for _, i in recorded_ids}),
        "lost_without_gap": _lost_without_gap(recording.events, recorded_ids, done),
        "mispaired": mispaired,
        "duplicates": len(exchanges) - len(recorded_ids),
        "client_errors": len(errors),
        "latency_p50_ms": round(percentile(latencies, 0.5) * 1000, 2),
        "latency_p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
        "rss_start_kib": rss["start"],
        "rss_warm_kib": rss["warm"],
        "rss_end_kib": rss["end"],
        "rss_max_kib": max(samples),
        "tap_backlog_end_bytes": backlog,
        "consumer_queue_end_events": queued,
        "rss_second_half_growth_kib": samples[-1] - samples[len(samples) // 2],
        "recording_bytes": record.stat().st_size,
        "missed_events": sum(1 for e in recording.events if type(e).__name__ == "EventsMissed"),
    }


def _lost_without_gap(
    events: list[Any], recorded: set[tuple[int, Any]], done: dict[Any, list[Any]]
) -> int:
    """Exchanges a client completed that the recording has neither as an exchange nor under an
    `ObservationLost` gap of the connection that carried them."""
    gapped = {e.conn for e in events if isinstance(e, ObservationLost)}
    conn_of = {str(i): conn for conn, i in recorded}
    by_client = {str(i) for ids in done.values() for i in ids}
    missing = by_client - set(conn_of)
    if not missing:
        return 0
    # A client's ids all travel on one connection: find it from its recorded exchanges.
    unaccounted = 0
    for ids in done.values():
        mine = {str(i) for i in ids}
        conns = {conn_of[i] for i in mine if i in conn_of}
        lost = len(mine & missing)
        if lost and not (conns & gapped) and not (not conns and gapped):
            unaccounted += lost
    return unaccounted


@dataclass
class ChaosUpstream(TracingUpstream):
    """Echoes raw bytes; connection ``i`` resets itself after ``cut[i]`` bytes when set."""

    cut: dict[int, int] = field(default_factory=dict)

    async def _handle(self, stream: trio.SocketStream) -> None:
        index = len(self.received)
        received, sent, ended = bytearray(), bytearray(), trio.Event()
        self.received.append(received)
        self.sent.append(sent)
        self.ended.append(ended)
        limit = self.cut.get(index)
        try:
            async for chunk in stream:
                received += chunk
                if limit is not None and len(received) >= limit:
                    close_abortively(stream)
                    return
                sent += chunk
                await stream.send_all(chunk)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            ended.set()
            if stream.socket.fileno() != -1:
                await stream.aclose()


def _chaos_bytes(rng: random.Random, size: int) -> bytes:
    """Valid frames mixed with garbage (random bytes, lone headers, huge declared lengths)."""
    out = bytearray()
    while len(out) < size:
        roll = rng.random()
        if roll < 0.6:
            out += GOLEM.encode({"id": str(rng.random()), "method": "echo", "params": {"n": 1}})
        elif roll < 0.8:
            out += rng.randbytes(rng.randrange(1, 64))
        elif roll < 0.9:
            out += struct.pack("!I", rng.randrange(0, 200))
        else:
            out += struct.pack("!I", rng.randrange(2**26, 2**32))  # oversized: skipped after
    return bytes(out)


async def chaos(tmp: Path, runs: int = 40, seed: int = 1) -> Figures:
    """Random chunking, garbage and disconnects on both sides, one connection per run. The
    recording's rebuilt streams must be byte-exact prefixes along the path client → proxy →
    upstream (and back), and equal to everything sent whenever both sides closed cleanly."""
    rng = random.Random(seed)
    record = tmp / "chaos.jsonl"
    client_sent: list[bytes] = []
    client_got: list[bytearray] = []
    modes: list[str] = []
    upstream = ChaosUpstream()
    async with trio.open_nursery() as nursery:
        await nursery.start(upstream.serve)
        # Random bytes can declare any frame size up to the cap: observe up to the cap, so
        # every byte is in the recording (frames over the limit are digests only).
        whole = ProxyOptions(drain_timeout=1.0, observe=ObserveLimits(frame=64 * 1024 * 1024))
        served = await serve(nursery, upstream.address, record, options=whole)
        for run in range(runs):
            mode = rng.choice(["clean", "clean", "client-reset", "upstream-reset"])
            data = _chaos_bytes(rng, rng.randrange(10, 20_000))
            if mode == "upstream-reset":
                upstream.cut[run] = rng.randrange(1, len(data) + 1)
            cut = rng.randrange(1, len(data) + 1) if mode == "client-reset" else len(data)
            got = bytearray()
            client_got.append(got)
            modes.append(mode)
            stream = await connect(served.listen)
            sent = bytearray()

            async def reader(stream: trio.SocketStream = stream, got: bytearray = got) -> None:
                try:
                    async for chunk in stream:
                        got.extend(chunk)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass

            with trio.move_on_after(20):
                async with trio.open_nursery() as inner:
                    inner.start_soon(reader)
                    try:
                        pos = 0
                        while pos < cut:
                            size = rng.choice([1, 2, 3, 7, 64, 1000, 8192])
                            piece = data[pos : min(cut, pos + size)]
                            await stream.send_all(piece)
                            sent += piece
                            pos += len(piece)
                            if rng.random() < 0.05:
                                await trio.sleep(0.001)
                        if mode == "client-reset":
                            inner.cancel_scope.cancel()
                            close_abortively(stream)
                        else:
                            await stream.send_eof()
                    except trio.BrokenResourceError:
                        inner.cancel_scope.cancel()
            client_sent.append(bytes(sent))
            if stream.socket.fileno() != -1:
                await stream.aclose()
            await upstream.wait_ended(run)
        await stop(served)
        nursery.cancel_scope.cancel()
    recording = read_recording(str(record))
    from golem_proxy.live.faults import received_streams

    streams = received_streams(recording.events, recording.profile)
    closes = {e.conn: e for e in recording.events if isinstance(e, ConnectionClosed)}
    broken: list[str] = []
    for run in range(runs):
        conn = run + 1
        c2s = streams.get((conn, Direction.C2S), b"")
        s2c = streams.get((conn, Direction.S2C), b"")
        up_got, up_sent = bytes(upstream.received[run]), bytes(upstream.sent[run])
        got = bytes(client_got[run])
        checks = {
            "c2s recorded ⊑ client sent": client_sent[run].startswith(c2s),
            "upstream got ⊑ c2s recorded": c2s.startswith(up_got),
            "s2c recorded ⊑ upstream sent": up_sent.startswith(s2c),
            "client got ⊑ s2c recorded": s2c.startswith(got),
            "close counts = recorded": conn in closes
            and (closes[conn].bytes_c2s, closes[conn].bytes_s2c) == (len(c2s), len(s2c)),
        }
        if modes[run] == "clean":
            checks["clean: all equal"] = client_sent[run] == c2s == up_got and up_sent == s2c == got
        broken += [f"run {run} ({modes[run]}): {name}" for name, ok in checks.items() if not ok]
    return {
        "runs": runs,
        "modes": {m: modes.count(m) for m in sorted(set(modes))},
        "bytes_c2s": sum(len(s) for s in client_sent),
        "bytes_s2c": sum(len(g) for g in client_got),
        "frames_recorded": sum(1 for e in recording.events if type(e).__name__ == "FrameSeen"),
        "framing_errors": sum(
            1 for e in recording.events if type(e).__name__ == "FramingErrorSeen"
        ),
        "mismatches": len(broken),
        "first_mismatches": broken[:5],
    }


async def slowloris(
    stallers: int = 50,
    tricklers: int = 10,
    seconds: float = 3.0,
    idle_timeout: Optional[float] = None,
    trickle_interval: float = 0.2,
) -> Figures:
    """Clients that send a header and stall, and clients that trickle a request one byte per
    ``trickle_interval``; meanwhile a normal client's round-trip latency is measured, before
    and during. With ``idle_timeout`` the stalled connections must be closed by the proxy."""
    baseline: list[float] = []
    loaded: list[float] = []
    stalled_closed = 0
    trickled_alive = 0
    async with trio.open_nursery() as nursery:
        upstream = GolemUpstream()
        await nursery.start(upstream.serve)
        options = ProxyOptions(drain_timeout=0.5, idle_timeout=idle_timeout)
        served = await serve(nursery, upstream.address, options=options)

        async def normal(until: float, into: list[float]) -> None:
            stream = await connect(served.listen)
            decoder = GOLEM.new_decoder()
            n = 0
            while trio.current_time() < until:
                start = trio.current_time()
                await stream.send_all(GOLEM.encode({"id": n, "method": "ping", "params": {}}))
                assert await read_frame(stream, decoder) is not None
                into.append(trio.current_time() - start)
                n += 1
                await trio.sleep(0.01)
            await stream.aclose()

        await normal(trio.current_time() + min(1.0, seconds / 2), baseline)
        end = trio.current_time() + seconds

        async def staller() -> None:
            nonlocal stalled_closed
            stream = await connect(served.listen)
            await stream.send_all(struct.pack("!I", 50) + b'{"id"')
            with trio.move_on_at(end):
                try:
                    if await stream.receive_some(1) == b"":
                        stalled_closed += 1
                except trio.BrokenResourceError:
                    stalled_closed += 1
            await stream.aclose()

        async def trickler() -> None:
            nonlocal trickled_alive
            stream = await connect(served.listen)
            frame = GOLEM.encode({"id": "slow", "method": "ping", "params": {}})
            alive = True
            try:
                while trio.current_time() < end:
                    for byte in frame:
                        if trio.current_time() >= end:
                            break
                        await stream.send_all(bytes([byte]))
                        await trio.sleep(trickle_interval)
            except trio.BrokenResourceError:
                alive = False
            trickled_alive += alive
            await stream.aclose()

        async with trio.open_nursery() as attackers:
            for _ in range(stallers):
                attackers.start_soon(staller)
            for _ in range(tricklers):
                attackers.start_soon(trickler)
            await trio.sleep(0.2)
            attackers.start_soon(normal, end, loaded)
        await stop(served)
        nursery.cancel_scope.cancel()
    idle_closes = sum(1 for e in served.closed if "idle" in e.reason)
    return {
        "stallers": stallers,
        "tricklers": tricklers,
        "seconds": seconds,
        "idle_timeout": idle_timeout,
        "baseline_p50_ms": round(percentile(baseline, 0.5) * 1000, 2),
        "baseline_p99_ms": round(percentile(baseline, 0.99) * 1000, 2),
        "loaded_p50_ms": round(percentile(loaded, 0.5) * 1000, 2),
        "loaded_p99_ms": round(percentile(loaded, 0.99) * 1000, 2),
        "normal_round_trips": len(loaded),
        "stallers_closed_by_proxy": stalled_closed,
        "idle_closes": idle_closes,
        "tricklers_alive": trickled_alive,
    }


async def _settle(check: Callable[[], Awaitable[bool]], seconds: float = 5.0) -> bool:
    with trio.move_on_after(seconds):
        while not await check():
            await trio.sleep(0.05)
        return True
    return False


async def hygiene(connections: int = 100, seed: int = 2) -> Figures:
    """Open and close connections in every way; descriptors and trio tasks must come back to
    what they were with the proxy idle."""
    rng = random.Random(seed)
    kinds: dict[str, int] = {}
    async with trio.open_nursery() as nursery:
        upstream = GolemUpstream()
        await nursery.start(upstream.serve)
        served = await serve(nursery, upstream.address, options=ProxyOptions(drain_timeout=0.5))
        await trio.sleep(0.1)
        before = {"fds": open_fds(), "tasks": trio_tasks(), "rss_kib": rss_kib()}
        started = time.monotonic()

        refused = 0

        async def one(kind: str) -> None:
            nonlocal refused
            try:
                await exercise(kind)
            except trio.BrokenResourceError:
                # The proxy resets a client whose upstream connection failed (a burst past the
                # upstream's listen backlog): what the client would see without the proxy.
                refused += 1

        async def exercise(kind: str) -> None:
            stream = await connect(served.listen)
            decoder = GOLEM.new_decoder()
            await stream.send_all(GOLEM.encode({"id": 1, "method": "echo", "params": {}}))
            if kind == "clean":
                await read_frame(stream, decoder)
                await stream.aclose()
            elif kind == "reset-mid-frame":
                await stream.send_all(struct.pack("!I", 100) + b"{")
                close_abortively(stream)
            elif kind == "half-close":
                await stream.send_eof()
                await read_frame(stream, decoder)
                await stream.aclose()
            else:  # garbage then close
                await stream.send_all(rng.randbytes(300))
                await stream.aclose()

        async with trio.open_nursery() as clients:
            for _ in range(connections):
                kind = rng.choice(["clean", "reset-mid-frame", "half-close", "garbage"])
                kinds[kind] = kinds.get(kind, 0) + 1
                clients.start_soon(one, kind)

        async def back_to_baseline() -> bool:
            return (
                served.session.proxy.live_connections == 0
                and open_fds() <= before["fds"]
                and trio_tasks() <= before["tasks"]
            )

        settled = await _settle(back_to_baseline)
        after = {"fds": open_fds(), "tasks": trio_tasks(), "rss_kib": rss_kib()}
        await stop(served)
        nursery.cancel_scope.cancel()
    return {
        "connections": connections,
        "kinds": kinds,
        "fds_before": before["fds"],
        "fds_after": after["fds"],
        "tasks_before": before["tasks"],
        "tasks_after": after["tasks"],
        "rss_before_kib": before["rss_kib"],
        "rss_after_kib": after["rss_kib"],
        "settled": settled,
        "seconds": round(time.monotonic() - started, 2),
        "closes_seen": len(served.closed),
        "reset_by_proxy": refused,
        "abnormal_closes": sum(1 for e in served.closed if e.abnormal),
    }
