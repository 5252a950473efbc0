"""What it costs the forwarding process to hand each chunk it forwarded to an observing
process: through a pipe, or through a shared-memory ring (issue 25's process split).

    python bench/bench_handoff.py [--total-mib 256] [--json FILE]

For each chunk size (a small call, a 64 KiB read, a 1 MiB read), a child process receives
``--total-mib`` of chunks and the parent, standing for the relay, sends them; printed per
transport: the relay's own CPU time per chunk (what forwarding pays), and the rate to the
child's last byte (whether the observing side keeps up). The relay's wall time per chunk
includes waiting for room (a full pipe blocks; a full ring waits here, where the relay would
record a gap), so it is what a relay that must not wait would shed. The ring is a single-producer,
single-consumer byte ring in `multiprocessing.shared_memory`: the relay copies a chunk in and
moves its write index; the child copies it out and moves its read index. When the ring is full
the relay would record a gap and go on; here it waits, so that the rates compare like for like.
A child that finds the ring empty sleeps 50 µs (a real observer would wait on a pipe's byte).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import multiprocessing
import multiprocessing.connection
import os
import struct
import time
from multiprocessing.shared_memory import SharedMemory
from pathlib import Path

INDEX = struct.Struct("=Q")
WRITE_AT, READ_AT, DATA = 0, 64, 128
"""Offsets in the shared block: the write index, the read index (each on its own cache line),
then the ring."""
RING = 16 * 1024 * 1024
SIZES = (200, 64 * 1024, 1024 * 1024)


def _pipe_child(read_fd: int, total: int, done: multiprocessing.connection.Connection) -> None:
    got = 0
    while got < total:
        got += len(os.read(read_fd, 1 << 20))
    done.send(time.perf_counter())


def _ring_child(name: str, total: int, done: multiprocessing.connection.Connection) -> None:
    block = SharedMemory(name=name)
    buf = block.buf
    got = read = 0
    while got < total:
        written = INDEX.unpack_from(buf, WRITE_AT)[0]
        if written == read:
            time.sleep(0.00005)
            continue
        start = read % RING
        end = start + min(written - read, RING - start)  # up to the ring's end, then wrap
        data = bytes(buf[DATA + start : DATA + end])  # the observer's own copy
        read += len(data)
        got += len(data)
        INDEX.pack_into(buf, READ_AT, read)
    done.send(time.perf_counter())
    del buf
    block.close()


def through_pipe(chunk: bytes, count: int) -> tuple[float, float, float]:
    """(relay CPU seconds, relay seconds, seconds to the child's last byte) for ``count``
    chunks; the pipe holds 1 MiB (``F_SETPIPE_SZ``), as the relay's would."""
    read_fd, write_fd = os.pipe()
    here, there = multiprocessing.Pipe()
    child = multiprocessing.Process(target=_pipe_child, args=(read_fd, len(chunk) * count, there))
    child.start()
    os.close(read_fd)
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 1 << 20)
    cpu, start = time.process_time(), time.perf_counter()
    for _ in range(count):
        view = memoryview(chunk)
        while view:
            view = view[os.write(write_fd, view) :]
    cpu, wall = time.process_time() - cpu, time.perf_counter() - start
    finished = here.recv()
    child.join()
    os.close(write_fd)
    return cpu, wall, finished - start


def through_ring(chunk: bytes, count: int) -> tuple[float, float, float]:
    """(relay CPU seconds, relay seconds, seconds to the child's last byte) for ``count``
    chunks."""
    block = SharedMemory(create=True, size=DATA + RING)
    buf = block.buf
    INDEX.pack_into(buf, WRITE_AT, 0)
    INDEX.pack_into(buf, READ_AT, 0)
    here, there = multiprocessing.Pipe()
    child = multiprocessing.Process(
        target=_ring_child, args=(block.name, len(chunk) * count, there)
    )
    child.start()
    written, size = 0, len(chunk)
    cpu, start = time.process_time(), time.perf_counter()
    for _ in range(count):
        while written + size - INDEX.unpack_from(buf, READ_AT)[0] > RING:
            time.sleep(0.00005)  # full: the relay would note a gap and go on
        at = written % RING
        first = min(size, RING - at)
        buf[DATA + at : DATA + at + first] = chunk[:first]
        if first < size:
            buf[DATA : DATA + size - first] = chunk[first:]
        written += size
        INDEX.pack_into(buf, WRITE_AT, written)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - start
    finished = here.recv()
    child.join()
    del buf
    block.close()
    block.unlink()
    return cpu, wall, finished - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--total-mib", type=int, default=256)
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    args = parser.parse_args()
    total = args.total_mib * 1024 * 1024
    found = []
    print(f"{args.total_mib} MiB per run; {os.cpu_count()} cores, load "
          + "/".join(f"{x:.1f}" for x in os.getloadavg()))  # fmt: skip
    print(f"{'chunk':>9} {'transport':>9} {'relay CPU µs/chunk':>19} {'relay wall µs/chunk':>20} "
          f"{'MB/s to the child':>18}")  # fmt: skip
    for size in SIZES:
        chunk = os.urandom(size)
        count = max(1, min(total // size, 1_000_000))
        for name, transport in (("pipe", through_pipe), ("shm ring", through_ring)):
            cpu, wall, elapsed = transport(chunk, count)
            row = {"chunk": size, "transport": name, "count": count,
                   "relay_cpu_us": cpu / count * 1e6, "relay_wall_us": wall / count * 1e6,
                   "mb_s": size * count / elapsed / 1e6}  # fmt: skip
            found.append(row)
            print(f"{size:>9,} {name:>9} {row['relay_cpu_us']:>19.2f} "
                  f"{row['relay_wall_us']:>20.2f} {row['mb_s']:>18,.0f}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
