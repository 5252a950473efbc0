"""``query`` reads recordings in worker processes: the rows do not depend on how many, and a
recording that cannot be read stops the query with one line whichever process read it."""

from __future__ import annotations

import json
from pathlib import Path

from golem_proxy.interop.fleet_query import chunked, worker_count
from tests.support.cli_helpers import run_cli

from .query_helpers import ALL_ROWS, SAMPLES, fleet, query_lines, trace_of


def test_serial_and_parallel_reading_give_the_same_rows(tmp_path: Path) -> None:
    traces = fleet(tmp_path, 4)
    serial = query_lines(ALL_ROWS, *traces, "--jobs", "1")
    # Three workers over twelve recordings: several pieces, several files of rows.
    assert len(chunked(traces, worker_count(3, len(traces)))) > 3
    parallel = query_lines(ALL_ROWS, *traces, "--jobs", "3")
    assert parallel == serial
    per_trace = {json.loads(line)["trace"] for line in serial}
    assert per_trace == {trace_of(path) for path in traces}  # every recording, none twice
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
