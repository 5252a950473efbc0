"""Out of file descriptors, a listener waits and says so in a line, never a traceback a try,
and loses no connection: the kernel's real EMFILE, in this process and under the real CLI."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import trio

from bench.robustness.crash import ThreadedUpstream
from golem_core.framing import LENGTH_HEADER
from golem_core.profiles import GOLEM
from golem_proxy.net.addresses import parse_address
from golem_proxy.net.listeners import open_listener
from golem_proxy.net.patient_listener import REMIND_EVERY, PatientListener
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import cli_env, interrupt, reap, wait_for_line
from tests.support.waiting import receive_exactly, until


@contextlib.contextmanager
def every_descriptor_taken() -> Iterator[list[int]]:
    """This process at its limit of open files: the soft limit lowered to a few above what is
    open, every number below it taken by /dev/null. Yields the fillers (closing one lets one
    more descriptor be made); everything restored after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    highest = max(int(name) for name in os.listdir("/proc/self/fd"))
    fillers: list[int] = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 8, hard))
    try:
        while True:
            try:
                fillers.append(os.open(os.devnull, os.O_RDONLY))
            except OSError as exc:
                assert exc.errno == errno.EMFILE
                break
        yield fillers
    finally:
        for fd in fillers:
            with contextlib.suppress(OSError):
                os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


