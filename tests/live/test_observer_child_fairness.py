"""``proxy --observer child-process`` holds only the connections the recording trails on
(live/observer_link.py): with the observing process stopped (SIGSTOP) and one connection
sending a call larger than the link lets through unacknowledged, that connection waits while
another one goes on being answered; once the observing process continues, the held call is
answered and the recording holds every exchange of both, with no gap."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
from pathlib import Path
from typing import Optional

from golem_core.blocking import MessageReader, send_message
from golem_core.messages import Message, Response, Role
from golem_proxy.live.observer_link import STALL_LIMIT
from golem_proxy.recording.format import read_recording

from .observer_child_helpers import CountingClient, children_of, observed_proxy, wait_for

BIG = 3 * 1024 * 1024
"""The busy connection's call: more than the link lets through unacknowledged (1 MiB), less
than the cap past which everyone is held."""


class BigCall:
    """One ``echo`` call of ``BIG`` bytes on a connection of its own, sent and answered in a
    thread (the relay holds it part way)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.answer: Optional[Message] = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        send_message(self.sock, {"id": "big", "method": "echo", "params": {"b": "x" * BIG}})
        self.answer = MessageReader(self.sock).read_message(Role.RESPONSE)

    def close(self) -> None:
        self._thread.join(60)
        self.sock.close()


def test_a_stopped_observer_holds_the_busy_connection_while_another_is_served(
    tmp_path: Path,
) -> None:
    record = tmp_path / "fair.jsonl"
    with observed_proxy(record, "-q", "--observer", "child-process") as cli:
        (observer,) = children_of(cli.process.pid)
        quiet = CountingClient(cli.port)
        wait_for(lambda: quiet.answers >= 50, what="the first answers")
        os.kill(observer, signal.SIGSTOP)
        try:
            busy = BigCall(cli.port)
            stopped_at = quiet.answers
            # Held for the whole stop before: the recording trailed on the busy connection.
            wait_for(
                lambda: quiet.answers >= stopped_at + 200,
                timeout=STALL_LIMIT * 0.6,
                what="the quiet connection to be served while the observer is stopped",
            )
            assert busy.answer is None  # the busy one waits for the recording
        finally:
            os.kill(observer, signal.SIGCONT)
        wait_for(lambda: busy.answer is not None, timeout=60, what="the held call's answer")
        assert isinstance(busy.answer, Response) and busy.answer.result == {"b": "x" * BIG}
        busy.close()
        answered = quiet.stop()
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert "observation stopped" not in cli.stderr
    kinds = [json.loads(line)["kind"] for line in record.read_bytes().splitlines()[1:]]
    assert "gap" not in kinds and "unobserved" not in kinds
    assert len(read_recording(str(record)).exchanges()) == answered + 1
