"""``golem-proxy proxy --profile jsonrpc-ndjson`` as a user runs it: Unix sockets on both
sides, a 0600 socket file, a stale file replaced, the file removed after Ctrl-C, the
SCRYBE_SOCK hint, and the default route."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import pytest

from golem_proxy.events import ExchangeCompleted
from golem_proxy.recording import read_recording

from . import contract_client
from .session import DISK

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


def env_with(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{TESTS}", COLUMNS="200")
    env.pop("SCRYBE_SOCK", None)
    env.update(extra)
    return env


def wait_for_socket(path: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


@pytest.fixture
def app_socket(sock_dir: str, tmp_path: Path) -> Iterator[str]:
    """The stand-in app in its own process, on ``<sock_dir>/app.sock``."""
    path = os.path.join(sock_dir, "app.sock")
    disk = tmp_path / "disk.json"
    disk.write_text(json.dumps(DISK))
    process = subprocess.Popen(
        [sys.executable, "-m", "scrybe.server", path, str(disk)], env=env_with()
    )
    try:
        wait_for_socket(path)
        yield path
    finally:
        process.terminate()
        process.wait(10)


def start_cli(*args: str, env: Optional[dict[str, str]] = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "golem_proxy", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env or env_with(),
    )


def wait_for_line(process: subprocess.Popen[str], pattern: str, timeout: float = 20) -> str:
    found: list[str] = []
    lines: list[str] = []

    def scan() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            match = re.search(pattern, line)
            if match:
                found.append(match.group(1))
                return

    reader = threading.Thread(target=scan, daemon=True)
    reader.start()
    reader.join(timeout)
    if not found:
        process.kill()
        raise AssertionError(f"no line matching {pattern!r} in {lines!r}")
    return found[0]


def interrupt(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def make_stale_socket(path: str) -> None:
    """A socket file nobody listens on, as a crashed proxy leaves behind."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(path)
    sock.close()
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_unix_to_unix_with_stale_socket_record_and_ctrl_c(app_socket: str, sock_dir: str) -> None:
    listen = os.path.join(sock_dir, "proxy.sock")
    record = os.path.join(sock_dir, "live.jsonl")
    make_stale_socket(listen)
    process = start_cli(
        "proxy",
        "--profile",
        "jsonrpc-ndjson",
        "--route",
        f"unix:{listen}=unix:{app_socket}",
        "--record",
        record,
    )
    try:
        hint = wait_for_line(process, r"client environment: (SCRYBE_SOCK=\S+)")
        assert hint == f"SCRYBE_SOCK={listen}"
        info = os.lstat(listen)
        assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
        assert contract_client.call(listen, "open", {"path": "/notes/a.md"}).ok
        missing = contract_client.call(listen, "read", {"path": "/notes/zzz.md"})
        assert missing.name == "Remote(RpcError { code: -32001 })"
    finally:
        code = interrupt(process)
    assert code == 0
    assert not os.path.lexists(listen)
    assert os.path.exists(app_socket)  # the upstream's socket is not ours to remove
    recording = read_recording(record)
    assert recording.header.profile == "jsonrpc-ndjson"
    statuses = [
        recording.profile.describe(e.response.message)
        for e in recording.events
        if isinstance(e, ExchangeCompleted)
    ]
    assert statuses == ["ok", "ERR_TAB_NOT_OPEN"]


def test_tcp_listen_to_unix_upstream(app_socket: str) -> None:
    process = start_cli(
        "proxy", "--profile", "jsonrpc-ndjson", "--route", f"127.0.0.1:0=unix:{app_socket}"
    )
    try:
        port = int(wait_for_line(process, r"127\.0\.0\.1:(\d+) →"))
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(contract_client.request_line("state", {}))
            reply = sock.makefile("rb").readline()
        assert b'"result"' in reply and b'"open_paths":[]' in reply
    finally:
        assert interrupt(process) == 0


def test_default_route_uses_the_runtime_dir_and_scrybe_sock(app_socket: str, sock_dir: str) -> None:
    runtime = os.path.join(sock_dir, "run")
    os.mkdir(runtime, 0o700)
    env = env_with(XDG_RUNTIME_DIR=runtime, SCRYBE_SOCK=app_socket)
    process = start_cli("proxy", "--profile", "jsonrpc-ndjson", env=env)
    listen = os.path.join(runtime, "golem-proxy", "scrybe.sock")
    try:
        assert wait_for_line(process, r"(SCRYBE_SOCK=\S+)") == f"SCRYBE_SOCK={listen}"
        assert stat.S_IMODE(os.stat(os.path.dirname(listen)).st_mode) == 0o700
        assert stat.S_IMODE(os.lstat(listen).st_mode) == 0o600
        assert contract_client.call(listen, "list_tabs").result == {"tabs": []}
    finally:
        assert interrupt(process) == 0
    assert not os.path.lexists(listen)


def test_route_to_itself_is_refused(sock_dir: str) -> None:
    runtime = os.path.join(sock_dir, "run")
    os.mkdir(runtime, 0o700)
    # SCRYBE_SOCK already exported from an earlier hint: the proxy would relay to itself.
    loop = os.path.join(runtime, "golem-proxy", "scrybe.sock")
    process = start_cli(
        "proxy",
        "--profile",
        "jsonrpc-ndjson",
        env=env_with(XDG_RUNTIME_DIR=runtime, SCRYBE_SOCK=loop),
    )
    _, err = process.communicate(timeout=20)
    assert process.returncode == 2 and "to itself" in err


def test_live_socket_and_other_files_are_not_replaced(app_socket: str, sock_dir: str) -> None:
    process = start_cli(
        "proxy", "--profile", "jsonrpc-ndjson", "--route", f"unix:{app_socket}=unix:{app_socket}2"
    )
    _, err = process.communicate(timeout=20)
    assert process.returncode == 2 and "in use" in err
    assert contract_client.call(app_socket, "state").ok  # the app's socket is untouched
    plain = os.path.join(sock_dir, "plain")
    Path(plain).write_text("keep me")
    process = start_cli(
        "proxy", "--profile", "jsonrpc-ndjson", "--route", f"unix:{plain}=unix:{app_socket}"
    )
    _, err = process.communicate(timeout=20)
    assert process.returncode == 2 and "not a socket" in err
    assert Path(plain).read_text() == "keep me"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory away")
def test_directory_owned_by_someone_else_is_refused(app_socket: str, sock_dir: str) -> None:
    foreign = os.path.join(sock_dir, "foreign")
    os.mkdir(foreign)
    os.chown(foreign, 4242, -1)
    process = start_cli(
        "proxy",
        "--profile",
        "jsonrpc-ndjson",
        "--route",
        f"unix:{foreign}/p.sock=unix:{app_socket}",
    )
    _, err = process.communicate(timeout=20)
    assert process.returncode == 2 and "not owned by you" in err
    assert not os.path.lexists(os.path.join(foreign, "p.sock"))


def test_existing_recording_is_a_clean_error(app_socket: str, sock_dir: str) -> None:
    listen = os.path.join(sock_dir, "proxy.sock")
    record = Path(sock_dir, "old.jsonl")
    record.write_text("keep")
    route = f"unix:{listen}=unix:{app_socket}"
    process = start_cli(
        "proxy", "--profile", "jsonrpc-ndjson", "--route", route, "--record", str(record)
    )
    _, err = process.communicate(timeout=20)
    assert process.returncode == 2 and "exists" in err and "Traceback" not in err
    assert record.read_text() == "keep"
    assert not os.path.lexists(listen)  # the listener opened first is closed and removed
