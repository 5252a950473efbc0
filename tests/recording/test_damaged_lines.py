"""Damaged lines a reader meets in a recording that is not the writer's own (edited, or from
anyone): the frames' own decisions stand where a line contradicts them, and a line that says
two things is refused, by the exact reader and the fast one alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from golem_proxy.events import ExchangeCompleted, SessionEnded
from golem_proxy.recording.fast_reader import FastRecordingReader
from golem_proxy.recording.reader import RecordingReader
from golem_proxy.recording.schema import RecordingError
from golem_proxy.replay.index import load_exchanges
from tests.support.cli_helpers import run_cli

READERS = pytest.mark.parametrize("reader", [RecordingReader, FastRecordingReader])


def line(**members: Any) -> str:
    """One line, as the writer lays it out (compact; a frame's ``msg`` last)."""
    return json.dumps(members, separators=(",", ":"), ensure_ascii=False)


def header(*routes: dict[str, str]) -> str:
    return line(
        format="golem-proxy-recording", version=2, profile="golem", routes=list(routes),
        started_at="2026-12-06T00:00:00Z", clock="t = monotonic seconds since started_at",
        tool="golem-proxy", redact=[], ends_with_session_end=True,
    )  # fmt: skip


MAIN = {"name": "main", "listen": "127.0.0.1:19876", "upstream": "127.0.0.1:9876"}
MCP = {"name": "mcp", "listen": "stdio", "upstream": "server", "profile": "mcp"}


def frame(seq: int, route: str, direction: str, n: int, msg: Any, **members: Any) -> str:
    kind = "request" if direction == "c2s" else "response"
    return line(
        seq=seq, t=seq / 1000, kind="frame", conn=1, route=route, dir=direction, n=n,
        size=len(json.dumps(msg)), type=kind, **members, msg=msg,
    )  # fmt: skip


def exchange(seq: int, route: str, req: int, resp: int, method: str) -> str:
    return line(
        seq=seq, t=seq / 1000, kind="exchange", conn=1, route=route, req=req, resp=resp,
        method=method, status="ok", latency=0.001, outcome="ok",
    )  # fmt: skip


def opened(route: str) -> str:
    return line(seq=1, t=0.001, kind="open", conn=1, route=route, client="c", upstream="u")


def ended(seq: int) -> str:
    return line(seq=seq, t=seq / 1000, kind="session-end", reason="done")


def call(ident: Any, method: str) -> dict[str, Any]:
    return {"id": ident, "method": method, "params": {}}


EXCHANGE_ON_ANOTHER_ROUTE = [
    header(MAIN, MCP),
    opened("mcp"),
    frame(2, "mcp", "c2s", 0, {"jsonrpc": "2.0", **call(1, "tools/call")}, expects_answer=True),
    frame(
        3,
        "mcp",
        "s2c",
        0,
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": True}},
        answers=0,
    ),
    exchange(4, "main", 0, 0, "tools/call"),
    ended(5),
]
"""A ``tools/call`` answered with ``isError``, its exchange line naming route ``main``."""

EXCHANGE_OF_ANOTHER_ANSWER = [
    header(MAIN),
    opened("main"),
    frame(2, "main", "c2s", 0, call("a", "scene.delete_objects"), expects_answer=True),
    frame(3, "main", "c2s", 1, call("b", "scene.create_layer"), expects_answer=True),
    frame(4, "main", "s2c", 0, {"id": "b", "result": {"layer_index": 1}}, answers=1),
    exchange(5, "main", 0, 0, "scene.delete_objects"),
    ended(6),
]
"""Two requests; the answer (to the second: ``answers`` 1) named by an exchange line with the
first."""

ANSWER_OF_AN_EARLIER_REQUEST = [
    header(MAIN),
    opened("main"),
    frame(2, "main", "c2s", 0, call("a", "scene.delete_objects"), expects_answer=True),
    frame(3, "main", "c2s", 1, call("b", "scene.create_layer"), expects_answer=True),
    frame(4, "main", "s2c", 1, {"id": "a", "result": {"deleted": 1}}, answers=0),
    exchange(5, "main", 1, 1, "scene.create_layer"),
    ended(6),
]
"""A request, its answer and an exchange line in a row that pairs them, the answer saying it
answers the request before (the layout the fast scanner takes in one step)."""

EXCHANGE_AFTER_THE_END = [
    header(MAIN),
    opened("main"),
    frame(2, "main", "c2s", 0, call("a", "scene.create_layer"), expects_answer=True),
    frame(3, "main", "s2c", 0, {"id": "a", "result": {}}, answers=0),
    exchange(4, "main", 0, 0, "scene.create_layer"),
    ended(5),
    frame(6, "main", "c2s", 1, call("b", "scene.create_layer"), expects_answer=True),
    frame(7, "main", "s2c", 1, {"id": "b", "result": {}}, answers=1),
    exchange(8, "main", 1, 1, "scene.create_layer"),
]

BOTH_MSG_AND_RAW = [
    header(MAIN),
    opened("main"),
    frame(2, "main", "c2s", 0, call("a", "scene.create_layer"), expects_answer=True),
    frame(3, "main", "s2c", 0, {"id": "a", "result": {}}, answers=0, raw="eyJpZCI6ICJhIn0="),
    exchange(4, "main", 0, 0, "scene.create_layer"),
]


def recording(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "damaged.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def exchanges(path: Path, reader: type[RecordingReader]) -> list[ExchangeCompleted]:
    with path.open("rb") as stream:
        return [e for e in reader(stream) if isinstance(e, ExchangeCompleted)]


@READERS
def test_an_exchange_is_decided_by_its_frames_route_not_the_lines(
    tmp_path: Path, reader: type[RecordingReader]
) -> None:
    path = recording(tmp_path, EXCHANGE_ON_ANOTHER_ROUTE)
    (exchange,) = exchanges(path, reader)
    assert exchange.route == "mcp" and exchange.outcome.failed
    rows = [json.loads(line) for line in run_cli("show", str(path), "--json").stdout.splitlines()]
    assert [row["outcome"] for row in rows] != ["ok"], rows


@READERS
def test_an_exchange_line_naming_another_requests_answer_pairs_the_answer_with_its_own(
    tmp_path: Path, reader: type[RecordingReader]
) -> None:
    path = recording(tmp_path, EXCHANGE_OF_ANOTHER_ANSWER)
    (exchange,) = exchanges(path, reader)
    assert exchange.request.message.method == "scene.create_layer"
    assert exchange.response.answers == exchange.request.index == 1
    shown = run_cli("show", str(path)).stdout
    # No answer, no close: the file ends first.
    assert "scene.delete_objects  pending (recording ended)" in shown, shown


@pytest.mark.parametrize(
    ("lines", "right"),
    [(EXCHANGE_OF_ANOTHER_ANSWER, (1, 0)), (ANSWER_OF_AN_EARLIER_REQUEST, (0, 1))],
    ids=["another-answer", "earlier-request"],
)
def test_replay_pairs_an_exchange_line_as_the_reader_does(
    tmp_path: Path, lines: list[str], right: tuple[int, int]
) -> None:
    """The fast scanner (replay, diff, verify, mcp-verify) takes the answer's word over the
    exchange line's, as `show` and `check` do: the same request gets the same answer."""
    path = recording(tmp_path, lines)
    trace = load_exchanges(str(path))
    try:
        replayed = [(e.request, e.response) for e in trace.exchanges]
    finally:
        trace.close()
    read = exchanges(path, RecordingReader)
    assert replayed == [(e.request.payload, e.response.payload) for e in read] and len(read) == 1
    # diff, which reads with the scanner, finds the damaged file the same as one whose
    # exchange line names the pair the frames say.
    whole = tmp_path / "whole.jsonl"
    req, resp = right
    method = read[0].request.message.method or ""
    repaired = [*lines[:-2], exchange(len(lines) - 2, "main", req, resp, method), lines[-1]]
    whole.write_text("\n".join(repaired) + "\n", encoding="utf-8")
    compared = run_cli("diff", str(whole), str(path))
    assert compared.returncode == 0, compared.stdout + compared.stderr


@READERS
def test_an_exchange_after_the_end_line_means_the_session_went_on(
    tmp_path: Path, reader: type[RecordingReader]
) -> None:
    path = recording(tmp_path, EXCHANGE_AFTER_THE_END)
    with path.open("rb") as stream:
        read = reader(stream)
        last = list(read)[-1]
    assert isinstance(last, ExchangeCompleted) and not isinstance(last, SessionEnded)
    assert read.ended is None


@READERS
def test_a_frame_line_with_both_msg_and_raw_is_refused(
    tmp_path: Path, reader: type[RecordingReader]
) -> None:
    path = recording(tmp_path, BOTH_MSG_AND_RAW)
    with path.open("rb") as stream, pytest.raises(RecordingError, match="both msg and raw"):
        list(reader(stream))


@READERS
@pytest.mark.parametrize(
    ("member", "value"), [("method", ["x"]), ("method", 7), ("type", None), ("type", {"a": 1})]
)
def test_a_frame_line_whose_copy_of_the_message_has_the_wrong_type_is_refused(
    tmp_path: Path, reader: type[RecordingReader], member: str, value: Any
) -> None:
    """The ``method`` and ``type`` a frame line repeats are checked as every member is: the
    readers that replay and compare (which read them) and those that show refuse alike."""
    request = json.loads(frame(2, "main", "c2s", 0, call("a", "ping"), expects_answer=True))
    msg = request.pop("msg")
    request[member] = value
    request["msg"] = msg  # last, where the writer puts it
    lines = [
        header(MAIN),
        opened("main"),
        line(**request),
        frame(3, "main", "s2c", 0, {"id": "a", "result": {}}, answers=0),
        exchange(4, "main", 0, 0, "ping"),
    ]
    path = recording(tmp_path, lines)
    with path.open("rb") as stream, pytest.raises(RecordingError, match=f"{member} must be"):
        list(reader(stream))