class Ticking:
    """A clock that moves on ``step`` seconds each time it is read (each try reads it once)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.step = 1.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.mark.trio
async def test_a_shortage_is_said_once_reminded_and_said_over_and_no_connection_is_lost() -> None:
    listener = await open_listener(parse_address("127.0.0.1:0"))
    lines: list[str] = []
    clock = Ticking()
    patient = PatientListener(listener.listener, "route main", lines.append, clock)
    clients = [socket.socket() for _ in range(2)]  # made before the limit: connect needs none
    address = (listener.address.host, listener.address.port)
    accepted: list[trio.SocketStream] = []

    async def take_one() -> None:
        accepted.append(await patient.accept())

    try:
        with every_descriptor_taken() as fillers:
            clients[0].connect(address)  # completed by the kernel, waiting in the backlog
            async with trio.open_nursery() as nursery:
                nursery.start_soon(take_one)
                # One line when it starts, one more after REMIND_EVERY (10 ticks) of failing.
                await until(lambda: len(lines) >= 2)
                os.close(fillers.pop())
            assert len(lines) == 2, lines
            limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            assert lines[0] == (
                "route main: cannot take a connection that waits for it: too many open files "
                f"(EMFILE: this process's limit is {limit}; raise it with `ulimit -n`, or end "
                "connections); it waits in the listener's backlog, tried again every 0.1 s"
            )
            assert lines[1].startswith("route main: still short after 10 s: 10 tries failed and ")
            assert "0 connections taken in the last 10 s: too many open files (EMFILE" in lines[1]
            # Taken a tick after the last failure: the shortage is not said over yet.
            assert len(lines) == 2
            # The next one, taken long after the last failure, says it is over.
            os.close(fillers.pop())
            clients[1].connect(address)
            clock.step = REMIND_EVERY + 1
            accepted.append(await patient.accept())
        assert lines[2].startswith("route main: taking connections as usual again (the shortage ")
        assert len(lines) == 3
        # Both connections reached their handler whole: nothing was lost while it waited.
        for client, stream in zip(clients, accepted):
            client.sendall(b"ping")
            assert await stream.receive_some(4) == b"ping"
    finally:
        for client in clients:
            client.close()
        for stream in accepted:
            await stream.aclose()
        await listener.aclose()


class Collected:
    """A process's stdout and stderr, read as they come by threads of their own."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.texts: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self.threads = [
            threading.Thread(target=self._read, args=(getattr(process, name), lines), daemon=True)
            for name, lines in self.texts.items()
        ]
        for thread in self.threads:
            thread.start()

    @staticmethod
    def _read(stream: Any, lines: list[str]) -> None:
        for line in stream:
            lines.append(line)

    def until(self, text: str, timeout: float = 30) -> None:
        """Wait until ``text`` is in either (AssertionError after ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        while not any(text in line for lines in self.texts.values() for line in lines):
            assert time.monotonic() < deadline, f"no {text!r} in {self.texts}"
            time.sleep(0.01)

    def ended(self) -> tuple[str, str]:
        """Both, whole, once the process ended."""
        for thread in self.threads:
            thread.join(10)
        return "".join(self.texts["stdout"]), "".join(self.texts["stderr"])


def test_the_proxy_out_of_descriptors_says_so_in_words_and_serves_on(tmp_path: Any) -> None:
    # A limit the proxy reaches with a few dozen connections (each takes two descriptors).
    limit = 96

    def few_open_files() -> None:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))

    with PluginProcess(seed=7) as plugin:
        proxy = subprocess.Popen(
            [sys.executable, "-m", "golem_proxy", "proxy", "--route",
             f"127.0.0.1:0={plugin.main}", "--record", str(tmp_path / "rec.jsonl")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
            preexec_fn=few_open_files,
        )  # fmt: skip
        clients: list[socket.socket] = []
        try:
            port = int(wait_for_line(proxy, r"GOLEM_RHINO_PORT=(\d+)").group(1))
            output = Collected(proxy)
            # More connections than the limit lets it serve: those past it are refused a
            # descriptor, on accept (they wait in the backlog) or for their upstream (closed).
            for _ in range(limit // 2 + 8):
                clients.append(socket.create_connection(("127.0.0.1", port), timeout=10))
            output.until(f"too many open files (EMFILE: this process's limit is {limit}")
            for client in clients:
                client.close()
            # Once they ended, a new client's call is answered: the proxy serves on.
            with socket.create_connection(("127.0.0.1", port), timeout=10) as later:
                later.sendall(
                    GOLEM.encode({"id": "1", "method": "scene.list_layers", "params": {}})
                )
                size = LENGTH_HEADER.unpack(receive_exactly(later, LENGTH_HEADER.size))[0]
                answer = json.loads(receive_exactly(later, size))
            assert answer["id"] == "1" and answer.get("error") is None, answer
        finally:
            code = interrupt(proxy)
            reap(proxy)
        log, stderr = output.ended()
    assert code == 0, stderr
    assert "Traceback" not in log + stderr, stderr
    # Said in words that name this process's limit, not as the upstream's fault alone, and
    # (within the test's few seconds) in one line at most for the accept loop.
    assert f"too many open files (EMFILE: this process's limit is {limit}" in log + stderr
    assert sum("cannot take a connection" in line for line in stderr.splitlines()) <= 1, stderr


def call(client: socket.socket, ident: str) -> None:
    client.sendall(GOLEM.encode({"id": ident, "method": "echo", "params": {}}))


def answered(client: socket.socket, ident: str) -> bool:
    """Whether ``client`` gets the answer to its call ``ident`` within its timeout."""
    try:
        size = LENGTH_HEADER.unpack(receive_exactly(client, LENGTH_HEADER.size))[0]
        return bool(json.loads(receive_exactly(client, size))["id"] == ident)
    except (OSError, ConnectionError):
        return False


def test_clients_past_the_limit_wait_for_a_descriptor_and_are_served_once_one_is_free(
    tmp_path: Any,
) -> None:
    # A connection needs two descriptors: taken with the last one free, it cannot reach its
    # upstream. It waits for one (and no other is taken meanwhile), as those behind it wait in
    # the backlog: once connections end, every one of them is served, none reset.
    limit = 64

    def few_open_files() -> None:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))

    with ThreadedUpstream() as upstream:  # serves many clients at once, as the plugin does not
        proxy = subprocess.Popen(
            [sys.executable, "-m", "golem_proxy", "proxy", "--observer", "in-process",
             "--route", f"127.0.0.1:0={upstream.address}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
            preexec_fn=few_open_files,
        )  # fmt: skip
        served: list[socket.socket] = []
        waiting: list[socket.socket] = []
        try:
            port = int(wait_for_line(proxy, r"GOLEM_RHINO_PORT=(\d+)").group(1))
            output = Collected(proxy)
            # One at a time until a call goes unanswered: the proxy is at its limit.
            for number in range(limit):
                client = socket.create_connection(("127.0.0.1", port), timeout=1)
                call(client, f"c{number}")
                if not answered(client, f"c{number}"):
                    waiting.append(client)
                    break
                served.append(client)
            assert waiting, "the limit was never reached"
            for number in range(3):  # more behind it
                client = socket.create_connection(("127.0.0.1", port), timeout=10)
                call(client, f"w{number}")
                waiting.append(client)
            for client in served[:4]:  # eight descriptors free
                client.close()
            waiting[0].settimeout(10)
            assert answered(waiting[0], f"c{len(served)}")
            for number, client in enumerate(waiting[1:]):
                client.settimeout(10)
                assert answered(client, f"w{number}")
        finally:
            for client in served + waiting:
                client.close()
            code = interrupt(proxy)
            reap(proxy)
        log, stderr = output.ended()
    assert code == 0, stderr
    assert "Traceback" not in log + stderr, stderr
    assert "reset" not in log, log
    assert "it waited" in log or "cannot take a connection" in stderr, log + stderr
