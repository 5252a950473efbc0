"""The real CLI on a pseudo-terminal that is its controlling terminal, as a user's shell runs
it: its own session and process group in the foreground, a fixed size, keys typed into it and
what it drew read back (escape codes removed) by a thread that drains it, so the app never
blocks on a full terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from bench.processes import children_of
from tests.support.cli_helpers import ROOT

_ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=$]*[A-Za-z~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[=>]")


def _take_terminal() -> None:
    # In the new session (start_new_session): the terminal on stdin becomes the controlling
    # one, with this process group in the foreground, as a login shell's job would have it.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """``python -m golem_proxy ARGS`` on a ``columns`` x ``rows`` pseudo-terminal."""

    def __init__(self, *args: str, cwd: Path, columns: int = 120, rows: int = 30) -> None:
        controller, terminal = pty.openpty()
        fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        env.update(PYTHONPATH=str(ROOT), TERM="xterm-256color")
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "golem_proxy", *args],
                cwd=cwd,
                env=env,
                stdin=terminal,
                stdout=terminal,
                stderr=terminal,
                start_new_session=True,
                preexec_fn=_take_terminal,
            )
        finally:
            os.close(terminal)
        self.controller = controller
        self._shown = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.controller, 65536)
            except OSError:  # EIO: every process on the terminal is gone
                return
            if not data:
                return
            with self._lock:
                self._shown += data

    def text(self) -> str:
        """Everything drawn so far, escape codes removed (one string, screens run together)."""
        with self._lock:
            shown = bytes(self._shown)
        return _ESCAPES.sub(b"", shown).decode("utf-8", "replace")

    def wait_for(self, pattern: str, timeout: float = 30) -> re.Match[str]:
        """The first match of ``pattern`` in what was drawn; AssertionError (with the screen's
        last characters) if none within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            match = re.search(pattern, self.text())
            if match is not None:
                return match
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise AssertionError(f"{pattern!r} never shown; the end: {self.text()[-2000:]!r}")
            time.sleep(0.05)

    def type(self, keys: str) -> None:
        os.write(self.controller, keys.encode())

    def exit_code(self, timeout: float = 60) -> int:
        """The exit code once the process has exited (killed after ``timeout`` seconds)."""
        try:
            return self.process.wait(timeout)
        finally:
            self.close()

    def close(self) -> None:
        """Kill the process if it still runs; stop reading the terminal."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._reader.join(5)
        if self.controller >= 0:
            os.close(self.controller)
            self.controller = -1


def gone(pid: int, timeout: float = 30) -> bool:
    """Whether process ``pid`` has ended (exited and been reaped) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def wait_until(condition: Callable[[], bool], timeout: float = 30) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` seconds pass; whether it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def pid_of_child(process: subprocess.Popen[bytes], timeout: float = 30) -> Optional[int]:
    """The first process that ``process`` started, once it has started one (None: none in
    ``timeout`` seconds)."""
    wait_until(lambda: bool(children_of(process.pid)), timeout)
    found = children_of(process.pid)
    return found[0] if found else None
