"""What forwarding a 16 MiB answer costs the forwarding process when the copy handed to the
observer never enters it: Linux's ``splice`` moves the upstream's bytes into a pipe, ``tee``
duplicates them into the observer's pipe (page references, no copy), and ``splice`` moves them
on to the client; against the way the forwarding process moves them today, through a buffer
of its own (``recv_into``, ``sendall`` to the client, ``write`` to the observer's pipe).

    python bench/zero_copy.py [--answers 30] [--rounds 3] [--json FILE]

Both ways move the same answers between the same kind of peers: an upstream thread sending
pre-made 16 MiB answers on a socket pair, a client thread and an observer thread that only
count bytes. Each way's CPU is the forwarding thread's own (``time.thread_time``); the peers
run on other threads, so the wall time is a rate on this machine's cores, not the hop's alone.
Rounds alternate the two ways; the table gives medians. This measures the kernel's way of
moving bytes alone, the floor of what the forwarding process's (golem_proxy/live/body_splice.py,
docs/architecture.md, "A large frame's body by the kernel's way") can cost.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import select
import socket
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Optional

from rich.console import Console
from rich.table import Table

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))  # golem_proxy

from golem_proxy.live import kernel_pipes  # noqa: E402
from golem_proxy.live.kernel_pipes import PIPE_SIZE  # noqa: E402

ANSWER = 16 * 1024 * 1024
WAYS = ("userspace", "splice+tee")


def _pipe() -> tuple[int, int]:
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_SIZE)  # as the handoff pipe is
    return read_end, write_end


def _send(sock: socket.socket, answer: bytes, count: int) -> None:
    for _ in range(count):
        sock.sendall(answer)
    sock.shutdown(socket.SHUT_WR)


def _count_socket(sock: socket.socket, total: int, got: list[int]) -> None:
    buffer = bytearray(PIPE_SIZE)
    while got[0] < total and (size := sock.recv_into(buffer)):
        got[0] += size


def _count_pipe(fd: int, total: int, got: list[int]) -> None:
    while got[0] < total and (data := os.read(fd, PIPE_SIZE)):
        got[0] += len(data)


def _through_userspace(upstream: socket.socket, client: socket.socket, observer: int) -> int:
    buffer = bytearray(PIPE_SIZE)
    view = memoryview(buffer)
    moved = 0
    while size := upstream.recv_into(buffer):
        client.sendall(view[:size])
        written = 0
        while written < size:
            written += os.write(observer, view[written:size])
        moved += size
    return moved


def _through_pipes(upstream: socket.socket, client: socket.socket, observer: int) -> int:
    read_end, write_end = _pipe()
    moved = 0
    try:
        while size := os.splice(upstream.fileno(), write_end, PIPE_SIZE):
            teed = 0
            while teed < size:  # tee copies from the pipe's start: what it left is spliced on
                try:
                    count = kernel_pipes.tee(read_end, observer, size - teed)
                except BlockingIOError:  # the observer's pipe is full
                    select.select([], [observer], [])
                    continue
                _splice_all(read_end, client.fileno(), count)
                teed += count
            moved += size
    finally:
        os.close(read_end)
        os.close(write_end)
    return moved


def _splice_all(source: int, target: int, size: int) -> None:
    while size:
        size -= os.splice(source, target, size)


def measure(way: str, answers: int) -> dict[str, float]:
    """Move ``answers`` answers one way; the forwarding thread's CPU and the wall time, in ms
    an answer, and whether every byte reached both the client and the observer."""
    total = ANSWER * answers
    up_peer, upstream = socket.socketpair()
    client, client_peer = socket.socketpair()
    observer_read, observer_write = _pipe()
    to_client, to_observer = [0], [0]
    peers = [
        threading.Thread(target=_send, args=(up_peer, os.urandom(ANSWER), answers)),
        threading.Thread(target=_count_socket, args=(client_peer, total, to_client)),
        threading.Thread(target=_count_pipe, args=(observer_read, total, to_observer)),
    ]
    try:
        for peer in peers:
            peer.start()
        started, cpu = time.perf_counter(), time.thread_time()
        if way == "userspace":
            moved = _through_userspace(upstream, client, observer_write)
        else:
            moved = _through_pipes(upstream, client, observer_write)
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - started
        for peer in peers:
            peer.join()
    finally:
        for sock in (up_peer, upstream, client, client_peer):
            sock.close()
        os.close(observer_read)
        os.close(observer_write)
    exact = moved == to_client[0] == to_observer[0] == total
    return {"cpu": cpu / answers * 1e3, "wall": wall / answers * 1e3, "exact": float(exact)}


def table(found: dict[str, list[dict[str, float]]], answers: int) -> Table:
    result = Table(title=f"forwarding {answers} answers of 16 MiB with a copy for the observer")
    for column in ("way", "forwarding CPU an answer", "wall an answer", "MB/s", "every byte"):
        result.add_column(column, justify="left" if column == "way" else "right")
    for way, runs in found.items():
        cpu = statistics.median(run["cpu"] for run in runs)
        wall = statistics.median(run["wall"] for run in runs)
        exact = all(run["exact"] for run in runs)
        rate = ANSWER / (wall / 1e3) / 1e6
        result.add_row(way, f"{cpu:.1f} ms", f"{wall:.1f} ms", f"{rate:,.0f}", str(exact))
    return result


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=argparse.FileType("w"))
    args = parser.parse_args(argv)
    if not kernel_pipes.available():
        print("splice and tee are Linux's (Python 3.10 or later): nothing to measure here")
        return 0
    found: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
    for _ in range(args.rounds):
        for way in WAYS:
            found[way].append(measure(way, args.answers))
    Console().print(table(found, args.answers))
    if args.json:
        json.dump(found, args.json)
    return 0 if all(run["exact"] for runs in found.values() for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
