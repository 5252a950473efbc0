"""A client pipelines one id twice on a GOLEM connection (``a`` then ``b``, both id 1), the
plugin answers them last first, and ``--fault drop`` withholds the first answer to come. A GOLEM
answer names no method: which request it answered, the wire does not say. Both rows say so,
rather than one reading ``ok (withheld …)`` and the other a plain ``unanswered``. The real
proxy and ``show``, as a user runs them."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from tests.support.cli_helpers import run_cli
from tests.support.waiting import receive_exactly


def _frame(obj: dict[str, Any]) -> bytes:
    payload = json.dumps(obj).encode()
    return struct.pack("!I", len(payload)) + payload


def _read(sock: socket.socket) -> dict[str, Any]:
    (size,) = struct.unpack("!I", receive_exactly(sock, 4))
    found: dict[str, Any] = json.loads(receive_exactly(sock, size))
    return found


REPEATED = _frame({"id": 1, "method": "a", "params": {}}) + _frame(
    {"id": 1, "method": "b", "params": {}}
)
"""Two requests pipelined with one id."""


class ReversingPlugin:
    """Reads two GOLEM requests on a connection, then answers them last first (``answers``:
    how many of them it answers)."""

    def __init__(self, answers: int = 2) -> None:
        self.answers = answers
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
            with conn:
                try:
                    asked = [_read(conn), _read(conn)]
                except OSError:
                    continue
                for request in list(reversed(asked))[: self.answers]:
                    answer = {"id": request["id"], "result": {"of": request["method"]}}
                    conn.sendall(_frame(answer))
                conn.settimeout(20)
                conn.recv(1)  # until the client goes
                return

    def close(self) -> None:
        self.listener.close()
        self.thread.join(20)


@pytest.fixture
def plugin() -> Iterator[ReversingPlugin]:
    serving = ReversingPlugin()
    yield serving
    serving.close()


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_dropped_answer_of_a_repeated_id_is_said_on_both_rows_as_ambiguous(
    plugin: ReversingPlugin, tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "repeated.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0=127.0.0.1:{plugin.port}", "--record", str(record),
        "--observer", observer, "--fault", "drop:dir=s2c,times=1",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=20) as client:
            client.sendall(REPEATED)
            # The plugin answered b first: that answer was dropped, a's went on.
            assert _read(client)["result"] == {"of": "a"}
    finally:
        logged = cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    said = "withheld: --fault drop, an answer of id 1 that 2 requests waited for"
    assert [(row["method"], row["status"]) for row in rows] == [
        ("a", f"ok ({said}: this one's or another's)"),
        ("b", f"unanswered ({said}: this one's or another's)"),
    ]
    for row in rows:
        [step] = row["faults"]
        assert (step["fault"], step["among"]) == ("drop", 2)
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    [fault] = [line for line in lines if line["kind"] == "fault"]
    assert (fault["id"], fault["among"], fault["method"]) == (1, 2, None)  # a guess: not said
    assert fault["detail"].startswith("withheld response: ? id=1 (the answer of one of 2 ")
    # The live log's line of the step does not name the oldest's method as the answer's.
    [step] = [line for line in logged.splitlines() if "fault drop" in line]
    assert "fault drop  withheld response: ? id=1 (the answer of one of 2 " in step, step
    table = run_cli("show", str(record)).stdout
    assert sum("--fault drop, an answer of id 1" in line for line in table.splitlines()) == 2


def test_a_peers_failure_among_the_rows_of_an_ambiguous_drop_counts_as_an_error(
    tmp_path: Path,
) -> None:
    """The plugin answers one of the two requests only, and that answer is dropped: one row is
    the plugin's failure, the other the proxy's doing, and which is which the wire does not
    say. stats counts both among the errors (and both in its proxy column), rather than
    neither: the plugin's failure is not hidden."""
    plugin = ReversingPlugin(answers=1)
    record = tmp_path / "silent.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0=127.0.0.1:{plugin.port}", "--record", str(record),
        "--fault", "drop:dir=s2c,times=1",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=20) as client:
            client.sendall(REPEATED)
            # The answer the plugin gave is dropped: wait until the recording says so.
            deadline = time.monotonic() + 20
            while b'"kind":"fault"' not in record.read_bytes():
                assert time.monotonic() < deadline, "no fault line recorded"
                time.sleep(0.02)
    finally:
        cli.stop()
        plugin.close()
    stats = run_cli("stats", "--json", str(record))
    assert stats.returncode == 0, stats.stderr
    methods = {row["method"]: row for row in json.loads(stats.stdout)["methods"]}
    assert [(methods[m]["errors"], methods[m]["by_proxy"]) for m in ("a", "b")] == [(1, 1)] * 2


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (
            (b'"among":2', b'"among":1000'),
            "among says 1000 requests waited with id 1; the lines before it hold 2 waiting",
        ),
        (
            (b'"among":2,', b'"server_request":true,'),
            "server_request on a frame withheld that is no request of the server's",
        ),
    ],
)
def test_a_step_claiming_more_than_the_recording_holds_is_refused_by_every_view(
    plugin: ReversingPlugin, tmp_path: Path, edit: tuple[bytes, bytes], said: str
) -> None:
    """The recording of the ambiguous drop, its fault line edited to say 1000 requests waited
    with the id (two did), or that the answer dropped was a request of the server's own. Every
    view had believed it: 1000 in the rows' words, or the drop on row ``b`` as its request
    "undelivered" and nothing said to be not inspected. Each refuses the file, naming the
    line, as it refuses an ``among`` below 1."""
    record = tmp_path / "repeated.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0=127.0.0.1:{plugin.port}", "--record", str(record),
        "--fault", "drop:dir=s2c,times=1",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=20) as client:
            client.sendall(REPEATED)
            assert _read(client)["result"] == {"of": "a"}
    finally:
        cli.stop()
    lines = record.read_bytes().splitlines(keepends=True)
    [at] = [n for n, line in enumerate(lines) if b'"kind":"fault"' in line]
    assert edit[0] in lines[at]
    lines[at] = lines[at].replace(*edit)
    crafted = tmp_path / "crafted.jsonl"
    crafted.write_bytes(b"".join(lines))
    for command in (["show"], ["show", "--json"], ["check"], ["stats"], ["stats", "--json"]):
        done = run_cli(*command, str(crafted))
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert done.stderr.startswith(f"golem-proxy: {crafted}: line {at + 1}: {said}"), command
        assert done.stderr.count("\n") == 1, done.stderr  # one line
