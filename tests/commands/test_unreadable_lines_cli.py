"""Client lines a JSON-RPC 2.0 server cannot read, through ``golem-proxy proxy --profile
jsonrpc-ndjson`` as a user runs it: the server answers each with an error whose id is null
(-32700 for a line that is not JSON, -32600 for one that is no request object). Each answer
is its line's, not an orphan, so the closing line counts the pair as an exchange that failed,
not as a request without an answer, and ``show`` and ``stats`` say the same."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from tests.support.cli_helpers import run_cli

LINES = [
    b'{"jsonrpc":"2.0","id":1,"method":"logs","params":{}}',
    b'{"jsonrpc":"2.0","method":"logs","params":',  # not JSON
    b"42",  # JSON, but no request object
    b'{"jsonrpc":"2.0","id":2,"method":"logs","params":{}}',
]


def _answer(line: bytes) -> bytes:
    """What a JSON-RPC 2.0 server answers to ``line``."""
    try:
        request = json.loads(line)
    except ValueError:
        error = {"code": -32700, "message": "Parse error"}
        return json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    if not isinstance(request, dict):
        error = {"code": -32600, "message": "Invalid Request"}
        return json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    return json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"lines": []}}).encode()


@pytest.fixture
def jsonrpc_server() -> Iterator[int]:
    """A JSON-RPC 2.0 server on 127.0.0.1 that answers every line it reads; its port."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve(conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as lines:
            for line in lines:
                conn.sendall(_answer(line.rstrip(b"\n")) + b"\n")

    def accept() -> None:
        while True:  # the proxy's start-up check connects too, and says nothing
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    # A close alone leaves a thread blocked in accept() there: shut down first, so it ends.
    with contextlib.suppress(OSError):
        server.shutdown(socket.SHUT_RDWR)
    server.close()
    thread.join(5)
    assert not thread.is_alive()


def test_a_line_answered_with_a_null_id_error_is_an_exchange_not_one_without_an_answer(
    jsonrpc_server: int, tmp_path: Path
) -> None:
    record = tmp_path / "unreadable.jsonl"
    cli = start_proxy_cli(
        "--profile", "jsonrpc-ndjson", "--route", f"127.0.0.1:0=127.0.0.1:{jsonrpc_server}",
        "--record", str(record), "--quiet",
    )  # fmt: skip
    try:
        # Pipelined: two requests wait when the first null-id answer comes.
        with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
            client.sendall(b"".join(line + b"\n" for line in LINES))
            with client.makefile("rb") as answers:
                got = [json.loads(answers.readline()) for _ in LINES]
        assert [answer["id"] for answer in got] == [1, None, None, 2]
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    # Each line the server could not read is a violation, and so is its answer's null id (the
    # 0.6 contract answers it with id 0): four. Its pair failed: two errors.
    assert cli.stderr.splitlines()[-1] == (
        f"golem-proxy proxy: recorded 4 exchanges (2 errors, 4 violations) to {record}"
    )

    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    flows = [json.loads(line) for line in shown.stdout.splitlines()]
    assert [(flow["method"], flow["status"]) for flow in flows] == [
        ("logs", "ok"),
        (None, "InvalidEnvelope(MissingId)"),
        (None, "InvalidEnvelope(MissingId)"),
        ("logs", "ok"),
    ]
    counted = run_cli("stats", "--json", str(record))
    assert counted.returncode == 0, counted.stderr
    rows = json.loads(counted.stdout)["methods"]
    assert sum(row["count"] for row in rows) == 4
    assert sum(row["errors"] for row in rows) == 2
