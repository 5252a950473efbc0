"""``export --format parquet`` and ``query``: the flows table agrees with ``show --json``,
over recordings and Parquet files at once, and a bad query or trace is one line."""

from __future__ import annotations

import csv
import io
import json
import stat
from pathlib import Path

from tests.interop.query_helpers import trace_of
from tests.support.cli_helpers import ROOT, run_cli
from tests.support.traces import TraceBuilder

SAMPLES = sorted((ROOT / "recordings").glob("*.jsonl"))


def show_json(recording: Path) -> list[dict[str, object]]:
    done = run_cli("show", str(recording), "--json")
    assert done.returncode in (0, 1), done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def query_json(sql: str, *traces: str) -> list[dict[str, object]]:
    done = run_cli("query", sql, *traces, "--json")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_rows_agree_with_show_json(tmp_path: Path) -> None:
    parquet = tmp_path / "error.parquet"
    done = run_cli("export", str(SAMPLES[0]), "--format", "parquet", "--out", str(parquet))
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(parquet.stat().st_mode) == 0o600
    sql = "SELECT * FROM flows ORDER BY trace, n"
    rows = query_json(sql, str(parquet), *(str(path) for path in SAMPLES[1:]))
    expected = []
    for path in SAMPLES:
        for flow in show_json(path):
            expected.append((trace_of(path), flow))
    expected.sort(key=lambda pair: (pair[0], pair[1]["number"]))  # type: ignore[return-value,arg-type]
    assert len(rows) == len(expected)
    for row, (trace, flow) in zip(rows, expected):
        assert row["trace"] == trace
        assert row["n"] == flow["number"]
        assert row["method"] == flow["method"] and row["status"] == flow["status"]
        assert row["id"] == (None if flow["id"] is None else str(flow["id"]))
        assert row["error"] == flow["error"]
        assert row["request_size"] == flow["request_size"]
        latency = flow["latency_ms"]
        if latency is None:
            assert row["latency"] is None
        else:
            assert round(float(row["latency"]) * 1000, 3) == latency  # type: ignore[arg-type]
        request = flow.get("request")
        params = request.get("params") if isinstance(request, dict) else None
        assert (None if row["params"] is None else json.loads(row["params"])) == params  # type: ignore[arg-type]


def test_group_by_method_over_many_traces() -> None:
    sql = "SELECT method, count(*) AS calls FROM flows WHERE method IS NOT NULL GROUP BY method"
    rows = query_json(sql, *(str(path) for path in SAMPLES))
    counts = {row["method"]: row["calls"] for row in rows}
    expected: dict[object, int] = {}
    for path in SAMPLES:
        for flow in show_json(path):
            if flow["method"] is not None:
                expected[flow["method"]] = expected.get(flow["method"], 0) + 1
    assert counts == expected


def test_csv_and_table_output() -> None:
    sql = "SELECT method, code FROM flows WHERE code IS NOT NULL ORDER BY n"
    done = run_cli("query", sql, "sample:error-session", "--csv")
    assert done.returncode == 0, done.stderr
    table = list(csv.reader(io.StringIO(done.stdout)))
    assert table[0] == ["method", "code"] and len(table) > 2
    done = run_cli("query", sql, "sample:error-session")
    assert done.returncode == 0 and "-32000" in done.stdout and "rows" in done.stdout


def test_bad_query_and_bad_trace_are_one_line(tmp_path: Path) -> None:
    for args in (
        ("SELEC 1", "sample:error-session"),
        ("SELECT nope FROM flows", "sample:error-session"),
        ("SELECT 1", str(tmp_path / "missing.jsonl")),
        ("SELECT 1", str(tmp_path / "missing.parquet")),
        # Several recordings are read in parallel: the error still comes back as one line.
        ("SELECT 1", str(SAMPLES[0]), str(tmp_path / "missing.jsonl"), str(SAMPLES[1])),
    ):
        done = run_cli("query", *args)
        assert done.returncode == 2, done
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("golem-proxy: "), done.stderr
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet")
    done = run_cli("query", "SELECT count(*) FROM flows", str(broken))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr


def test_a_query_with_no_statement_is_one_line_before_any_trace_is_read(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(SAMPLES[0].read_text(encoding="utf-8") + "{not json\n{}\n", "utf-8")
    for sql in ("", "   ", "-- nothing yet", ";", " ; -- x\n;"):
        done = run_cli("query", sql, "sample:error-session")
        assert done.returncode == 2, done
        assert done.stderr == (
            "golem-proxy: query failed (no SQL statement to run: the query is empty or only "
            "comments)\n"
        )
    # Neither that nor a query that does not parse waits for the traces to be read first.
    for sql, said in (("", "no SQL statement"), ("SELEC 1", "syntax error")):
        done = run_cli("query", sql, str(damaged))
        assert done.returncode == 2 and said in done.stderr, done
        assert "damaged" not in done.stderr and len(done.stderr.splitlines()) == 1


def test_export_and_dissector_usage_errors_are_one_line(tmp_path: Path) -> None:
    for args in (
        ("export", "sample:error-session", "--format", "parquet"),
        ("export", "sample:error-session", "--format", "pcapng"),
        ("export", "sample:error-session", "--format", "parquet", "--out", str(tmp_path)),
        ("dissector", "--out", str(tmp_path / "no" / "such" / "dir.lua")),
    ):
        done = run_cli(*args)
        assert done.returncode == 2, done
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("golem-proxy: "), done.stderr
    # The file asked for is named, not the temporary one it would have been renamed from.
    assert "dir.lua (" in done.stderr, done.stderr


def test_a_frame_larger_than_the_engine_reads_by_default_is_queried_and_exported(
    tmp_path: Path,
) -> None:
    # DuckDB reads JSON objects of 16 MiB by default; a recording's frames may be larger.
    path = tmp_path / "large.jsonl"
    with TraceBuilder.create(str(path)) as trace:
        trace.call("scene.create_layer", {"name": "x" * (20 << 20)}, {"success": True})
    sql = "SELECT method, length(params::VARCHAR) > 20000000 AS large FROM flows"
    assert query_json(sql, str(path)) == [{"method": "scene.create_layer", "large": True}]
    parquet = tmp_path / "large.parquet"
    done = run_cli("export", str(path), "--format", "parquet", "--out", str(parquet))
    assert done.returncode == 0, done.stderr
    assert query_json("SELECT count(*) AS n FROM flows", str(parquet)) == [{"n": 1}]


def test_a_recording_cut_short_is_noted_as_show_notes_it(tmp_path: Path) -> None:
    whole = SAMPLES[0].read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(whole[: whole.rindex(b"\n", 0, len(whole) // 2) + 40])  # mid-line
    show = run_cli("show", str(cut))
    (note,) = [line for line in show.stderr.splitlines() if line.startswith("note:")]
    assert "ends with an incomplete line" in note
    runs = {
        "alone": [str(cut)],
        "among others, by two processes": [str(cut), str(SAMPLES[1]), "--jobs", "2"],
        "cached": [str(cut), "--cache", str(tmp_path / "c")],
    }
    for name, traces in runs.items():
        for _ in range(2 if name == "cached" else 1):  # from the cache, the second time
            done = run_cli("query", "SELECT count(*) FROM flows", *traces, "--json")
            assert done.returncode == 0, done.stderr
            assert done.stderr.splitlines() == [note], name
