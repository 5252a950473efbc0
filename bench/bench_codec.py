"""Codec benchmark: golem_core's decoder against a minimal inline loop, in one interleaved run.

(a) 100,000 small GOLEM requests (≈200 bytes, UUID ids) fed in 64 KiB chunks: our
    LengthPrefixedDecoder + GOLEM.parse per frame vs struct.unpack_from + slice + json.loads.
(b) one 32 MiB frame fed in 64 KiB chunks: framing only, our decoder vs bytearray + slice.

Rounds alternate between the two contestants and the medians are reported. Run it as
``python bench/bench_codec.py`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import struct
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from golem_core.decoders import LengthPrefixedDecoder
from golem_core.framing import Frame
from golem_core.messages import Request, Role
from golem_core.profiles import GOLEM

CHUNK = 64 * 1024
TARGET_FRAMES = 0.65
TARGET_MBS = 0.8
_HEADER = struct.Struct("!I")


def make_requests(count: int, seed: int = 1) -> bytes:
    """A stream of ``count`` create_box requests like the spec's example, UUID ids."""
    rng = random.Random(seed)
    out = bytearray()
    for _ in range(count):
        obj = {
            "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "method": "creation.create_box",
            "params": {
                "corner_x": 0.0,
                "corner_y": 0.0,
                "corner_z": 0.0,
                "width": round(rng.uniform(1, 200), 3),
                "depth": 50.0,
                "height": 30.0,
            },
        }
        out += GOLEM.encode(obj)
    return bytes(out)


def make_big_frame(size: int) -> bytes:
    return _HEADER.pack(size) + b"\x5a" * size


def chunks_of(data: bytes, size: int = CHUNK) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def ours_messages(chunks: list[bytes]) -> int:
    """Our decoder + GOLEM.parse per frame; returns the number of requests typed."""
    decoder = LengthPrefixedDecoder()
    parse = GOLEM.parse
    role = Role.REQUEST
    count = 0
    for chunk in chunks:
        decoder.receive_data(chunk)
        for event in decoder.events():
            if isinstance(event, Frame) and isinstance(parse(event.payload, role), Request):
                count += 1
    return count


def minimal_messages(chunks: list[bytes]) -> int:
    """The minimal inline loop: unpack_from + slice + json.loads over a bytearray + offset."""
    buf = bytearray()
    unpack_from = _HEADER.unpack_from
    loads = json.loads
    count = 0
    for chunk in chunks:
        buf += chunk
        pos = 0
        end_of_data = len(buf)
        while end_of_data - pos >= 4:
            (length,) = unpack_from(buf, pos)
            end = pos + 4 + length
            if end > end_of_data:
                break
            loads(buf[pos + 4 : end].decode("utf-8"))
            count += 1
            pos = end
        del buf[:pos]
    return count


def ours_framing(chunks: list[bytes]) -> int:
    """Our decoder producing the Frame; returns the payload size."""
    decoder = LengthPrefixedDecoder()
    size = 0
    for chunk in chunks:
        decoder.receive_data(chunk)
        for event in decoder.events():
            if isinstance(event, Frame):
                size += len(event.payload)
    return size


def minimal_framing(chunks: list[bytes]) -> int:
    """The minimal loop: accumulate into a bytearray, slice the payload out when complete."""
    buf = bytearray()
    size = 0
    for chunk in chunks:
        buf += chunk
        if len(buf) >= 4:
            (length,) = _HEADER.unpack_from(buf, 0)
            if len(buf) >= 4 + length:
                payload = bytes(buf[4 : 4 + length])
                size += len(payload)
                del buf[: 4 + length]
    return size


def _time(fn: Callable[[list[bytes]], int], chunks: list[bytes]) -> tuple[float, int]:
    start = time.perf_counter()
    result = fn(chunks)
    return time.perf_counter() - start, result


def run(frames: int = 100_000, big: int = 32 * 1024 * 1024, rounds: int = 7) -> dict[str, Any]:
    """Run both benchmarks interleaved; returns medians and ratios."""
    small = chunks_of(make_requests(frames))
    large = chunks_of(make_big_frame(big))
    times: dict[str, list[float]] = {k: [] for k in ("ours_a", "min_a", "ours_b", "min_b")}
    for i in range(rounds):
        pairs = [("ours_a", ours_messages, small), ("min_a", minimal_messages, small)]
        pairs += [("ours_b", ours_framing, large), ("min_b", minimal_framing, large)]
        if i % 2:
            pairs.reverse()
        for key, fn, chunks in pairs:
            elapsed, result = _time(fn, chunks)
            expected = frames if key.endswith("_a") else big
            if result != expected:
                raise AssertionError(f"{key} returned {result}, expected {expected}")
            times[key].append(elapsed)
    med = {k: statistics.median(v) for k, v in times.items()}
    mb = big / 1e6
    out: dict[str, Any] = {
        "frames": frames,
        "big": big,
        "rounds": rounds,
        "ours_fps": frames / med["ours_a"],
        "min_fps": frames / med["min_a"],
        "ours_mbs": mb / med["ours_b"],
        "min_mbs": mb / med["min_b"],
    }
    out["ratio_fps"] = out["ours_fps"] / out["min_fps"]
    out["ratio_mbs"] = out["ours_mbs"] / out["min_mbs"]
    return out


def rows(result: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    def verdict(ratio: float, target: float) -> str:
        return f"{ratio:.2f}x (target >= {target}x: {'ok' if ratio >= target else 'MISSED'})"

    return [
        (
            f"(a) {result['frames']:,} small frames, decode + type",
            f"{result['ours_fps']:,.0f} frames/s",
            f"{result['min_fps']:,.0f} frames/s",
            verdict(result["ratio_fps"], TARGET_FRAMES),
            "",
        ),
        (
            f"(b) one {result['big'] // (1024 * 1024)} MiB frame, framing only",
            f"{result['ours_mbs']:,.0f} MB/s",
            f"{result['min_mbs']:,.0f} MB/s",
            verdict(result["ratio_mbs"], TARGET_MBS),
            "",
        ),
    ]


def render(result: dict[str, Any]) -> None:
    header = ("benchmark", "golem_core", "minimal loop", "ratio")
    title = (
        f"golem_core codec, {result['rounds']} interleaved rounds, medians, "
        f"{CHUNK // 1024} KiB chunks, Python {sys.version.split()[0]}"
    )
    table_rows = [r[:4] for r in rows(result)]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(row[i]) for row in [header, *table_rows]) for i in range(4)]
        print(title)
        for row in [header, *table_rows]:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)))
        return
    table = Table(title=title)
    for name in header:
        table.add_column(name)
    for row in table_rows:
        table.add_row(*row)
    Console(width=max(Console().width, 110)).print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 frames, 8 MiB, 3 rounds")
    args = parser.parse_args(argv)
    quick = {"frames": 10_000, "big": 8 * 1024 * 1024, "rounds": 3} if args.quick else {}
    result = run(**quick)
    render(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
