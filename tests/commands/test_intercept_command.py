"""``golem-proxy intercept unix:PATH`` as a user runs it: the real command with its stdin a
pipe kept open (a terminal nobody types into), against a console socket that a run closes."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from golem_proxy.testing.scrybe_server import short_socket_dir
from tests.support.cli_helpers import ROOT, cli_env


def start_intercept(path: str) -> subprocess.Popen[str]:
    """``golem-proxy intercept unix:PATH`` in the background, its stdin, stdout and stderr
    pipes."""
    return subprocess.Popen(
        [sys.executable, "-m", "golem_proxy", "intercept", f"unix:{path}"],
        cwd=ROOT,
        env=cli_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@contextlib.contextmanager
def console(path: str, serve: Callable[[socket.socket], None]) -> Iterator[threading.Thread]:
    """A console socket at ``path`` whose one connection ``serve`` handles, in a thread."""
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen()

        def accept_one() -> None:
            peer, _ = server.accept()
            with peer:
                serve(peer)

        thread = threading.Thread(target=accept_one, daemon=True)
        thread.start()
        yield thread
        thread.join(10)


@pytest.fixture
def socket_dir() -> Iterator[str]:
    directory = short_socket_dir()  # tmp_path can exceed a socket path's 108 bytes
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_the_run_closing_the_console_ends_the_client_cleanly(socket_dir: str) -> None:
    """The thread waiting on stdin used to hold sys.stdin's lock when the interpreter closed
    it at exit: `Fatal Python error: _enter_buffered_busy`, exit 134, and no word of why."""
    path = f"{socket_dir}/c.sock"

    def serve_one_line_then_close(peer: socket.socket) -> None:
        peer.makefile("rb").readline()
        peer.sendall(b"intercept filter: ~q; 0 held\n")

    with console(path, serve_one_line_then_close):
        process = start_intercept(path)
        assert process.stdin is not None
        try:
            process.stdin.write("list\n")
            process.stdin.flush()
            code = process.wait(timeout=30)  # stdin stays open: only the socket ends it
            out, err = process.communicate()
        finally:
            process.kill()
            process.stdin.close()
    assert code == 0, err
    assert out == "intercept filter: ~q; 0 held\n"
    assert err.splitlines() == [
        f"golem-proxy intercept: connected to unix:{path}: type a command and Enter "
        "(? lists them), Ctrl-D to leave",
        "golem-proxy intercept: the run closed the console",
    ]


def test_stdin_ending_first_ends_the_client_without_a_closing_line(socket_dir: str) -> None:
    path = f"{socket_dir}/c.sock"

    def serve_until_eof(peer: socket.socket) -> None:
        while peer.recv(4096):
            pass

    with console(path, serve_until_eof):
        process = start_intercept(path)
        out, err = process.communicate("", timeout=30)
    assert process.returncode == 0, err
    assert out == ""
    assert err.splitlines() == [
        f"golem-proxy intercept: connected to unix:{path}: type a command and Enter "
        "(? lists them), Ctrl-D to leave"
    ]
