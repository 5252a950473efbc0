"""``golem-proxy show``: the flows table, JSON lines, filters, limits and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.events import Direction
from tests.support.cli_helpers import run_cli, run_main
from tests.support.trace_builder import TapSimulator, golem_session, write_recording


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_bytes(write_recording(golem_session().events))
    return path


def test_table_lists_every_flow(trace: Path) -> None:
    result = run_cli("show", str(trace))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for text in (
        "creation.create_box",
        "METHOD_NOT_FOUND",
        "OBJECT_NOT_FOUND",
        "malformed:invalid-utf8",
        "<orphan>",
        "unanswered",
        "oversized",
        "truncated",
        "pending (recording ended)",
        "120.0",
        "⚠",
        "14 flows",
    ):
        assert text in out, text


def test_json_lines_are_machine_readable(trace: Path) -> None:
    result = run_cli("show", str(trace), "--json")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 14
    box = rows[1]
    assert box["method"] == "creation.create_box" and box["id"] == "a2"
    assert box["status"] == "ok" and box["latency_ms"] == 120.0
    assert box["request"]["params"]["name"] == "Boîte 🧊"
    assert box["response"] == {"id": "a2", "result": {"guid": "g-1"}, "error": None}
    assert (box["request_size"], box["response_size"]) == (196, 58)
    utf8 = rows[6]
    assert utf8["response"] is None and utf8["response_raw"]
    assert [v["rule"] for v in utf8["violations"]] == ["golem.message.malformed"]
    assert rows[10]["frame_error"]["kind"] == "oversized"
    # Still waiting for its answer when the recording ended: nothing more will be read.
    assert rows[13]["status"] == "pending (recording ended)" and rows[13]["latency_ms"] is None
    assert rows[13]["error"] is False  # whether it was ever answered is not known
    for key in ("number", "t", "route", "conn", "method", "id", "status", "violations"):
        assert all(key in row for row in rows)


def test_filter_and_limit(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "show", str(trace), "--json", "--filter", "~e ~route main")
    assert code == 0
    assert [json.loads(line)["number"] for line in out.splitlines()] == [3, 4, 5, 7, 9]
    code, out, _ = run_main(capsys, "show", str(trace), "--json", "-f", "~e", "--limit", "2")
    assert [json.loads(line)["number"] for line in out.splitlines()] == [3, 4]
    code, out, _ = run_main(capsys, "show", str(trace), "-f", "~c -32601", "-n", "5")
    assert code == 0 and "1 flow matching ~c -32601" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--filter", "(~e"], "bad filter: expected ')'"),
        (["--filter", "~nope"], "unknown filter ~nope"),
        (["--limit", "-1"], "--limit must be 0 or more"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    trace: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = run_main(capsys, "show", str(trace), *args)
    assert code == 2 and message in err and out == ""
    assert "Traceback" not in err


def test_missing_and_corrupt_files_exit_2_without_traceback(tmp_path: Path) -> None:
    missing = run_cli("show", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2
    assert "no such file" in missing.stderr and "Traceback" not in missing.stderr
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\x00\xffnot a recording\n")
    corrupt = run_cli("show", str(garbage))
    assert corrupt.returncode == 2 and "Traceback" not in corrupt.stderr
    assert len(corrupt.stderr.strip().splitlines()) == 1
    directory = run_cli("show", str(tmp_path))
    assert directory.returncode == 2 and "Traceback" not in directory.stderr


def test_a_damaged_middle_line_is_reported(tmp_path: Path) -> None:
    lines = write_recording(golem_session().events).splitlines(keepends=True)
    lines[5] = b'{"seq": 5, "kind": "frame"\n'
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(b"".join(lines))
    result = run_cli("show", str(path))
    assert result.returncode == 2
    assert "line 6" in result.stderr and "Traceback" not in result.stderr


def test_rows_are_printed_as_the_file_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A damaged line far down: the rows before it are already out when the error comes."""
    lines = write_recording(golem_session().events).splitlines(keepends=True)
    path = tmp_path / "damaged-at-the-end.jsonl"
    path.write_bytes(b"".join(lines) + b'{"seq": 999, "kind": "frame", "t": NaN}\n')
    code, out, err = run_main(capsys, "show", str(path))
    assert code == 2 and f"line {len(lines) + 1}" in err
    assert "creation.create_box" in out  # printed before the damaged line was reached


def test_memory_does_not_grow_with_the_trace(tmp_path: Path) -> None:
    """What the reader holds at any time is the flows not yet settled, not the trace."""
    from golem_proxy.analysis.trace import open_flows
    from tests.support.hostile_shapes import sequential_trace

    path = tmp_path / "long.jsonl"
    path.write_bytes(sequential_trace(3000))
    held = count = 0
    with open_flows(str(path)) as reader:
        for _ in reader.flows():
            count += 1
            held = max(held, len(reader.tracker.flows))
    assert count == 3000 and held <= 1


def _strict(text: str) -> object:
    """``text`` read as strict JSON: no NaN, no Infinity."""

    def refuse(name: str) -> object:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_a_number_json_has_not_is_named_in_every_json_output(tmp_path: Path) -> None:
    """A plugin's ``json.dumps`` writes NaN for a float that is not a number, and the proxy
    reads it as the plugin's peers do. Printed as Python writes it, the JSON output was none
    a strict reader (jq, a browser) takes; it names it instead, as protobuf's JSON does."""
    tap = TapSimulator(GOLEM)
    tap.open(1)
    tap.request(1, {"id": "a1", "method": "geometry.volume", "params": {}})
    tap.tick(0.01)
    answer = b'{"id": "a1", "success": true, "result": {"volume": NaN, "low": -Infinity}}'
    tap.send(1, Direction.S2C, GOLEM.frame_payload(answer))
    tap.close(1)
    path = tmp_path / "nan.jsonl"
    path.write_bytes(write_recording(tap.events))
    named = {"volume": "NaN", "low": "-Infinity"}
    shown = run_cli("show", str(path), "--json")
    assert shown.returncode == 0, shown.stderr
    (row,) = [_strict(line) for line in shown.stdout.splitlines()]
    assert isinstance(row, dict) and row["response"]["result"] == named
    exported = tmp_path / "flows.jsonl"
    done = run_cli("export", "--format", "jsonl", "--out", str(exported), str(path))
    assert done.returncode == 0, done.stderr
    assert _strict(exported.read_text()) == row
    queried = run_cli("query", "SELECT result FROM flows", str(path), "--json")
    assert queried.returncode == 0, queried.stderr
    (result,) = [_strict(line) for line in queried.stdout.splitlines()]
    assert isinstance(result, dict) and _strict(result["result"]) == named
