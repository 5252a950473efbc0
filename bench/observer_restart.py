"""Replacing a dead observing process under load: 8 clients make sequential GOLEM calls, each on
one connection kept open the whole run (as the GOLEM MCP server does), through ``golem-proxy
proxy --record F --observer-restarts K`` to an echo upstream; every 1.5-3 s (seeded) the proxy's
child, the observing process, gets ``kill -9``, K times; 2 s after the last take-over the clients
stop and the proxy gets Ctrl-C, as a user stops it.

    python bench/observer_restart.py [--kills 5] [--clients 8] [--seed 34] [--quick] [--tui]
                                     [--json FILE]

Each kill: the gap measured here (kill to the ``observation-restarted`` line in the file, polled
every 5 ms) and as its ``detail`` says (death noticed to take-over, on the proxy's clock); the
connections taken up; the bytes of its ``unobserved`` lines of reason ``restarted``; the calls
completed from the kill to the line (this script's clock) against the exchanges whose ``t`` lies
between the detail's two instants (the proxy's): approximate, the windows differ by a few ms.
The whole run: calls, exchanges, client errors (must be 0: forwarding never stops), the strict
reader, ``seq`` contiguous, no frame ``n`` repeated per connection and direction, no
``violation`` line. Exit code 1 when one fails or a kill was not followed by a restart.

With ``--tui`` the proxy runs ``--tui`` on a pseudo-terminal (pty_terminal.py): the process
killed draws the TUI, and the one that takes over reads the rows before it back from the
recording while it records on; it is stopped by a Ctrl-C typed into the TUI. What the proxy
writes on the terminal is not read (its stderr lines are not counted).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # as `./dev bench` runs it

from bench.processes import free_port, observing_process, wait_port
from bench.pty_terminal import DrainedTerminal
from bench.robustness.crash import ThreadedUpstream
from bench.robustness.proxy_cli import ROOT, start_proxy_cli
from golem_core.blocking import MessageReader, send_message
from golem_core.messages import Response, Role
from golem_proxy.recording.format import read_recording

RESTARTED = b'"kind":"observation-restarted"'
DETAIL = re.compile(
    r" at ([\d.]+) s; a new observing process took over at ([\d.]+) s: .*?"
    r"(\d+) open connections? taken up"
)
HANDED = re.compile(r"up to (\d+) bytes more")


class Client:
    """Sequential echo calls on one connection until `stop`; each answer's arrival time (this
    script's monotonic clock). Any failure is kept in ``error`` and ends the client."""

    def __init__(self, port: int, name: str, stop: threading.Event) -> None:
        self.port, self.name, self.stop = port, name, stop
        self.done: list[float] = []
        self.error: Optional[str] = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
                reader = MessageReader(sock)
                while not self.stop.is_set():
                    n = len(self.done)
                    call = {"id": f"{self.name}-{n}", "method": "echo", "params": {"n": n}}
                    send_message(sock, call)
                    answer = reader.read_message(Role.RESPONSE)
                    if not (isinstance(answer, Response) and answer.result == call["params"]):
                        raise RuntimeError(f"call {n}: got {answer!r}")
                    self.done.append(time.monotonic())
        except Exception as exc:  # a refused, reset or stalled connection: forwarding stopped
            self.error = f"{self.name}: {exc!r}"


class RestartWatch:
    """Notes when each ``observation-restarted`` line appears in the recording (this script's
    clock), reading only what was appended since the last look, every 5 ms."""

    def __init__(self, record: Path) -> None:
        self.record = record
        self.seen: list[float] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        offset = 0
        while not self._done.wait(0.005):
            try:
                with open(self.record, "rb") as recording:
                    recording.seek(offset)
                    data = recording.read()
            except OSError:
                continue
            whole = data[: data.rfind(b"\n") + 1]  # a line being written is read next time
            offset += len(whole)
            now = time.monotonic()
            self.seen.extend([now] * whole.count(RESTARTED))

    def wait(self, count: int, limit: float) -> bool:
        deadline = time.monotonic() + limit
        while len(self.seen) < count and time.monotonic() < deadline:
            time.sleep(0.002)
        return len(self.seen) >= count

    def close(self) -> None:
        self._done.set()
        self._thread.join()


