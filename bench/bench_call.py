"""``golem-proxy call`` on a large answer: seconds and peak RSS of the CLI process, with
``--raw`` (receive and classify only) and pretty-printed, stdout to /dev/null.

    ./dev bench bench_call [--objects 200000] [--rounds 2]

A GOLEM server on 127.0.0.1 answers every request with a list of ``{"i": N, "ok": true}``.
Peak RSS is the child's own (``wait4``), so nothing else on the machine counts.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from processes import ROOT


def _read_exactly(peer: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = peer.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


@contextmanager
def serving(result: list[dict[str, object]], connections: int) -> Iterator[int]:
    """A server answering ``connections`` requests with ``result``; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(120)

    def serve() -> None:
        for _ in range(connections):
            peer, _ = server.accept()
            with peer:
                (length,) = struct.unpack("!I", _read_exactly(peer, 4))
                request = json.loads(_read_exactly(peer, length))
                payload = json.dumps({"id": request["id"], "result": result, "error": None})
                data = payload.encode()
                peer.sendall(struct.pack("!I", len(data)) + data)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        server.close()
        thread.join(120)


def measure(args: list[str]) -> tuple[float, int]:
    """Seconds and peak RSS (bytes) of ``golem-proxy ARGS``, stdout to /dev/null."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.monotonic()
    with open(os.devnull, "wb") as sink:
        child = subprocess.Popen(
            [sys.executable, "-m", "golem_proxy", *args], cwd=ROOT, env=env, stdout=sink
        )
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"golem-proxy {' '.join(args)} exited {child.returncode}")
    return time.monotonic() - started, usage.ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args()
    result: list[dict[str, object]] = [{"i": i, "ok": True} for i in range(options.objects)]
    size = len(json.dumps({"id": "x", "result": result, "error": None}))
    print(f"answer: {options.objects:,} objects, {size / 1e6:.1f} MB")
    with serving(result, 2 * options.rounds) as port:
        call = ["call", "ping", "--target", f"127.0.0.1:{port}", "--timeout", "120"]
        for _ in range(options.rounds):
            for label, extra in (("--raw", ["--raw"]), ("pretty", [])):
                seconds, peak = measure(call + extra)
                print(f"{label:7} {seconds:6.2f} s  peak {peak / 2**20:6.1f} MiB")


if __name__ == "__main__":
    main()
