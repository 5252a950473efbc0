"""Crash safety: the proxy command is killed with SIGKILL while it records a busy session;
every recording it leaves must be readable and every complete exchange in it intact."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from golem_core.blocking import MessageReader, send_message
from golem_core.messages import Request, Response, Role
from golem_proxy.net.addresses import Address
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.upstreams import GolemUpstream

from .proxy_cli import start_proxy_cli


class ThreadedUpstream:
    """A `GolemUpstream` (many clients at once) running its own trio loop in a thread."""

    def __init__(self) -> None:
        self.address = Address()
        self._ready = threading.Event()
        self._token: Any = None
        self._scope: Any = None
        self._thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)

    async def _main(self) -> None:
        upstream = GolemUpstream()
        with trio.CancelScope() as scope:
            self._scope = scope
            self._token = trio.lowlevel.current_trio_token()
            async with trio.open_nursery() as nursery:
                self.address = await nursery.start(upstream.serve)
                self._ready.set()

    def __enter__(self) -> ThreadedUpstream:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("upstream did not start")
        return self

    def __exit__(self, *exc_info: object) -> None:
        trio.from_thread.run_sync(self._scope.cancel, trio_token=self._token)
        self._thread.join(10)


def _hammer(port: int, stop: threading.Event, counts: list[int]) -> None:
    """Sequential echo calls until the proxy dies (or ``stop``)."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        return
    reader = MessageReader(sock)
    n = 0
    try:
        while not stop.is_set():
            send_message(sock, {"id": f"{port}-{n}", "method": "echo", "params": {"n": n}})
            if reader.read_message(Role.RESPONSE) is None:
                return
            n += 1
    except Exception:  # the proxy was killed: any socket or framing error ends the client
        return
    finally:
        counts.append(n)
        sock.close()


def kill_everything(pid: int) -> None:
    """SIGKILL ``pid`` and its children at once (with ``--observer child-process``, the
    observing process too: nothing of the proxy gets to flush on the way out)."""
    family = [pid]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                family.append(int(entry.name))
    for member in family:
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGKILL)


def crash_runs(
    tmp: Path,
    runs: int = 5,
    clients: int = 8,
    seed: int = 3,
    kill_after: tuple[float, float] = (0.3, 1.5),
    proxy_args: Sequence[str] = (),
) -> dict[str, Any]:
    """Kill -9 the recording proxy (and its children, ``kill_everything``) ``runs`` times at
    random moments under load (uniformly between ``kill_after`` seconds after the clients
    start); ``proxy_args`` are added to its command line. Each run's ``missing_s`` is how far
    the recording trailed the wire: the completed round trips it lacks, in seconds of the
    run's own rate."""
    rng = random.Random(seed)
    figures: dict[str, Any] = {"runs": runs, "clients": clients, "per_run": []}
    broken: list[str] = []
    with ThreadedUpstream() as upstream:
        for run in range(runs):
            record = tmp / f"crash-{run}.jsonl"
            cli = start_proxy_cli(
                "--route", f"127.0.0.1:0={upstream.address}", "--record", str(record), "-q",
                *proxy_args,
            )  # fmt: skip
            stop = threading.Event()
            counts: list[int] = []
            threads = [
                threading.Thread(target=_hammer, args=(cli.port, stop, counts), daemon=True)
                for _ in range(clients)
            ]
            for thread in threads:
                thread.start()
            after = rng.uniform(*kill_after)
            time.sleep(after)
            kill_everything(cli.process.pid)  # no handler runs, nothing is flushed
            cli.kill()
            stop.set()
            for thread in threads:
                thread.join(10)
            try:
                recording = read_recording(str(record))
            except Exception as exc:
                broken.append(f"run {run}: unreadable: {exc}")
                continue
            exchanges = recording.exchanges()
            by_conn: dict[int, list[int]] = {}
            for exchange in exchanges:
                ident = str(exchange.request.message.id)
                by_conn.setdefault(exchange.conn, []).append(int(ident.rsplit("-", 1)[1]))
            for conn, numbers in by_conn.items():
                if numbers != list(range(len(numbers))):
                    broken.append(f"run {run}: conn {conn} has holes in its exchanges")
            for exchange in exchanges:
                request, response = exchange.request.message, exchange.response.message
                ok = (
                    isinstance(request, Request)
                    and isinstance(response, Response)
                    and request.id == response.id
                    and response.result == request.params
                )
                try:
                    json.loads(exchange.request.payload)
                    json.loads(exchange.response.payload)
                except ValueError:
                    ok = False
                if not ok:
                    broken.append(f"run {run}: exchange {request.id!r} not intact")
            done, recorded = sum(counts), len(exchanges)
            rate = done / after if after else 0.0
            figures["per_run"].append(
                {
                    "missing_s": round((done - recorded) / rate, 3) if rate else 0.0,
                    "killed_after_s": round(after, 2),
                    "client_round_trips": sum(counts),
                    "recorded_exchanges": len(exchanges),
                    "truncated_tail": recording.truncated_tail,
                    "bytes": record.stat().st_size,
                }
            )
    per_run = figures["per_run"]
    figures.update(
        unreadable=sum(1 for b in broken if "unreadable" in b),
        broken_exchanges=sum(1 for b in broken if "not intact" in b),
        holes=sum(1 for b in broken if "holes" in b),
        recorded_exchanges=sum(r["recorded_exchanges"] for r in per_run),
        client_round_trips=sum(r["client_round_trips"] for r in per_run),
        truncated_tails=sum(1 for r in per_run if r["truncated_tail"]),
        first_problems=broken[:5],
    )
    return figures