def examine(record: Path) -> dict[str, Any]:
    """One pass over the recording: the restarts (with what each left unobserved and the
    exchanges recorded in its gap), the exchanges, and the whole-file checks."""
    restarts: list[dict[str, Any]] = []
    exchanges: list[float] = []
    frames: set[tuple[int, str, int]] = set()
    repeats = violations = misnumbered = 0
    with open(record, "rb") as lines:
        next(lines)  # the header
        for seq, line in enumerate(map(json.loads, lines), 1):
            misnumbered += line["seq"] != seq
            kind = line["kind"]
            if kind == "exchange":
                exchanges.append(line["t"])
            elif kind == "frame":
                key = (line["conn"], line["dir"], line["n"])
                repeats += key in frames
                frames.add(key)
            elif kind == "violation":
                violations += 1
            elif kind == "observation-restarted":
                found = DETAIL.search(line["detail"])
                died, took_over, taken_up = found.groups() if found else ("nan", "nan", "-1")
                restarts.append(
                    {"died_t": float(died), "took_over_t": float(took_over),
                     "taken_up": int(taken_up), "unobserved_bytes": 0, "unobserved_lines": 0,
                     "handed_maybe_unrecorded_bytes": 0, "detail": line["detail"]}
                )  # fmt: skip
            elif kind == "unobserved" and line["reason"] == "restarted" and restarts:
                restarts[-1]["unobserved_bytes"] += line["size"]
                restarts[-1]["unobserved_lines"] += 1
                handed = HANDED.search(line["detail"])
                restarts[-1]["handed_maybe_unrecorded_bytes"] += int(handed[1]) if handed else 0
    for restart in restarts:
        restart["detail_gap_s"] = restart["took_over_t"] - restart["died_t"]
        window = (restart["died_t"], restart["took_over_t"])
        restart["recorded_in_outage"] = sum(1 for t in exchanges if window[0] <= t <= window[1])
    try:
        recording = read_recording(str(record))
        whole = "yes" if not recording.truncated_tail else "no (truncated tail)"
    except Exception as exc:
        whole = f"NO: {exc}"
    return {
        "restarts": restarts, "exchange_times": exchanges, "seq_contiguous": not misnumbered,
        "n_repeats": repeats, "violations": violations, "reads_whole": whole,
    }  # fmt: skip


class TuiProxy:
    """``golem-proxy proxy --tui`` on a drained pseudo-terminal, as `ProxyCli` is without it
    (its ``stderr`` stays empty: the terminal is not read)."""

    def __init__(self, upstream: str, *args: str) -> None:
        self.port = free_port()
        self.stderr = ""
        self.terminal = DrainedTerminal()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "golem_proxy", "proxy", "--tui", *args,
             "--route", f"127.0.0.1:{self.port}={upstream}"],
            cwd=ROOT, **self.terminal.popen_options(),
        )  # fmt: skip
        self.terminal.started()
        wait_port(self.port, self.process)

    def stop(self) -> None:
        """Ctrl-C typed into the TUI, which quits without asking; killed after 30 s."""
        self.terminal.type("\x03")
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.terminal.close()


def run(kills: int, clients: int, seed: int, interval: tuple[float, float], tail: float,
        record: Path, tui: bool = False) -> dict[str, Any]:  # fmt: skip
    """The session (see the module docstring); every figure, by kill and in total."""
    rng = random.Random(seed)
    load_start = os.getloadavg()
    kill_times: list[float] = []
    with ThreadedUpstream() as upstream:
        options = ("--record", str(record), "--observer", "child-process",
                   "--observer-restarts", str(kills))  # fmt: skip
        cli: Any
        if tui:
            cli = TuiProxy(upstream.address, *options)
        else:
            cli = start_proxy_cli("--route", f"127.0.0.1:0={upstream.address}", "-q", *options)
        stop = threading.Event()
        watch = RestartWatch(record)
        pool: list[Client] = []
        try:
            pool = [Client(cli.port, f"c{i}", stop) for i in range(clients)]
            next_kill = time.monotonic() + rng.uniform(*interval)
            for count in range(1, kills + 1):
                time.sleep(max(0.0, next_kill - time.monotonic()))
                observer = observing_process(cli.process.pid)
                kill_times.append(time.monotonic())
                os.kill(observer, signal.SIGKILL)
                next_kill = kill_times[-1] + rng.uniform(*interval)
                if not watch.wait(count, 30.0):
                    break  # not restarted: the figures say so
            time.sleep(tail)
        finally:
            stop.set()
            for client in pool:
                client.thread.join(15)
            cli.stop()
            watch.close()
    found = examine(record)
    done = [t for client in pool for t in client.done]
    rows = []
    for index, killed_at in enumerate(kill_times):
        row: dict[str, Any] = {"kill": index + 1, "killed_at_s": killed_at - kill_times[0]}
        if index < min(len(watch.seen), len(found["restarts"])):
            end = watch.seen[index]
            row.update(found["restarts"][index], gap_s=end - killed_at)
            row["calls_in_outage"] = sum(1 for t in done if killed_at <= t <= end)
        rows.append(row)
    errors = [client.error for client in pool if client.error]
    return {
        "kills": kills, "clients": clients, "seed": seed, "interval_s": interval,
        "per_kill": rows, "restarted": len(found["restarts"]),
        "calls_completed": len(done), "exchanges_recorded": len(found.pop("exchange_times")),
        "client_errors": len(errors), "first_errors": errors[:5],
        **{k: found[k] for k in ("reads_whole", "seq_contiguous", "n_repeats", "violations")},
        "tui": tui, "stderr_stopped": cli.stderr.count("observation stopped"),
        "stderr_restarted": cli.stderr.count("observation restarted: "),
        "proxy_exit": cli.process.returncode, "traceback": "Traceback" in cli.stderr,
        "load_start": load_start, "load_end": os.getloadavg(), "bytes": record.stat().st_size,
    }  # fmt: skip


