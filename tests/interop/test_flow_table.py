"""The Parquet export's memory (golem_proxy/interop/flow_table.py `write_parquet`): the engine
writes row groups of at most `ROW_GROUP_BYTES` and reads rows with buffers sized by the longest
row written, so a trace of large answers is not held whole; every flow is still in the file,
whole. And a file exported before a column was added."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from golem_proxy.analysis.trace import open_flows
from golem_proxy.interop import flow_table
from golem_proxy.interop.flow_table import write_parquet
from golem_proxy.recording.format import RecordingWriter
from tests.support.cli_helpers import run_cli
from tests.support.sessions import SessionBuilder, golem_header

from .query_helpers import SAMPLES, query_lines

KIB = 1024


def large_answers(path: Path, count: int, size: int) -> None:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    for number in range(count):
        request = s.request(1, "viewport.capture", {"n": number}, number + 0.1)
        s.respond(request, number + 0.2, result={"image": chr(65 + number) * size})
    writer = RecordingWriter.create(str(path), golem_header())
    for event in s.events:
        writer.write(event)
    writer.close()


def test_large_rows_are_written_in_row_groups_of_a_bounded_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flow_table, "ROW_GROUP_BYTES", 1024 * KIB)
    trace = tmp_path / "captures.jsonl"
    large_answers(trace, 12, 300 * KIB)
    out = tmp_path / "flows.parquet"
    with open_flows(str(trace)) as flows:
        assert write_parquet(flows, str(out)) == 12
    with duckdb.connect() as db:
        (groups,) = db.execute(
            "SELECT num_row_groups FROM parquet_file_metadata(?)", [str(out)]
        ).fetchone()
        rows = db.execute(
            "SELECT n, length(result->>'image') FROM read_parquet(?) ORDER BY n", [str(out)]
        ).fetchall()
    # 3.6 MB of rows in groups of about 1 MiB (the engine's measure of a group's bytes is
    # its own): several groups, where one default group was the whole trace.
    assert groups >= 3
    assert rows == [(n, 300 * KIB) for n in range(1, 13)]


def test_a_lone_surrogate_is_spelled_out_and_counted_as_written(tmp_path: Path) -> None:
    """A lone surrogate (legal as a JSON escape, not Unicode text) becomes its escape spelled
    out, and the row's length is counted as written (seven bytes each, not the one byte a
    replacement character would be): the engine, whose buffer is sized by it, reads the row
    whole. (It reads rows up to about twice its buffer, and its buffer is 16 MiB at least:
    this row is 35 MB spelled out, 5 MB counted as replacement characters.)"""
    count = 5 * 1024 * KIB
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    escapes = b"\\ud800" * count
    raw = b'{"id": "q", "method": "scene.import", "params": {"s": "' + escapes + b'"}}'
    request = s.request(1, "scene.import", {}, 0.1, raw=raw)
    s.respond(request, 0.2, result={})
    trace = tmp_path / "surrogates.jsonl"
    writer = RecordingWriter.create(str(trace), golem_header())
    for event in s.events:
        writer.write(event)
    writer.close()
    out = tmp_path / "flows.parquet"
    with open_flows(str(trace)) as flows:
        assert write_parquet(flows, str(out)) == 1
    with duckdb.connect() as db:
        (text,) = db.execute("SELECT params->>'s' FROM read_parquet(?)", [str(out)]).fetchone()
    assert text == "\\ud800" * count


def test_a_parquet_file_exported_before_a_column_reads_it_as_null(tmp_path: Path) -> None:
    """The ``elided`` column came later: a file without it, queried alone or beside a
    recording, has it null, as it has every column it lacks."""
    recording = SAMPLES[0]
    new = tmp_path / "new.parquet"
    done = run_cli("export", "--format", "parquet", "--out", str(new), str(recording))
    assert done.returncode == 0, done.stderr
    old = tmp_path / "old.parquet"
    with duckdb.connect(":memory:") as db:
        db.execute(
            f"COPY (SELECT * EXCLUDE (elided) FROM read_parquet('{new}')) TO '{old}' "
            "(FORMAT parquet)"
        )
    alone = [
        json.loads(line) for line in query_lines("SELECT DISTINCT elided FROM flows", str(old))
    ]
    assert alone == [{"elided": None}]
    mixed = query_lines(
        "SELECT count(*) AS c FROM flows WHERE elided = 0", str(old), str(recording)
    )
    assert json.loads(mixed[0])["c"] == len(query_lines("SELECT n FROM flows", str(recording)))
