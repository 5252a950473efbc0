"""``python -m golem_proxy.testing.scrybe_server``, run as a user runs it: ``--help`` is help
(it was taken for a socket path and served on ``./--help``), and a mistake is one usage line
with exit 2, never a traceback; given a path and a disk, it serves them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from golem_proxy.testing.scrybe_server import short_socket_dir

from .cli import app_process, env_with

COMMAND = [sys.executable, "-m", "golem_proxy.testing.scrybe_server"]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *args], cwd=cwd, env=env_with(), capture_output=True, text=True, timeout=30
    )


def test_help_is_help_and_serves_nothing(tmp_path: Path) -> None:
    for flag in ("--help", "-h"):
        done = run(flag, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("usage: python -m golem_proxy.testing.scrybe_server")
        assert "PATH" in done.stdout and "DISK.json" in done.stdout
        assert list(tmp_path.iterdir()) == []  # no socket named --help


def test_a_mistake_is_one_usage_error_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "taken.sock").write_text("")
    (tmp_path / "list.json").write_text("[1, 2]")
    cases = {
        (): "the following arguments are required: PATH",
        ("a.sock", "missing.json"): "cannot read missing.json",
        ("a.sock", "list.json"): "list.json is not a JSON object of path to content",
        ("taken.sock",): "taken.sock already exists",
        ("x" * 120 + ".sock",): "is too long for a Unix socket",
    }
    for args, said in cases.items():
        done = run(*args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr
        last = done.stderr.splitlines()[-1]
        assert last.startswith("python -m golem_proxy.testing.scrybe_server: error: ")
        assert said in last, (args, last)
    assert not (tmp_path / "a.sock").exists()


def test_a_path_and_a_disk_are_served() -> None:
    folder = short_socket_dir()
    path = os.path.join(folder, "app.sock")
    try:
        with app_process(path, {"/notes.txt": "hello"}):
            with socket.socket(socket.AF_UNIX) as client:
                client.settimeout(10)
                client.connect(path)
                for ident, method in enumerate(("open", "read"), 1):
                    request = {"jsonrpc": "2.0", "id": ident, "method": method}
                    request["params"] = {"path": "/notes.txt"}
                    client.sendall(json.dumps(request).encode() + b"\n")
                replies = b""
                while replies.count(b"\n") < 2:
                    chunk = client.recv(65536)
                    assert chunk, replies
                    replies += chunk
            read = json.loads(replies.splitlines()[1])
            assert read["result"]["content"] == "hello"  # the disk given
        assert not os.path.exists(path)  # removed as it ended (SIGTERM)
    finally:
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
