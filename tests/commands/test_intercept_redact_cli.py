"""``golem-proxy proxy --intercept`` with ``--redact``, as a user drives it: commands typed on
stdin, a peer on 127.0.0.1 upstream, a plain socket as the client, and the recording afterwards.

A held frame is shown, logged and recorded as the connection's frames are: redacted by the
rules, and where it repeats a value they replaced before (the ``original`` of an edit too,
marked ``redacted``)."""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from golem_core.blocking import MessageReader
from golem_core.messages import Role
from golem_core.profiles import GOLEM
from golem_proxy.events import FrameSeen, InterceptKind, InterceptStep
from golem_proxy.live.redact import REDACTED
from golem_proxy.recording.format import read_recording
from tests.commands.test_intercept_cli import OBSERVERS, InterceptingProxy
from tests.support.cli_helpers import run_cli

SECRET = "TOPSECRET-hunter2"
ISSUED = "ISSUED-token-7f3a"


class EchoUpstream:
    """A peer that answers each request on its connection with what its ``params`` held, as
    text (a plugin echoing a value in its message), GOLEM-framed or one JSON-RPC line each;
    it notes every payload it got (``received``)."""

    def __init__(self, ndjson: bool = False) -> None:
        self.ndjson = ndjson
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.received: list[Any] = []
        self.got_one = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                peer, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(peer,), daemon=True).start()

    def _serve(self, peer: socket.socket) -> None:
        with peer, contextlib.suppress(OSError, ValueError, struct.error):
            stream = peer.makefile("rb")
            while True:
                if self.ndjson:
                    line = stream.readline()
                    if not line:
                        return
                    request = json.loads(line)
                else:
                    head = stream.read(4)
                    if len(head) < 4:
                        return
                    request = json.loads(stream.read(struct.unpack("!I", head)[0]))
                self.received.append(request)
                self.got_one.set()
                if "id" not in request:  # a notification: nothing answers it
                    continue
                self.before_answer(peer, request)
                result = self.result_for(request)
                if self.ndjson:
                    answer = {"jsonrpc": "2.0", "id": request["id"], "result": result}
                    peer.sendall(json.dumps(answer).encode() + b"\n")
                else:
                    peer.sendall(GOLEM.encode({"id": request["id"], "result": result}))

    def result_for(self, request: dict[str, Any]) -> Any:
        """The result that answers ``request``: what its ``params`` held, said back."""
        return {"said": f"you sent {json.dumps(request.get('params'))}"}

    def before_answer(self, peer: socket.socket, request: dict[str, Any]) -> None:
        """What the peer sends ahead of its answer to ``request`` (nothing here)."""

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join(10)


class IssuingUpstream(EchoUpstream):
    """An `EchoUpstream` that answers ``auth.issue`` with a token of its own (`ISSUED`)."""

    def result_for(self, request: dict[str, Any]) -> Any:
        if request.get("method") == "auth.issue":
            return {"token": ISSUED}
        return super().result_for(request)


class AskingUpstream(EchoUpstream):
    """A JSON-RPC `EchoUpstream` that, ahead of its first answer on a connection, asks its
    client something itself: an ``srv.ask`` request (id 100) carrying `ISSUED`."""

    def __init__(self) -> None:
        super().__init__(ndjson=True)
        self.asked: set[int] = set()

    def before_answer(self, peer: socket.socket, request: dict[str, Any]) -> None:
        if peer.fileno() not in self.asked:
            self.asked.add(peer.fileno())
            ask = {"jsonrpc": "2.0", "id": 100, "method": "srv.ask", "params": {"secret": ISSUED}}
            peer.sendall(json.dumps(ask).encode() + b"\n")


@pytest.fixture
def echo_upstream() -> Iterator[EchoUpstream]:
    up = EchoUpstream()
    yield up
    up.close()


@pytest.fixture
def issuing_upstream() -> Iterator[IssuingUpstream]:
    up = IssuingUpstream()
    yield up
    up.close()


def assert_nowhere(record: Path, secret: str) -> None:
    """``secret`` is in no byte of ``record``, nor in any of its lines' strings read as base64
    (a malformed frame's ``raw``, an edit's ``original``), nor in what ``show`` prints of it."""
    data = record.read_bytes()
    assert secret.encode() not in data
    strings: list[Any] = [json.loads(line) for line in data.splitlines()]
    while strings:
        value = strings.pop()
        if isinstance(value, dict):
            strings.extend(value.values())
        elif isinstance(value, list):
            strings.extend(value)
        elif isinstance(value, str):
            with contextlib.suppress(binascii.Error, ValueError):
                assert secret.encode() not in base64.b64decode(value, validate=True)
    for view in (("show", str(record)), ("show", "--json", str(record))):
        shown = run_cli(*view)
        assert shown.returncode == 0, shown.stderr
        assert secret not in shown.stdout


