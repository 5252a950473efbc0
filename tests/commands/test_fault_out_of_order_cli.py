"""A fault on an answer that is never recorded as it came (dropped, corrupted into an orphan)
is said on the row of the request that answer was for, also when the server answers out of
order: the step carries the id the proxy read in the answer, so the row is not guessed as the
oldest request of its method. A JSON-RPC server that answers three pipelined requests of one
method in reverse order, behind the real proxy."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from tests.support.cli_helpers import run_cli


class ReversingServer:
    """Reads three requests on a connection, then answers them last first; ``asks``: first
    sends a request of its own, numbered from 1 as the client numbers its own."""

    def __init__(self, asks: bool = False) -> None:
        self.asks = asks
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.listener.settimeout(20)
        for _ in range(10):  # bounded: the proxy may try the upstream before the client comes
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn, conn.makefile("rb") as lines:
                asked = [json.loads(line) for line in (lines.readline() for _ in range(3)) if line]
                if len(asked) < 3:
                    continue
                if self.asks:
                    own = {"jsonrpc": "2.0", "id": 1, "method": "ask"}
                    conn.sendall(json.dumps(own).encode() + b"\n")
                for request in reversed(asked):
                    answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"n": 1}}
                    conn.sendall(json.dumps(answer).encode() + b"\n")
                conn.settimeout(20)
                conn.recv(1)  # until the client goes
                return

    def close(self) -> None:
        self.listener.close()
        self.thread.join(20)


@pytest.fixture
def server() -> Iterator[ReversingServer]:
    serving = ReversingServer()
    yield serving
    serving.close()


@pytest.fixture
def asking_server() -> Iterator[ReversingServer]:
    serving = ReversingServer(asks=True)
    yield serving
    serving.close()


def _session(
    server: ReversingServer, record: Path, fault: str, observer: str, read: int, *more: str
) -> str:
    """Three requests pipelined through a proxy with ``fault`` (its seed fixed: the bytes a
    corruption flips are the same each run) and ``more`` options; ``read`` answers come back.
    Returns what the proxy printed (its live log, then its closing line)."""
    cli = start_proxy_cli(
        "--profile", "jsonrpc-ndjson", "--route", f"main@127.0.0.1:0=127.0.0.1:{server.port}",
        "--record", str(record), "--observer", observer, "--fault", fault, "--fault-seed", "3",
        *more,
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=20) as client:
            client.sendall(
                b"".join(
                    json.dumps({"jsonrpc": "2.0", "id": n, "method": "work"}).encode() + b"\n"
                    for n in (1, 2, 3)
                )
            )
            with client.makefile("rb") as answers:
                for _ in range(read):
                    assert answers.readline()
    finally:
        logged = cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    return logged + cli.stderr


def _rows(record: Path) -> list[dict[str, Any]]:
    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    return [json.loads(line) for line in shown.stdout.splitlines()]


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_dropped_answer_is_said_on_its_own_request_when_answers_come_out_of_order(
    server: ReversingServer, tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "dropped.jsonl"
    # The first answer to come is id 3's: the one dropped.
    _session(server, record, "drop:dir=s2c,method=work,times=1", observer, read=2)
    rows = _rows(record)
    assert [(row["request"]["id"], row["status"]) for row in rows] == [
        (1, "ok"),
        (2, "ok"),
        (3, "unanswered (withheld: --fault drop)"),
    ]
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    [fault] = [line for line in lines if line["kind"] == "fault"]
    assert (fault["fault"], fault["id"]) == ("drop", 3)  # the id the proxy read in it
    table = run_cli("show", str(record)).stdout
    [said] = [line for line in table.splitlines() if "--fault drop" in line]
    assert " unanswered " in said


def test_an_answer_corrupted_out_of_order_is_said_on_its_own_request(
    server: ReversingServer, tmp_path: Path
) -> None:
    record = tmp_path / "corrupted.jsonl"
    _session(server, record, "corrupt:dir=s2c,method=work,times=1,bytes=3", "child-process", 3)
    rows = _rows(record)
    statuses = {row["request"]["id"]: row["status"] for row in rows if row.get("request")}
    orphan = [row for row in rows if not row.get("request")]
    assert len(orphan) == 1 and orphan[0]["status"].endswith("(--fault corrupt)"), rows
    # The corrupted answer was id 3's (the first to come), not the oldest request's.
    assert statuses[1] == "ok" and statuses[2] == "ok", statuses
    assert statuses[3].startswith("unanswered (its answer corrupted by --fault corrupt: #")


def test_a_request_of_the_server_withheld_is_a_row_of_its_own(
    asking_server: ReversingServer, tmp_path: Path
) -> None:
    """The server's own request (id 1, like the client's first) is dropped: the client's
    request 1 got its answer untouched, and the server's request is recorded as it came, a
    row of its own that says the proxy withheld it, in ``show``, ``show --json`` and the live
    log (it was said on no row: only ``check`` counted it)."""
    record = tmp_path / "asked.jsonl"
    logged = _session(asking_server, record, "drop:dir=s2c,method=ask", "child-process", read=3)
    rows = _rows(record)
    assert [(row["request"]["id"], row["method"], row["status"]) for row in rows] == [
        (1, "work", "ok"),
        (2, "work", "ok"),
        (3, "work", "ok"),
        (1, "ask", "undelivered (withheld: --fault drop)"),
    ]
    assert rows[3]["faults"][0]["fault"] == "drop" and "faults" not in rows[0]
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    [fault] = [line for line in lines if line["kind"] == "fault"]
    assert fault["detail"].startswith("withheld request: ask id=1"), fault
    assert fault["server_request"] is True
    [asked] = [line for line in lines if line["kind"] == "frame" and line.get("method") == "ask"]
    assert asked["dir"] == "s2c"
    table = run_cli("show", str(record)).stdout
    [said] = [line for line in table.splitlines() if " ask " in line]
    assert "undelivered (withheld: --fault drop)" in said, table
    assert "fault drop ask withheld request: ask id=1" in logged, logged
    # check counts it a failed row of the proxy's making, not a frame it could not record.
    checked = run_cli("check", str(record)).stdout
    assert "1 undelivered (withheld: --fault drop)" in checked and "never recorded" not in checked
    # Exported, the server's stream adds up: what went on, and the request withheld.
    done = run_cli("export", str(record), "--out", str(tmp_path / "streams"))
    assert done.returncode == 0, done.stderr
    [server_side] = [line for line in done.stdout.splitlines() if "s2c" in line]
    assert "B forwarded + 1 frame withheld" in server_side, done.stdout


@pytest.mark.parametrize(
    ("observer", "more"),
    [("in-process", ()), ("child-process", ()), ("in-process", ("--enforce-limits",))],
)
def test_a_request_of_the_server_withheld_is_not_one_the_client_left_unanswered(
    asking_server: ReversingServer, tmp_path: Path, observer: str, more: tuple[str, ...]
) -> None:
    """The client never had the server's request the proxy withheld: when it ends its stream,
    the live log, the recording's ``end`` and ``session-end`` lines and the closing line do
    not count it among the requests the client left unanswered (they did: "client ended its
    stream: 1 request it was to answer will not be answered", ``"unanswered": 1``); the
    closing line says it withheld. Its row still says so, and ``check`` counts it as before."""
    record = tmp_path / "asked.jsonl"
    logged = _session(asking_server, record, "drop:dir=s2c,method=ask", observer, 3, *more)
    assert "will not be answered" not in logged, logged
    assert "1 request of the server's withheld from the client" in logged, logged
    assert "without an answer" not in logged, logged
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    assert [line for line in lines if line["kind"] == "end"] == []
    ended = lines[-1]
    assert (ended["kind"], ended["exchanges"], ended["unanswered"]) == ("session-end", 3, 0)
    assert [row["status"] for row in _rows(record)][-1] == "undelivered (withheld: --fault drop)"
    checked = run_cli("check", str(record)).stdout
    assert "1 flow failed: 1 undelivered (withheld: --fault drop)" in checked, checked
