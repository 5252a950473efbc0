"""``golem-proxy proxy --profile jsonrpc-ndjson`` as a user runs it: Unix sockets on both
sides, a 0600 socket file, a stale file replaced, the file removed after Ctrl-C, the
SCRYBE_SOCK hint, and the default route."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from golem_proxy.events import ExchangeCompleted
from golem_proxy.recording.format import read_recording
from golem_proxy.testing import scrybe_client as contract_client
from tests.support.cli_helpers import interrupt

from .cli import env_with, start_cli, wait_for_line


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
