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
from typing import Any, Optional

import trio

from golem_core.blocking import MessageReader, send_message
from golem_core.messages import Request, Response, Role
from golem_proxy.net.addresses import Address
from golem_proxy.recording.format import Recording, read_recording
from golem_proxy.recording.spool_left import quiet_about
from golem_proxy.testing.upstreams import GolemUpstream

from .proxy_cli import start_proxy_cli
from .recover_run import remove_spool_left, run_recover


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


def _read_checked(path: Path, run: int, broken: list[str], when: str = "") -> Optional[Recording]:
    """Read the recording at ``path`` and check it (no hole in a connection's exchanges, every
    exchange intact), noting what is wrong in ``broken`` (``when`` says which reading of the
    run); None when it is unreadable."""
    try:
        recording = read_recording(str(path))
    except Exception as exc:
        broken.append(f"run {run}{when}: unreadable: {exc}")
        return None
    exchanges = recording.exchanges()
    by_conn: dict[int, list[int]] = {}
    for exchange in exchanges:
        ident = str(exchange.request.message.id)
        by_conn.setdefault(exchange.conn, []).append(int(ident.rsplit("-", 1)[1]))
    for conn, numbers in by_conn.items():
        if numbers != list(range(len(numbers))):
            broken.append(f"run {run}{when}: conn {conn} has holes in its exchanges")
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
            broken.append(f"run {run}{when}: exchange {request.id!r} not intact")
    return recording


def _missing_s(done: int, recorded: int, rate: float) -> float:
    """The completed round trips a recording lacks, in seconds of the run's rate."""
    return round((done - recorded) / rate, 3) if rate else 0.0


def _recovered(record: Path, run: int, done: int, rate: float) -> tuple[dict[str, Any], list[str]]:
    """Run ``golem-proxy recover`` on what the kill left (the real command), and the figures
    of the recording it leaves: its exit status and line, and when it rebuilt one, the
    exchanges it holds and what it lacks, checked as the recording at the kill is. The spool
    goes either way (`remove_spool_left`). Returns the figures and the problems found."""
    broken: list[str] = []
    try:
        done_by = run_recover(record)
    finally:
        remove_spool_left(record)
    figures: dict[str, Any] = {"status": done_by.status, "said": done_by.said}
    if done_by.status != 0:
        return figures, [f"run {run}: recover failed (exit {done_by.status}): {done_by.said}"]
    recording = _read_checked(done_by.path, run, broken, " after recover")
    if recording is not None:
        recorded = len(recording.exchanges())
        figures.update(
            path=done_by.path.name,
            recorded_exchanges=recorded,
            missing_s=_missing_s(done, recorded, rate),
            truncated_tail=recording.truncated_tail,
        )
    return figures, broken


def crash_runs(
    tmp: Path,
    runs: int = 5,
    clients: int = 8,
    seed: int = 3,
    kill_after: tuple[float, float] = (0.3, 1.5),
    proxy_args: Sequence[str] = (),
    recover: bool = False,
) -> dict[str, Any]:
    """Kill -9 the recording proxy (and its children, ``kill_everything``) ``runs`` times at
    random moments under load (uniformly between ``kill_after`` seconds after the clients
    start); ``proxy_args`` are added to its command line. Each run's ``missing_s`` is how far
    the recording trailed the wire: the completed round trips it lacks, in seconds of the
    run's own rate.

    ``recover`` (the proxy runs with ``--observer-spool``): after each kill, ``golem-proxy
    recover`` is run on the recording as a user runs it, and the run's ``recovered`` figures
    are those of the recording it leaves (`_recovered`: its exit status and line, its
    exchanges, ``missing_s``), checked as the recording at the kill is; the spool is removed
    after it, whatever it did."""
    rng = random.Random(seed)
    figures: dict[str, Any] = {"runs": runs, "clients": clients, "per_run": []}
    broken: list[str] = []
    after_recover: list[str] = []
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
            done = sum(counts)
            rate = done / after if after else 0.0
            if recover:
                quiet_about(str(record))  # its spool is recover's to say, and decode
            recording = _read_checked(record, run, broken)
            row: dict[str, Any] = {"killed_after_s": round(after, 2), "client_round_trips": done}
            if recover:
                row["recovered"], found = _recovered(record, run, done, rate)
                after_recover += found
            elif recording is None:
                continue
            if recording is not None:
                recorded = len(recording.exchanges())
                row.update(
                    missing_s=_missing_s(done, recorded, rate),
                    recorded_exchanges=recorded,
                    truncated_tail=recording.truncated_tail,
                    bytes=record.stat().st_size,
                )
            else:  # unreadable as the kill left it (its recovery is in ``recovered``)
                row.update(missing_s=None, recorded_exchanges=None, truncated_tail=None, bytes=None)
            figures["per_run"].append(row)
    per_run = [r for r in figures["per_run"] if r["recorded_exchanges"] is not None]
    figures.update(
        unreadable=sum(1 for b in broken if "unreadable" in b),
        broken_exchanges=sum(1 for b in broken if "not intact" in b),
        holes=sum(1 for b in broken if "holes" in b),
        recorded_exchanges=sum(r["recorded_exchanges"] for r in per_run),
        client_round_trips=sum(r["client_round_trips"] for r in figures["per_run"]),
        truncated_tails=sum(1 for r in per_run if r["truncated_tail"]),
        first_problems=broken[:5],
    )
    if recover:
        figures["after_recover"] = {
            "failed": sum(1 for b in after_recover if "recover failed" in b),
            "unreadable": sum(1 for b in after_recover if "unreadable" in b),
            "broken_exchanges": sum(1 for b in after_recover if "not intact" in b),
            "holes": sum(1 for b in after_recover if "holes" in b),
            "first_problems": after_recover[:5],
        }
    return figures