def _shown(proxy: InterceptingProxy, held: str) -> str:
    return "".join(proxy.answer_to(f"show {held}".encode()))


@OBSERVERS
def test_a_held_frame_is_shown_and_its_original_recorded_redacted(
    echo_upstream: EchoUpstream, tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "session.jsonl"
    proxy = InterceptingProxy(
        "--route", f"127.0.0.1:0=127.0.0.1:{echo_upstream.port}", "--record", str(record),
        "--redact", "params.code", "--intercept", r"~m ^auth\.", "--observer", observer,
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as client:
            login = {"id": "r0", "method": "auth.login", "params": {"code": SECRET, "user": "bob"}}
            client.sendall(GOLEM.encode(login))
            held = proxy.wait_for(r"held #(\d+): auth\.login id=r0").group(1)
            shown = _shown(proxy, held)
            assert SECRET not in shown
            assert json.loads(shown.splitlines()[0])["params"] == {"code": REDACTED, "user": "bob"}
            assert "(redacted: params.code; an edit sends what you type)" in shown
            edited = {
                "id": "r0",
                "method": "auth.login",
                "params": {"code": "CHANGED", "user": "eve"},
            }
            proxy.type(f"edit {held} {json.dumps(edited)}")
            proxy.wait_for(r"intercept:edit auth\.login edited after")
            # The answer, held in turn, repeats what the upstream got: the value the rule
            # replaced in the edit (an echo), shown and kept redacted.
            held = proxy.wait_for(rf"held #(?!{held}:)(\d+): auth\.login id=r0").group(1)
            shown = _shown(proxy, held)
            assert "CHANGED" not in shown and "you sent" in shown
            assert "(redacted: echo; an edit sends what you type)" in shown
            answer = {"id": "r0", "result": {"said": "welcome"}}
            proxy.type(f"edit {held} {json.dumps(answer)}")
            got = MessageReader(client).read_message(Role.RESPONSE)
            assert got.obj == answer
    finally:
        stderr = proxy.stop()
    assert proxy.process.returncode == 0, stderr
    assert echo_upstream.received == [edited]
    log = "".join(proxy.lines)
    assert SECRET not in log and "CHANGED" not in log
    assert SECRET.encode() not in record.read_bytes()
    assert b"CHANGED" not in record.read_bytes()

    events = read_recording(str(record)).events
    edits = [e for e in events if isinstance(e, InterceptStep) and e.kind is InterceptKind.EDITED]
    request_edit, answer_edit = edits
    assert json.loads(request_edit.original)["params"] == {"code": REDACTED, "user": "bob"}
    assert request_edit.redacted == ("params.code",)
    assert REDACTED in json.loads(answer_edit.original)["result"]["said"]
    assert answer_edit.redacted == ("echo",)
    lines = [json.loads(text) for text in record.read_text().splitlines()[1:]]
    steps = [line for line in lines if line["kind"] == "intercept" and line["step"] == "edit"]
    assert [line["redacted"] for line in steps] == [["params.code"], ["echo"]]
    assert SECRET.encode() not in base64.b64decode(steps[0]["original"])
    frames = [e for e in events if isinstance(e, FrameSeen)]
    assert [f.redacted for f in frames] == [("params.code",), ()]


def answer_on(client: socket.socket) -> Any:
    """The next answer on ``client``, as an object."""
    return MessageReader(client).read_message(Role.RESPONSE).obj


@OBSERVERS
def test_a_dropped_answer_still_hides_its_token_where_it_comes_back(
    issuing_upstream: IssuingUpstream, tmp_path: Path, observer: str
) -> None:
    """The answer carrying the token is held and dropped: it is never recorded, yet the next
    request repeating the token (and the answer echoing it) is recorded and logged with it
    hidden, as if the tap had seen the answer (a method-scoped rule, by the request's
    method)."""
    record = tmp_path / "session.jsonl"
    proxy = InterceptingProxy(
        "--route", f"127.0.0.1:0=127.0.0.1:{issuing_upstream.port}", "--record", str(record),
        "--redact", "auth.issue:result.token", "--intercept", r"~s & ~m ^auth\.issue$",
        "--observer", observer, "--verbose",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as client:
            client.sendall(GOLEM.encode({"id": "i1", "method": "auth.issue", "params": {}}))
            held = proxy.wait_for(r"held #(\d+): auth\.issue id=i1").group(1)
            proxy.type(f"drop {held}")
            proxy.wait_for(r"intercept:drop auth\.issue withheld response")
            check = {"id": "c1", "method": "auth.check", "params": {"token": ISSUED}}
            client.sendall(GOLEM.encode(check))
            assert ISSUED in json.dumps(answer_on(client))  # the client gets the real answer
            proxy.wait_for(r"auth\.check +ok")
    finally:
        stderr = proxy.stop()
    assert proxy.process.returncode == 0, stderr
    assert ISSUED not in "".join(proxy.lines)
    assert_nowhere(record, ISSUED)
    frames = [e for e in read_recording(str(record)).events if isinstance(e, FrameSeen)]
    assert [(f.direction.value, f.message.id, f.redacted) for f in frames] == [
        ("c2s", "i1", ()),
        ("c2s", "c1", ("echo",)),
        ("s2c", "c1", ("echo",)),
    ]


@OBSERVERS
def test_the_original_of_an_edit_still_hides_its_token_where_it_comes_back(
    echo_upstream: EchoUpstream, tmp_path: Path, observer: str
) -> None:
    """A request is edited so that its token is not sent: only the edit is recorded, yet the
    next request repeating the token (and the answer echoing it) is recorded with it hidden."""
    record = tmp_path / "session.jsonl"
    proxy = InterceptingProxy(
        "--route", f"127.0.0.1:0=127.0.0.1:{echo_upstream.port}", "--record", str(record),
        "--redact", "params.token", "--intercept", r"~q & ~m ^auth\.login$",
        "--observer", observer, "--verbose",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as client:
            login = {"id": "r0", "method": "auth.login", "params": {"token": SECRET}}
            client.sendall(GOLEM.encode(login))
            held = proxy.wait_for(r"held #(\d+): auth\.login id=r0").group(1)
            edited = {"id": "r0", "method": "auth.login", "params": {"user": "bob"}}
            proxy.type(f"edit {held} {json.dumps(edited)}")
            answer_on(client)
            again = {"id": "r1", "method": "auth.again", "params": {"note": f"again {SECRET}"}}
            client.sendall(GOLEM.encode(again))
            assert SECRET in json.dumps(answer_on(client))
            proxy.wait_for(r"auth\.again +ok")
    finally:
        stderr = proxy.stop()
    assert proxy.process.returncode == 0, stderr
    assert echo_upstream.received == [edited, again]
    assert SECRET not in "".join(proxy.lines)
    assert_nowhere(record, SECRET)
    frames = [e for e in read_recording(str(record)).events if isinstance(e, FrameSeen)]
    assert [(f.direction.value, f.message.id, f.redacted) for f in frames] == [
        ("c2s", "r0", ()),
        ("s2c", "r0", ()),
        ("c2s", "r1", ("echo",)),
        ("s2c", "r1", ("echo",)),
    ]


@OBSERVERS
def test_a_server_request_is_redacted_by_its_own_method_shown_held_and_dropped(
    tmp_path: Path, observer: str
) -> None:
    """A JSON-RPC server asks its client (``srv.ask``) with a value a rule scoped by that
    method replaces: ``show`` prints it hidden, and once the request is dropped (never
    recorded), the client repeating the value later is recorded and logged with it hidden.
    The request's method is its own, as the tap takes it, also where the forwarding side
    decides (it was taken for an answer's, and none)."""
    upstream = AskingUpstream()
    record = tmp_path / "session.jsonl"
    proxy = InterceptingProxy(
        "--profile", "jsonrpc-ndjson", "--route", f"127.0.0.1:0=127.0.0.1:{upstream.port}",
        "--record", str(record), "--redact", "srv.ask:params.secret", "--intercept", "~s",
        "--observer", observer, "--verbose",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as client:
            lines = client.makefile("rb")
            client.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}\n')
            held, method = proxy.wait_for(r"held #(\d+): (\S+) id=100").groups()
            shown = _shown(proxy, held)
            assert ISSUED not in shown
            assert json.loads(shown.splitlines()[0])["params"] == {"secret": REDACTED}
            assert method == "srv.ask"
            proxy.type(f"drop {held}")
            held = proxy.wait_for(r"held #(\d+): ping id=1 ").group(1)
            proxy.type(f"accept {held}")
            assert json.loads(lines.readline())["id"] == 1
            note = {"jsonrpc": "2.0", "id": 2, "method": "note", "params": {"text": ISSUED}}
            client.sendall(json.dumps(note).encode() + b"\n")
            held = proxy.wait_for(r"held #(\d+): note id=2 ").group(1)
            proxy.type(f"accept {held}")
            assert ISSUED in lines.readline().decode()  # the client gets the real answer
            proxy.wait_for(r"note +ok")
    finally:
        stderr = proxy.stop()
        upstream.close()
    assert proxy.process.returncode == 0, stderr
    assert ISSUED not in "".join(proxy.lines)
    assert_nowhere(record, ISSUED)
    frames = [e for e in read_recording(str(record)).events if isinstance(e, FrameSeen)]
    assert [(f.direction.value, f.message.id, f.redacted) for f in frames] == [
        ("c2s", 1, ()),
        ("s2c", 1, ()),
        ("c2s", 2, ("echo",)),
        ("s2c", 2, ("echo",)),
    ]
