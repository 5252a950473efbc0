"""``query`` reads recordings in worker processes: the rows do not depend on how many, and a
recording that cannot be read stops the query with one line whichever process read it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from golem_proxy.interop.fleet_query import chunked, worker_count
from tests.support.cli_helpers import ROOT, run_cli

SAMPLES = sorted((ROOT / "recordings").glob("*.jsonl"))
ALL_ROWS = "SELECT * FROM flows ORDER BY trace, n"


def fleet(tmp_path: Path, copies: int) -> list[str]:
    """``copies`` copies of every sample recording, each under its own name."""
    paths = []
    for copy in range(copies):
        for sample in SAMPLES:
            path = tmp_path / f"{copy:02d}-{sample.name}"
            shutil.copyfile(sample, path)
            paths.append(str(path))
    return paths


def query_lines(*args: str) -> list[str]:
    done = run_cli("query", *args, "--json")
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_serial_and_parallel_reading_give_the_same_rows(tmp_path: Path) -> None:
    traces = fleet(tmp_path, 4)
    serial = query_lines(ALL_ROWS, *traces, "--jobs", "1")
    # Three workers over twelve recordings: several pieces, several files of rows.
    assert len(chunked(traces, worker_count(3, len(traces)))) > 3
    parallel = query_lines(ALL_ROWS, *traces, "--jobs", "3")
    assert parallel == serial
    per_trace = {json.loads(line)["trace"] for line in serial}
    assert per_trace == set(traces)  # every recording counted, none twice
    counts = query_lines("SELECT count(*) AS flows FROM flows", *traces, "--jobs", "2")
    assert json.loads(counts[0])["flows"] == len(serial)


def test_a_damaged_recording_is_one_line_serial_or_parallel(tmp_path: Path) -> None:
    traces = fleet(tmp_path, 2)
    damaged = tmp_path / "damaged.jsonl"
    lines = SAMPLES[0].read_bytes().splitlines(keepends=True)
    damaged.write_bytes(b"".join(lines[:3]) + b'{"kind": "frame", "t": \n' + b"".join(lines[3:]))
    traces.insert(len(traces) // 2, str(damaged))
    for jobs in ("1", "2"):
        done = run_cli("query", "SELECT count(*) FROM flows", *traces, "--jobs", jobs)
        assert done.returncode == 2, done
        assert done.stdout == ""
        assert done.stderr.splitlines() == [done.stderr.strip()], done.stderr
        assert done.stderr.startswith(f"golem-proxy: {damaged}: line 4: ")


def test_pieces_cover_every_recording_once_in_order() -> None:
    for count in (1, 2, 7, 16, 17, 100, 1000):
        names = [f"r{index}" for index in range(count)]
        for jobs in (0, 1, 2, 3, 8, 64):
            workers = worker_count(jobs, count)
            assert 1 <= workers <= count
            pieces = chunked(names, workers)
            assert [name for piece in pieces for name in piece] == names
            assert all(1 <= len(piece) <= 32 for piece in pieces)
            # Enough pieces to keep every worker busy, when there are recordings enough.
            assert len(pieces) >= min(count, workers)
