"""The same session through ``proxy --observer in-process`` and ``--observer child-process``:
does the client get the same answers, and do the two recordings hold the same lines?

Each observer gets a fresh headless plugin (same seed, so the same answers) and the same
traffic from one seeded generator: ``faults`` sends sequential calls on CONNECTIONS
connections through seven fault rules of every kind with probabilities (``--fault-seed 3``);
``limits`` (with ``--enforce-limits``) ends each connection with a frame that is not JSON, not
UTF-8, or declares 2 GiB. Lines are compared grouped by connection, without times, durations,
sequence numbers and ports (`golem_proxy.testing.recording_lines`). Prints the figures; exit
code 1 when anything differs.

    python bench/compare_observers.py faults --connections 60
    python bench/compare_observers.py faults --connections 30 --enforce-limits
    python bench/compare_observers.py limits --connections 30
"""

from __future__ import annotations

import argparse
import random
import socket
import struct
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.blocking import MessageReader
from golem_core.messages import Role
from golem_core.profiles import GOLEM
from golem_proxy.testing.call_outcomes import call_outcomes
from golem_proxy.testing.plugin_process import PluginProcess
from golem_proxy.testing.recording_lines import differing_lines, lines_by_connection

OBSERVERS = ("in-process", "child-process")
FAULTS = (
    "delay:ms=5,method=scene.get_document_info,p=0.5",
    "error:code=TIMEOUT,method=viewport.*,p=0.5",
    "slice:size=16,dir=s2c,method=scene.list_layers,p=0.5",
    "corrupt:bytes=1,dir=s2c,method=scene.list_objects,p=0.3",
    "truncate:dir=s2c,method=scene.list_layers,p=0.05",
    "reset:when=after,method=scene.get_document_info,p=0.05",
    "reset:when=before,method=viewport.get_view_info,p=0.05",
)
METHODS = (
    "scene.get_document_info",
    "viewport.get_view_info",
    "scene.list_layers",
    "scene.list_objects",
)
BAD_FRAMES = (
    GOLEM.frame_payload(b'{"id": 9, "method": "scene.list_layers", ]'),
    GOLEM.frame_payload(b'{"id": 9, "method": "scene.list_layers\xff"}'),
    struct.pack(">I", 0x7FFFFFF0) + b"xx",
)


def _calls(port: int, methods: list[str]) -> list[str]:
    """Call each method on one connection, one at a time; what the client got for each, up to
    the first that ends the connection."""
    return call_outcomes(
        port, [{"id": n, "method": m, "params": {}} for n, m in enumerate(methods)]
    )


def fault_session(port: int, connections: int) -> list[list[str]]:
    rng = random.Random(7)
    return [_calls(port, [rng.choice(METHODS) for _ in range(20)]) for _ in range(connections)]


def limits_session(port: int, connections: int) -> list[list[str]]:
    rng = random.Random(5)
    got = []
    for _ in range(connections):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            reader = MessageReader(sock)
            for number in range(rng.randrange(1, 6)):
                call = {"id": number, "method": "scene.get_document_info", "params": {}}
                sock.sendall(GOLEM.encode(call))
                reader.read_message(Role.RESPONSE)
            # A good call and a bad frame in one chunk: neither may be forwarded.
            good = GOLEM.encode({"id": 99, "method": "scene.list_layers", "params": {}})
            sock.sendall(good + rng.choice(BAD_FRAMES))
            try:
                after = sock.recv(65536)
            except ConnectionResetError:
                after = b"reset"
            got.append([repr(after)])
    return got


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("session", choices=("faults", "limits"))
    parser.add_argument("--connections", type=int, default=30)
    parser.add_argument("--enforce-limits", action="store_true", help="with faults: add it")
    args = parser.parse_args()
    options = ["-q"]
    session: Callable[[int, int], list[list[str]]] = limits_session
    if args.session == "faults":
        options += ["--fault-seed", "3", *(a for spec in FAULTS for a in ("--fault", spec))]
        session = fault_session
    if args.session == "limits" or args.enforce_limits:
        options.append("--enforce-limits")
    directory = Path(tempfile.mkdtemp(prefix="compare-observers-"))
    got = {}
    for observer in OBSERVERS:
        with PluginProcess(seed=25) as plugin:
            cli = start_proxy_cli(
                "--route", f"127.0.0.1:0={plugin.main}", "--record", str(directory / observer),
                "--observer", observer, *options,
            )  # fmt: skip
            try:
                got[observer] = session(cli.port, args.connections)
            finally:
                cli.stop()
            summary = cli.stderr.strip().splitlines()[-1:] or ["(nothing on stderr)"]
            print(f"{observer}: exit {cli.process.returncode}; {summary[0]}")
    same_answers = got["in-process"] == got["child-process"]
    lines = lines_by_connection(directory / "in-process")
    differing = differing_lines(directory / "in-process", directory / "child-process")
    print(f"the client got the same answers: {same_answers}")
    print(
        f"{sum(map(len, lines.values())):,} lines on {len(lines)} connections; "
        f"{len(differing)} differing (recordings in {directory})"
    )
    for conn, first, second in differing[:5]:
        print(f"  conn {conn}:\n    in-process:    {first}\n    child-process: {second}")
    return 0 if same_answers and not differing else 1


if __name__ == "__main__":
    sys.exit(main())
