"""``golem-proxy proxy --intercept`` with ``--redact``, as a user drives it: commands typed on
stdin, a peer on 127.0.0.1 upstream, a plain socket as the client, and the recording afterwards.

A held frame is shown, logged and recorded as the connection's frames are: redacted by the
rules, and where it repeats a value they replaced before (the ``original`` of an edit too,
marked ``redacted``)."""

from __future__ import annotations

import base64
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

SECRET = "TOPSECRET-hunter2"


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
                said = f"you sent {json.dumps(request.get('params'))}"
                if self.ndjson:
                    answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"said": said}}
                    peer.sendall(json.dumps(answer).encode() + b"\n")
                else:
                    peer.sendall(GOLEM.encode({"id": request["id"], "result": {"said": said}}))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join(10)


@pytest.fixture
def echo_upstream() -> Iterator[EchoUpstream]:
    up = EchoUpstream()
    yield up
    up.close()


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
