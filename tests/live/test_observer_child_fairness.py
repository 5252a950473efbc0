"""``proxy --observer child-process`` holds only the connections the recording trails on
(live/observer_link.py): while one connection floods (pipelined calls far faster than the
observing process records them, so the relay holds it), another goes on being answered; both
are recorded whole, with no gap. The same behind a flood of zero-length frames, whose decoding
takes seconds while the quiet connection's calls wait behind it in the pipe."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from pathlib import Path

from bench.robustness.crash import ThreadedUpstream
from bench.robustness.proxy_cli import start_proxy_cli
from bench.threaded_server import ThreadedServer
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


class _Silent(ThreadedServer):
    """An upstream that reads everything a connection sends and answers nothing."""

    def serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            while conn.recv(1 << 20):
                pass


ZERO_LENGTH = 128 * 1024
"""The flood: 32,768 GOLEM frames of zero length (a 4-byte header each), seconds of decoding
for the observing process (a frame and a violation recorded for each), handed on in one go."""
ROUND_TRIPS = 600
"""The quiet connection's calls while the flood is decoded: several times what held it before
(its outstanding bytes reached 1/8 of the flood's, ~150 calls, and it waited for the flood)."""
_FLOOD_FRAME = b'"size":4,"type":"malformed"'


def _route_ports(lines: list[str]) -> dict[str, int]:
    found = (re.search(r"^(\w+): 127\.0\.0\.1:(\d+) →", line) for line in lines)
    return {match.group(1): int(match.group(2)) for match in found if match}


def _stopped(record: Path) -> bool:
    """The recording ends saying observation stopped."""
    with record.open("rb") as lines:
        lines.seek(max(0, record.stat().st_size - 400))
        return b'"kind":"observation-stopped"' in lines.read()


class _Counted:
    """Counts the flood's frames in a recording as it grows (reading only what was added)."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("rb")
        self._count = 0
        self._rest = b""

    def __call__(self) -> int:
        added = self._rest + self._file.read()
        whole = added.rfind(b"\n") + 1
        self._rest = added[whole:]
        self._count += added[:whole].count(_FLOOD_FRAME)
        return self._count

    def close(self) -> None:
        self._file.close()

    def wait_for(self, count: int, record: Path, timeout: float) -> None:
        """Until ``count`` frames are recorded, or the recording says observation stopped
        (then the caller's checks say so); then close."""
        wait_for(
            lambda: self() == count or _stopped(record), timeout=timeout, what="frames recorded"
        )
        self.close()


def test_a_flood_of_zero_length_frames_does_not_stall_another_connection(tmp_path: Path) -> None:
    record = tmp_path / "zero.jsonl"
    with ThreadedUpstream() as upstream, _Silent() as silent:
        cli = start_proxy_cli(
            "--route", f"quiet@127.0.0.1:0={upstream.address}",
            "--route", f"flood@127.0.0.1:0=127.0.0.1:{silent.port}",
            "--record", str(record), "-q", "--observer", "child-process",
        )  # fmt: skip
        try:
            ports = _route_ports(cli.lines)
            quiet = CountingClient(ports["quiet"])
            wait_for(lambda: quiet.answers >= 50, what="the first answers")
            recorded = _Counted(record)
            flood = socket.create_connection(("127.0.0.1", ports["flood"]), timeout=60)
            flood.sendall(bytes(ZERO_LENGTH))
            started = quiet.answers
            # Its calls go into the pipe behind the flood's frames, which the observing process
            # takes seconds to record; before, the link held it once its bytes there reached
            # 1/8 of the flood's, until every flood frame was recorded.
            wait_for(
                lambda: quiet.answers >= started + ROUND_TRIPS or recorded() == ZERO_LENGTH // 4,
                timeout=60,
                what="the quiet connection's calls or the flood's recording",
            )
            during = recorded()
            assert quiet.answers >= started + ROUND_TRIPS
            assert during < ZERO_LENGTH // 4, "the quiet connection waited for the flood"
            answered = quiet.stop()
            flood.close()
            recorded.wait_for(ZERO_LENGTH // 4, record, timeout=60)
            cli.stop()
        finally:
            cli.kill()
    assert cli.process.returncode == 0, cli.stderr
    assert "observation stopped" not in cli.stderr, cli.stderr
    kinds = [json.loads(line)["kind"] for line in record.read_bytes().splitlines()[1:]]
    assert "gap" not in kinds and "unobserved" not in kinds
    assert len(read_recording(str(record)).exchanges()) == answered


PAST_PENDING = 1024 * 1024
"""A burst of 262,144 zero-length frames: twice the requests the tap keeps waiting for an
answer, so that the second half is let go one by one (a line each), three lines a frame."""


def test_a_burst_of_zero_length_frames_past_the_pending_limit_is_recorded_whole(
    tmp_path: Path,
) -> None:
    """The recorder's writes keep up with the decoding thread (`SWITCH_INTERVAL`): at the
    interpreter's default 5 ms the writer waited for it after each write, no acknowledgement
    came for 5 s after the first 1,024 frames, and the stall watchdog stopped observation."""
    record = tmp_path / "burst.jsonl"
    with _Silent() as silent:
        cli = start_proxy_cli(
            "--route", f"burst@127.0.0.1:0=127.0.0.1:{silent.port}",
            "--record", str(record), "-q", "--observer", "child-process",
        )  # fmt: skip
        try:
            port = _route_ports(cli.lines)["burst"]
            recorded = _Counted(record)
            with socket.create_connection(("127.0.0.1", port), timeout=120) as burst:
                burst.sendall(bytes(PAST_PENDING))
                recorded.wait_for(PAST_PENDING // 4, record, timeout=180)
            cli.stop()
        finally:
            cli.kill()
    assert "observation stopped" not in cli.stderr, cli.stderr
    assert cli.process.returncode == 0, cli.stderr
    lines = [json.loads(line) for line in record.read_bytes().splitlines()[1:]]
    assert sum(line["kind"] == "frame" for line in lines) == PAST_PENDING // 4
    let_go = [line for line in lines if line["kind"] == "unobserved"]
    assert let_go and all(line["reason"] == "evicted" for line in let_go)