def failures(found: dict[str, Any]) -> list[str]:
    checks = {
        "a kill was not followed by a restart": found["restarted"] < found["kills"],
        "client errors": found["client_errors"] > 0,
        "the recording does not read whole": found["reads_whole"] != "yes",
        "seq not contiguous": not found["seq_contiguous"],
        "frame numbers repeat": found["n_repeats"] > 0,
        "violation lines": found["violations"] > 0,
        "the proxy did not exit 0": found["proxy_exit"] != 0,
        "a traceback on stderr": found["traceback"],
    }
    return [what for what, failed in checks.items() if failed]


def table(title: str, cells: dict[str, list[str]]) -> Table:
    """A table of right-justified columns: ``cells`` maps each heading to its column."""
    shown = Table(title=title, title_justify="left")
    for heading in cells:
        shown.add_column(heading, justify="right")
    for row in zip(*cells.values()):
        shown.add_row(*row)
    return shown


def render(found: dict[str, Any], console: Console) -> None:
    def load(figures: list[float]) -> str:
        return "/".join(f"{x:.2f}" for x in figures)

    low, high = found["interval_s"]
    console.print(
        f"{found['clients']} clients on kept connections, sequential echo calls; kill -9 of the "
        f"observing process every {low}-{high} s, {found['kills']} times (seed "
        f"{found['seed']}); load at start {load(found['load_start'])}",
        soft_wrap=True,
    )
    rows = [row for row in found["per_kill"] if "gap_s" in row]
    console.print(table("each kill (outage: kill to take-over)", {
        "kill": [str(row["kill"]) for row in rows],
        "at": [f"{row['killed_at_s']:.2f} s" for row in rows],
        "gap: kill → line seen": [f"{row['gap_s'] * 1000:.0f} ms" for row in rows],
        "gap: detail": [f"{row['detail_gap_s'] * 1000:.0f} ms" for row in rows],
        "taken up": [str(row["taken_up"]) for row in rows],
        "unobserved bytes (lines)": [
            f"{row['unobserved_bytes']:,} ({row['unobserved_lines']})" for row in rows
        ],
        "calls in outage": [f"{row['calls_in_outage']:,}" for row in rows],
        "recorded in outage": [f"{row['recorded_in_outage']:,}" for row in rows],
    }))  # fmt: skip
    for row in found["per_kill"][len(rows) :]:
        console.print(f"kill {row['kill']} at {row['killed_at_s']:.2f} s: NOT RESTARTED")
    done, recorded = found["calls_completed"], found["exchanges_recorded"]
    console.print(table("total", {
        "calls completed": [f"{done:,}"],
        "exchanges recorded": [f"{recorded:,}"],
        "share recorded": [f"{recorded / done:.1%}" if done else "-"],
        "client errors": [str(found["client_errors"])],
        "strict reader": [found["reads_whole"]],
        "seq contiguous": ["yes" if found["seq_contiguous"] else "NO"],
        "n repeats": [str(found["n_repeats"])],
        "violations": [str(found["violations"])],
    }))  # fmt: skip
    said = (
        "proxy --tui on a pseudo-terminal (not read)"
        if found.get("tui")
        else f"proxy stderr: {found['stderr_stopped']} 'observation stopped', "
        f"{found['stderr_restarted']} 'observation restarted'"
    )
    console.print(
        f"{said}; exit {found['proxy_exit']}; "
        f"recording {found['bytes']:,} bytes; load at end {load(found['load_end'])}",
        soft_wrap=True,
    )
    for error in found["first_errors"]:
        console.print(f"client error: {error}", soft_wrap=True)
    console.print("problems: " + ("; ".join(failures(found)) or "none"))


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, help="default 5 (--quick: 2)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--quick", action="store_true", help="2 kills, 1-1.5 s apart, 1 s after")
    parser.add_argument("--tui", action="store_true", help="the proxy with --tui, on a pty")
    parser.add_argument("--json", metavar="FILE", help="also write every figure here")
    args = parser.parse_args(argv)
    interval, tail = ((1.0, 1.5), 1.0) if args.quick else ((1.5, 3.0), 2.0)
    kills = args.kills or (2 if args.quick else 5)
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "restarts.jsonl"
        found = run(kills, args.clients, args.seed, interval, tail, record, args.tui)
    render(found, Console(width=max(Console().width, 140)))
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=1) + "\n")
    return 1 if failures(found) else 0


if __name__ == "__main__":
    sys.exit(main())
