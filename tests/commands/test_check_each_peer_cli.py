"""``golem-proxy check`` names each violation after the peer that sent the message, as the
proxy did when it recorded it, and a failed flow by what failed: ``golem-proxy proxy
--record`` between a client and a scripted upstream on 127.0.0.1, then ``check`` on the
recording, as a user runs them."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from tests.support.cli_helpers import run_cli

Script = Callable[[socket.socket], None]


class ScriptedUpstream:
    """Runs ``script`` on the first connection that sends a byte (the proxy's readiness probe
    closes before it sends any), then stops accepting."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.done.is_set():
            try:
                peer = self.listener.accept()[0]
            except OSError:  # closed by `close`
                return
            with peer:
                peer.settimeout(20)
                if not peer.recv(1, socket.MSG_PEEK):
                    continue  # a probe
                self.script(peer)
                self.done.set()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
        self.listener.close()
        self.thread.join(10)
        assert not self.thread.is_alive(), "the upstream's thread did not end"


def framed(obj: Any) -> bytes:
    payload = json.dumps(obj).encode()
    return struct.pack("!I", len(payload)) + payload


def read_frame(peer: socket.socket) -> bytes:
    head = peer.recv(4, socket.MSG_WAITALL)
    assert len(head) == 4, head
    return peer.recv(struct.unpack("!I", head)[0], socket.MSG_WAITALL)


def line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


@contextlib.contextmanager
def recorded(tmp_path: Path, script: Script, *extra: str) -> Iterator[tuple[int, Path]]:
    """A proxy recording to ``session.jsonl`` between the block's client and an upstream
    running ``script``: yields the port to connect to and the recording, complete once the
    block ends (the proxy stopped)."""
    upstream = ScriptedUpstream(script)
    record = tmp_path / "session.jsonl"
    route = f"main@127.0.0.1:0=127.0.0.1:{upstream.port}"
    cli = start_proxy_cli("--route", route, "--record", str(record), *extra)
    try:
        yield cli.port, record
        assert upstream.done.wait(20), "the upstream's script did not end"
    finally:
        cli.stop()
        upstream.close()
    assert cli.process.returncode == 0, cli.stderr


def checked(record: Path) -> tuple[int, dict[str, Any]]:
    done = run_cli("check", str(record), "--json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def recorded_violations(record: Path) -> list[tuple[str, str, str]]:
    lines = [json.loads(text) for text in record.read_text().splitlines()[1:]]
    return [(v["dir"], v["rule"], v["path"]) for v in lines if v.get("kind") == "violation"]


def findings(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (f["direction"], group["rule"], f["path"])
        for group in report["rules"]
        for f in group["findings"]
    ]


def test_a_request_and_its_answer_breaking_one_rule_are_two_violations(tmp_path: Path) -> None:
    """The client's request and the plugin's answer are both malformed envelopes at ``$``:
    each peer's violation is its own, as the proxy recorded them."""

    def answer_malformed(peer: socket.socket) -> None:
        read_frame(peer)
        peer.sendall(framed({"id": "q", "result": None, "error": {"code": "BOOM"}}))
        peer.recv(1)  # until the proxy closes

    with (
        recorded(tmp_path, answer_malformed) as (port, record),
        socket.create_connection(("127.0.0.1", port), timeout=20) as client,
    ):
        client.sendall(framed({"id": "q", "method": 5, "params": {}}))
        read_frame(client)
    both = [("c2s", "golem.message.malformed", "$"), ("s2c", "golem.message.malformed", "$")]
    assert sorted(recorded_violations(record)) == both
    code, report = checked(record)
    assert code == 1
    assert sorted(findings(report)) == both
    (group,) = report["rules"]
    assert group["count"] == 2 and report["errors"] == 2
    assert {f["flow"] for f in group["findings"]} == {1}


def test_a_malformed_request_answered_ok_is_said_to_have_failed_as_malformed(
    tmp_path: Path,
) -> None:
    """The plugin answered a request that is no JSON with a success: the flow failed (its
    request was malformed) and check says that, not that it failed as ``ok``."""

    def answer_ok(peer: socket.socket) -> None:
        read_frame(peer)
        peer.sendall(framed({"id": None, "result": {"done": True}, "error": None}))
        peer.recv(1)  # until the proxy closes

    broken = b'{"id": "b", "method": ping}'
    with (
        recorded(tmp_path, answer_ok) as (port, record),
        socket.create_connection(("127.0.0.1", port), timeout=20) as client,
    ):
        client.sendall(struct.pack("!I", len(broken)) + broken)
        read_frame(client)
    code, report = checked(record)
    assert code == 1  # the malformed request is a violation
    said = "malformed:invalid-json request answered ok"
    assert report["failed_flows"] == {"count": 1, "by_status": {said: 1}}
    shown = run_cli("show", str(record), "--json").stdout
    (row,) = [json.loads(text) for text in shown.splitlines()]
    assert (row["status"], row["error"]) == ("ok", True)  # the answer's outcome; a failed flow
    text = run_cli("check", str(record)).stdout
    assert f"1 flow failed: 1 {said}" in text.splitlines()


ASK = {"jsonrpc": "2.0", "id": 7, "method": "confirm", "params": {}}
PROGRESS = {"jsonrpc": "2.0", "method": "progress", "params": {"done": 1}}
CALL = {"jsonrpc": "2.0", "id": 1, "method": "state", "params": {}}
STATE = {"jsonrpc": "2.0", "id": 1, "result": {"active_path": None, "active_title": None,
         "is_dirty": False, "view_mode": "edit", "theme": "dark", "vim": False, "wrap": True,
         "open_paths": []}}  # fmt: skip


def asks_before_it_answers(peer: socket.socket) -> None:
    """Reads the client's call, asks the client something (and reports progress), answers
    the call once its own question is answered."""
    with peer.makefile("rb") as reader:
        reader.readline()
        peer.sendall(line(ASK) + line(PROGRESS))
        reader.readline()
        peer.sendall(line(STATE))
    peer.recv(1)  # until the proxy closes


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param({"jsonrpc": "2.0", "id": 7, "result": {}}, id="answered"),
        pytest.param(
            {"jsonrpc": "2.0", "id": 7, "error": {"code": 12345, "message": "no"}},
            id="answered-with-an-unknown-code",
        ),
    ],
)
def test_a_request_the_server_sent_is_checked_as_the_servers(
    tmp_path: Path, answer: dict[str, Any]
) -> None:
    """The server's request is not one the client makes (the method table lists what the
    server serves): its method is not checked against it; the client's answer to it is the
    client's (c2s), as the proxy recorded it."""
    with recorded(tmp_path, asks_before_it_answers, "--profile", "jsonrpc-ndjson") as (
        port,
        record,
    ):
        client = socket.create_connection(("127.0.0.1", port), timeout=20)
        # The file first: the connection closes with the last of the two.
        with client, client.makefile("rb") as reader:
            client.sendall(line(CALL))
            assert json.loads(reader.readline()) == ASK
            assert json.loads(reader.readline()) == PROGRESS
            client.sendall(line(answer))
            assert json.loads(reader.readline()) == STATE
    recorded_now = recorded_violations(record)
    assert all(direction == "c2s" for direction, _, _ in recorded_now)
    code, report = checked(record)
    assert sorted(findings(report)) == sorted(recorded_now)
    assert code == (1 if recorded_now else 0)
    if "error" in answer:
        assert recorded_now  # what the proxy found in the client's answer, check finds
        asked = [f for group in report["rules"] for f in group["findings"]]
        assert {(f["method"], f["direction"]) for f in asked} == {("confirm", "c2s")}
