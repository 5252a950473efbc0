"""An exchange line naming frames the lines before it do not hold (an answer whose ``answers``
names a request the file lacks, or an exchange of frames never written) pairs nothing, and
every view says so once, naming the line, rather than drop it without a word; replay pairs
nothing there either. Crafted recordings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from golem_proxy.analysis.trace import open_flows
from golem_proxy.recording.fast_reader import FastRecordingReader
from golem_proxy.recording.files import open_recording
from golem_proxy.recording.reader import RecordingReader
from golem_proxy.replay.recorded_exchanges import load_exchanges
from tests.support.cli_helpers import run_cli

MAIN = {"name": "main", "listen": "127.0.0.1:19876", "upstream": "127.0.0.1:9876"}


def _line(**members: Any) -> str:
    return json.dumps(members, separators=(",", ":"), ensure_ascii=False)


def _frame(seq: int, direction: str, n: int, msg: Any, **more: Any) -> str:
    kind = "request" if direction == "c2s" else "response"
    return _line(
        seq=seq, t=seq / 1000, kind="frame", conn=1, route="main", dir=direction, n=n,
        size=len(json.dumps(msg)), type=kind, **more, msg=msg,
    )  # fmt: skip


def _exchange(seq: int, req: int, resp: int) -> str:
    return _line(
        seq=seq, t=seq / 1000, kind="exchange", conn=1, route="main", req=req, resp=resp,
        method="echo", status="ok", latency=0.001, outcome="ok",
    )  # fmt: skip


def _recording(tmp_path: Path, *middle: str) -> Path:
    """One connection: an echo exchange, then ``middle``, then its close."""
    lines = [
        _line(
            format="golem-proxy-recording", version=2, profile="golem", routes=[MAIN],
            started_at="2026-12-06T00:00:00Z", clock="t", tool="golem-proxy", redact=[],
        ),
        _line(seq=1, t=0.001, kind="open", conn=1, route="main", client="c", upstream="u"),
        _frame(2, "c2s", 0, {"id": "a", "method": "echo", "params": {}}, method="echo",
               expects_answer=True),
        _frame(3, "s2c", 0, {"id": "a", "result": {}, "error": None}, answers=0),
        _exchange(4, 0, 0),
        *middle,
        _line(seq=9, t=0.009, kind="close", conn=1, route="main", reason="client closed",
              bytes={"c2s": 0, "s2c": 0}, abnormal=False),
    ]  # fmt: skip
    path = tmp_path / "unheld.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


ANSWER_TO_NO_REQUEST = (
    _frame(5, "s2c", 1, {"id": "zz", "result": {"x": 1}, "error": None}, answers=5),
    _exchange(6, 5, 1),
)
ANSWER_TO_NO_REQUEST_NOTE = (
    "line 7: an exchange names request 5 and answer 1 of connection 1 (main), and the lines "
    "before it hold no request 5 waiting for an answer: nothing is paired; an answer it names "
    "that the file holds is a row of its own"
)
NO_FRAMES_NOTE = (
    "line 6: an exchange names request 3 and answer 3 of connection 1 (main), and the lines "
    "before it hold no request 3 waiting for an answer: nothing is paired; an answer it names "
    "that the file holds is a row of its own"
)


def test_an_answer_to_a_request_the_file_lacks_is_a_row_and_its_exchange_is_said(
    tmp_path: Path,
) -> None:
    path = _recording(tmp_path, *ANSWER_TO_NO_REQUEST)
    for command in ("show", "stats", "check"):
        done = run_cli(command, str(path))
        assert f"note: {path}: {ANSWER_TO_NO_REQUEST_NOTE}" in done.stderr.splitlines(), command
    rows = [json.loads(row) for row in run_cli("show", "--json", str(path)).stdout.splitlines()]
    # The answer is a row of its own, with no request; the echo exchange is the only pair.
    assert [(row["method"], row["id"], row["request"]) for row in rows] == [
        ("echo", "a", {"id": "a", "method": "echo", "params": {}}),
        (None, "zz", None),
    ]
    # The fast path (replay, verify, diff) pairs as the reader does: the echo exchange only.
    trace = load_exchanges(str(path))
    try:
        assert [exchange.method for exchange in trace.exchanges] == ["echo"]
    finally:
        trace.close()


def test_an_exchange_of_frames_never_written_is_said(tmp_path: Path) -> None:
    path = _recording(tmp_path, _exchange(5, 3, 3))
    done = run_cli("show", str(path))
    assert done.returncode == 0, done.stderr
    assert f"note: {path}: {NO_FRAMES_NOTE}" in done.stderr.splitlines()
    assert "1 flow (1 in the recording)" in done.stdout
    # query's workers say it too, once.
    done = run_cli("query", "SELECT count(*) AS n FROM flows", str(path))
    assert done.stderr.count(NO_FRAMES_NOTE) == 1, done.stderr


def test_every_reader_finds_the_same_first_line_and_counts_them(tmp_path: Path) -> None:
    path = _recording(tmp_path, *ANSWER_TO_NO_REQUEST, _exchange(7, 8, 8))
    for kind in (RecordingReader, FastRecordingReader):
        with open_recording(str(path)) as stream:
            reader = kind(stream)
            list(reader)
        first = reader.unheld.first
        assert first is not None and (first.line, first.request, reader.unheld.count) == (7, 5, 2)
    with open_flows(str(path)) as flows:
        list(flows.flows())
        assert flows.unheld.count == 2


def test_a_well_formed_recording_says_nothing(tmp_path: Path) -> None:
    path = _recording(tmp_path)
    done = run_cli("show", str(path))
    assert done.returncode == 0 and "exchange names" not in done.stderr, done.stderr


def test_check_counts_exchange_lines_that_pair_nothing_as_not_inspected(tmp_path: Path) -> None:
    """`check` never passes a file whose exchange lines name frames it does not hold: exit 3,
    as for lines lost, with the first line said and the others counted."""
    path = _recording(tmp_path, *ANSWER_TO_NO_REQUEST, _exchange(7, 8, 8))
    done = run_cli("check", str(path))
    assert done.returncode == 3, (done.stdout, done.stderr)
    first = ANSWER_TO_NO_REQUEST_NOTE.split("; an answer it names")[0]
    assert (
        f"not inspected: exchange lines naming frames the lines before them do not hold "
        f"({first} and 1 other): flows near them may be wrong"
    ) in done.stdout.splitlines(), done.stdout
    assert "the session was not inspected whole (exit 3;" in done.stdout
    assert run_cli("check", "--allow-incomplete", str(path)).returncode == 0
    report = json.loads(run_cli("check", "--json", str(path)).stdout)
    assert report["complete"] is False
    assert report["not_inspected"]["unpaired_exchanges"] == {"lines": 2, "first": first}
    # A whole file says none.
    whole = json.loads(run_cli("check", "--json", str(_recording(tmp_path))).stdout)
    assert whole["not_inspected"]["unpaired_exchanges"] == {"lines": 0, "first": None}


SWAPPED_REQUEST = {"id": "b", "method": "echo", "params": {}}
SWAPPED_ANSWER = {"id": "b", "result": {"y": 2}, "error": None}
SWAPPED = (
    _frame(5, "s2c", 1, SWAPPED_ANSWER, answers=1),
    _frame(6, "c2s", 1, SWAPPED_REQUEST, method="echo", expects_answer=True),
    _exchange(7, 1, 1),
)
"""An answer's line before its request's (the two lines swapped by hand)."""


def test_an_answer_read_before_its_request_is_paired_by_no_reader(tmp_path: Path) -> None:
    """The views make the answer a row of its own and leave the request unanswered; replay's
    scanner, which diff and replay number their rows by, pairs nothing either, so each names
    the rows `show` numbers (a pair the views lack had no row: ``#?``)."""
    path = _recording(tmp_path, *SWAPPED)
    rows = [json.loads(row) for row in run_cli("show", "--json", str(path)).stdout.splitlines()]
    statuses = [(row["number"], row["status"]) for row in rows]
    assert statuses == [(1, "ok"), (2, "ok"), (3, "unanswered")]
    trace = load_exchanges(str(path))
    try:
        assert [exchange.method for exchange in trace.exchanges] == ["echo"]
    finally:
        trace.close()
    in_order = (
        SWAPPED[1].replace('"seq":6,"t":0.006', '"seq":5,"t":0.005'),
        SWAPPED[0].replace('"seq":5,"t":0.005', '"seq":6,"t":0.006'),
        SWAPPED[2],
    )
    (tmp_path / "whole").mkdir()
    whole = _recording(tmp_path / "whole", *in_order)
    done = run_cli("diff", str(whole), str(path))
    assert "#?" not in done.stdout, done.stdout
    assert "A#2 B#3 main echo answered in" in done.stdout, done.stdout
    # Replay serves the pair the views hold, and names the rows it did not use as show does.
    done = run_cli(
        "replay", str(path), "--listen", "127.0.0.1:0", "--gh-listen", "127.0.0.1:0",
        "--idle-exit", "0",
    )  # fmt: skip
    assert "1 recorded exchange unused" in done.stderr and "#?" not in done.stderr, done.stderr
