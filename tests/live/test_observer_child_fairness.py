"""``proxy --observer child-process`` holds only the connections the recording trails on
(live/observer_link.py): while one connection floods (pipelined calls far faster than the
observing process records them, so the relay holds it), another goes on being answered; both
are recorded whole, with no gap."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

from golem_core.blocking import MessageReader
from golem_core.messages import Role
from golem_core.profiles import GOLEM
from golem_proxy.recording.format import read_recording

from .observer_child_helpers import CountingClient, observed_proxy, wait_for

CALLS = 20_000
"""The busy connection's burst of pipelined calls (~2.2 MB): more than the link lets through
unacknowledged (1 MiB), less than the cap past which everyone is held (3 MiB)."""


class Burst:
    """``CALLS`` small ``echo`` calls sent at once on a connection of its own, their answers
    counted, in threads (the relay holds the connection part way)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.answers = 0
        calls = b"".join(
            GOLEM.encode({"id": n, "method": "echo", "params": {"n": n}}) for n in range(CALLS)
        )
        self._threads = [
            threading.Thread(target=self.sock.sendall, args=(calls,), daemon=True),
            threading.Thread(target=self._read, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _read(self) -> None:
        reader = MessageReader(self.sock)
        while self.answers < CALLS and reader.read_message(Role.RESPONSE) is not None:
            self.answers += 1

    def close(self) -> None:
        for thread in self._threads:
            thread.join(60)
        self.sock.close()


def test_a_flood_on_one_connection_does_not_hold_another(tmp_path: Path) -> None:
    record = tmp_path / "fair.jsonl"
    with observed_proxy(record, "-q", "--observer", "child-process") as cli:
        quiet = CountingClient(cli.port)
        wait_for(lambda: quiet.answers >= 50, what="the first answers")
        busy = Burst(cli.port)
        wait_for(lambda: busy.answers > 0, what="the burst's first answers")
        started = quiet.answers
        # The burst is forwarded at the pace the observing process records it; the quiet
        # connection was held with it before (a few round trips a second).
        wait_for(
            lambda: quiet.answers >= started + 200 or busy.answers == CALLS,
            timeout=120,
            what="the quiet connection's answers or the burst's end",
        )
        assert busy.answers < CALLS, "the quiet connection waited for the whole burst"
        wait_for(lambda: busy.answers == CALLS, timeout=120, what="the burst's answers")
        busy.close()
        answered = quiet.stop()
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert "observation stopped" not in cli.stderr
    kinds = [json.loads(line)["kind"] for line in record.read_bytes().splitlines()[1:]]
    assert "gap" not in kinds and "unobserved" not in kinds
    assert len(read_recording(str(record)).exchanges()) == answered + CALLS
