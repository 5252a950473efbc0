"""How reading a recording grows with its connections, each closed with a request unanswered
(a plugin that hung while its client kept reconnecting): `stats`, `show` and `check` through
the CLI, as a user runs them, on N, 2N, 4N, … connections.

    python bench/many_connections.py [--start N] [--steps K]

Prints, per command and size, the seconds, the peak RSS and the ratio to the size before:
about 2 is linear, about 4 quadratic. Writes its recordings in a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from golem_core.messages import Role  # noqa: E402
from golem_core.profiles import GOLEM  # noqa: E402
from golem_proxy.events import (  # noqa: E402
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    FrameSeen,
)
from golem_proxy.recording.format import Header, RouteInfo  # noqa: E402
from golem_proxy.recording.writer import RecordingWriter  # noqa: E402

COMMANDS = (("stats",), ("show",), ("check",))


def session(connections: int) -> Iterator[Event]:
    """Every connection opens, sends one request, and closes with it unanswered."""
    for conn in range(1, connections + 1):
        yield ConnectionOpened(conn=conn, route="main", client="c", upstream="u", t=0.001 * conn)
    for conn in range(1, connections + 1):
        payload = b'{"id":"r%d","method":"scene.list_layers","params":{}}' % conn
        yield FrameSeen(
            conn=conn,
            route="main",
            direction=Direction.C2S,
            index=0,
            t=100 + 0.0001 * conn,
            size=len(payload) + 4,
            payload=payload,
            message=GOLEM.parse(payload, Role.REQUEST),
            expects_answer=True,
        )
    for conn in range(1, connections + 1):
        yield ConnectionClosed(conn=conn, route="main", reason="client closed", t=200 + conn)


def write(path: str, connections: int) -> None:
    header = Header(
        "golem", (RouteInfo("main", "127.0.0.1:19876", "127.0.0.1:9876"),), "2026-01-01T00:00:00Z"
    )
    with RecordingWriter.create(path, header, overwrite=True) as writer:
        for event in session(connections):
            writer.write(event)


def timed(command: tuple[str, ...], path: str) -> tuple[float, float]:
    """Seconds and peak RSS (MiB) of the CLI running ``command`` on ``path``."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "golem_proxy", *command, path],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, _, usage = os.wait4(child.pid, 0)
    child.returncode = 0  # reaped here: Popen must not wait for it again
    return time.perf_counter() - start, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=5000)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    sizes = [args.start * 2**step for step in range(args.steps)]
    print(f"load {os.getloadavg()[0]:.2f}")
    print(f"{'command':8} {'connections':>11} {'seconds':>8} {'vs half':>9} {'peak MiB':>9}")
    with tempfile.TemporaryDirectory() as directory:
        paths = {}
        for size in sizes:
            paths[size] = os.path.join(directory, f"{size}.jsonl")
            write(paths[size], size)
        for command in COMMANDS:
            before = None
            for size in sizes:
                seconds, peak = timed(command, paths[size])
                ratio = "" if before is None else f"{seconds / before:.2f}"
                print(f"{command[0]:8} {size:>11,} {seconds:>8.2f} {ratio:>9} {peak:>9.0f}")
                before = seconds
    print("vs half: the seconds over those of half the connections (about 2: linear)")


if __name__ == "__main__":
    main()
