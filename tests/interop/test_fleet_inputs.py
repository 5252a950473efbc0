"""What ``query`` is given: each recording is a trace of its own, named the same however it
is given; a file given twice is read once, said on stderr; a Parquet file that no export
wrote is refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support.cli_helpers import run_cli

from .query_helpers import SAMPLES, query_lines, trace_of

PER_TRACE = "SELECT trace, count(*) AS flows FROM flows GROUP BY trace ORDER BY trace"


def _export(recording: Path, out: Path) -> None:
    """``export RECORDING --format parquet`` run from the recording's folder, the recording
    named by its file name alone, as a CI job exports its own ``session.jsonl``."""
    done = run_cli(
        "export", recording.name, "--format", "parquet", "--out", str(out), cwd=recording.parent
    )
    assert done.returncode == 0, done.stderr


def _flows(recording: Path) -> int:
    (line,) = query_lines("SELECT count(*) AS flows FROM flows", str(recording))
    return int(json.loads(line)["flows"])


def test_recordings_with_one_name_are_traces_of_their_own(tmp_path: Path) -> None:
    first, second = SAMPLES[0], SAMPLES[1]
    # Two runs in folders of their own, each exported as run.jsonl from its folder.
    for folder, sample in (("a", first), ("b", second)):
        (tmp_path / folder).mkdir()
        shutil.copyfile(sample, tmp_path / folder / "run.jsonl")
        _export(tmp_path / folder / "run.jsonl", tmp_path / f"{folder}.parquet")
    # Two runs recorded one after the other at the same path (a CI workspace).
    ci = tmp_path / "ci"
    ci.mkdir()
    for run, sample in (("1", first), ("2", second)):
        shutil.copyfile(sample, ci / "session.jsonl")
        _export(ci / "session.jsonl", tmp_path / f"ci-{run}.parquet")
    parquets = [str(tmp_path / name) for name in ("a.parquet", "b.parquet")]
    parquets += [str(tmp_path / name) for name in ("ci-1.parquet", "ci-2.parquet")]
    rows = [json.loads(line) for line in query_lines(PER_TRACE, *parquets)]
    a, b = tmp_path / "a" / "run.jsonl", tmp_path / "b" / "run.jsonl"
    session = (ci / "session.jsonl").resolve()
    assert {row["trace"]: row["flows"] for row in rows} == {
        trace_of(a): _flows(a),
        trace_of(b): _flows(b),
        f"{session}#{trace_of(a).rsplit('#', 1)[1]}": _flows(a),
        f"{session}#{trace_of(b).rsplit('#', 1)[1]}": _flows(b),
    }
    # A join within a trace (as the documented one of a GOLEM flow to its tool call, on
    # trace and number) pairs each flow with itself, none with another run's.
    join = "SELECT count(*) AS pairs FROM flows g JOIN flows c ON c.trace = g.trace AND c.n = g.n"
    (line,) = query_lines(join, *parquets)
    assert json.loads(line)["pairs"] == sum(row["flows"] for row in rows)
    # The recording read itself, by another path, is named as its export names it.
    done = run_cli("query", "SELECT DISTINCT trace FROM flows", "run.jsonl", "--json", cwd=a.parent)
    assert [json.loads(line)["trace"] for line in done.stdout.splitlines()] == [trace_of(a)]


def test_a_file_given_twice_is_read_once_and_said(tmp_path: Path) -> None:
    recording = tmp_path / "run.jsonl"
    shutil.copyfile(SAMPLES[0], recording)
    link = tmp_path / "same.jsonl"
    link.symlink_to(recording)
    parquet = tmp_path / "run.parquet"
    _export(recording, parquet)
    given = [str(recording), "run.jsonl", str(link), str(parquet), str(parquet)]
    done = run_cli("query", PER_TRACE, *given, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    # The recording once, and its export once (an export is a file of its own).
    assert rows == [{"trace": trace_of(recording), "flows": 2 * _flows(recording)}]
    assert done.stderr.splitlines() == [
        f"note: run.jsonl: the same file as {recording}, read once",
        f"note: {link}: the same file as {recording}, read once",
        f"note: {parquet}: given more than once, read once",
    ]


def test_a_parquet_file_no_export_wrote_is_refused_in_one_line(tmp_path: Path) -> None:
    import duckdb

    export = tmp_path / "export.parquet"
    _export(SAMPLES[0], export)
    made = {
        "other.parquet": "SELECT 'x' AS n, 'ping' AS method",
        "typed.parquet": "SELECT 1::BIGINT AS n, 'ping' AS method",
        "renamed.parquet": f"SELECT * EXCLUDE (trace) FROM read_parquet('{export}')",
        "wider.parquet": f"SELECT *, 1 AS extra FROM read_parquet('{export}')",
    }
    # An export made before the later columns were added is one (they read as null).
    later = "id_type, layer, tool, tool_call, attribution, elided"
    made["older.parquet"] = f"SELECT * EXCLUDE ({later}) FROM read_parquet('{export}')"
    for name, select in made.items():
        duckdb.sql(f"COPY ({select}) TO '{tmp_path / name}' (FORMAT parquet)")
    (tmp_path / "garbage.parquet").write_bytes(b"not parquet at all")
    refused = {
        "other.parquet": "its column n is VARCHAR, not BIGINT",
        "typed.parquet": "no trace column",
        "renamed.parquet": "no trace column",
        "wider.parquet": "a column 'extra' that no export has",
    }
    for name, why in refused.items():
        path = tmp_path / name
        done = run_cli("query", "SELECT sum(n) AS s FROM flows", str(export), str(path))
        assert done.returncode == 2, (name, done)
        assert done.stderr.splitlines() == [
            f"golem-proxy: {path}: not a Parquet file written by export --format parquet ({why})"
        ], name
    done = run_cli("query", "SELECT 1", str(tmp_path / "garbage.parquet"))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"golem-proxy: {tmp_path / 'garbage.parquet'}: "), done.stderr
    older = str(tmp_path / "older.parquet")
    (line,) = query_lines("SELECT count(*) AS n, count(elided) AS e FROM flows", older)
    assert json.loads(line) == {"n": _flows(SAMPLES[0]), "e": 0}
