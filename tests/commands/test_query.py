"""``export --format parquet`` and ``query``: the flows table agrees with ``show --json``,
over recordings and Parquet files at once, and a bad query or trace is one line."""

from __future__ import annotations

import csv
import io
import json
import stat
from pathlib import Path

from tests.support.cli_helpers import ROOT, run_cli

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
            expected.append((str(path), flow))
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
