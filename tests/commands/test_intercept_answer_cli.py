"""``golem-proxy proxy --intercept`` with the JSON-RPC profile, as a user drives it: ``answer``
is refused for a held notification (nothing answers one: the client would get a response with
no request, ``id`` null), and the frame stays held to be decided otherwise."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.commands.test_intercept_cli import InterceptingProxy
from tests.commands.test_intercept_redact_cli import EchoUpstream


def test_answer_is_refused_for_a_held_notification(tmp_path: Path) -> None:
    up = EchoUpstream(ndjson=True)
    record = tmp_path / "session.jsonl"
    proxy = InterceptingProxy(
        "--profile", "jsonrpc-ndjson", "--route", f"127.0.0.1:0=127.0.0.1:{up.port}",
        "--record", str(record), "--intercept", "~q",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as client:
            note = {"jsonrpc": "2.0", "method": "note", "params": {}}
            client.sendall(json.dumps(note).encode() + b"\n")
            held = proxy.wait_for(r"held #(\d+): note").group(1)
            answer = json.dumps({"jsonrpc": "2.0", "result": {"x": 1}})
            said = proxy.answer_to(f"answer {held} {answer}".encode())
            assert said == [f"frame #{held} is a notification: nothing answers one (accept, "
                            "edit or drop it)\n"]  # fmt: skip
            assert proxy.listed.endswith("1 held\n")  # still held
            proxy.type(f"accept {held}")
            assert up.got_one.wait(20)
            # The upstream's answer to a request sent next is the first thing the client gets.
            client.sendall(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "m"}).encode() + b"\n")
            held = proxy.wait_for(r"held #(\d+): m id=7").group(1)
            proxy.type(f"accept {held}")
            first = json.loads(client.makefile("rb").readline())
            assert first["id"] == 7
    finally:
        stderr = proxy.stop()
        up.close()
    assert proxy.process.returncode == 0, stderr
    assert up.received == [note, {"jsonrpc": "2.0", "id": 7, "method": "m"}]
    log = "".join(proxy.lines)
    assert "orphan" not in log and "malformed" not in log
