"""A client of ``golem-proxy mcp --console unix:PATH``, the socket held frames are decided
on (stdin is the MCP client's), for the tests."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

FILTER = "~q ~m ^scene.create_layer$"  # the requests only: the responses match ~m too
DEADLINE = 30.0


def private_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "console"
    directory.mkdir(mode=0o700)
    return directory


class ConsoleClient:
    """A blocking client of the console socket: one command in, its answer lines out."""

    def __init__(self, path: Path) -> None:
        deadline = time.monotonic() + DEADLINE
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.settimeout(DEADLINE)
                self.sock.connect(str(path))
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.file = self.sock.makefile("rb")

    def ask(self, command: str) -> str:
        """Send ``command`` (one whose answer is one line); returns that line."""
        self.sock.sendall(command.encode() + b"\n")
        line = self.file.readline().decode()
        assert line.endswith("\n"), f"console closed after {command!r}"
        return line.rstrip("\n")

    def held(self, number: int) -> dict[str, Any]:
        """Poll ``show N`` until frame ``number`` is held; returns its JSON."""
        deadline = time.monotonic() + DEADLINE
        while True:
            shown = self.ask(f"show {number}")
            if shown.startswith("{"):
                return json.loads(shown)  # type: ignore[no-any-return]
            assert shown == f"no frame #{number} is held"
            assert time.monotonic() < deadline, shown
            time.sleep(0.05)

    def close(self) -> None:
        self.file.close()
        self.sock.close()
