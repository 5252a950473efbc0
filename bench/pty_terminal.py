"""A pseudo-terminal of a fixed size for a benchmarked process that draws a TUI: it is the
process's controlling terminal (its own session, in the foreground, as a shell's job), and a
thread drains what it draws, so the app never blocks on a full terminal; keys can be typed."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import termios
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
"""The project's root (this module is imported as ``pty_terminal`` by the scripts in bench/,
and as ``bench.pty_terminal`` by those that put the root on the path)."""

COLUMNS, ROWS = 120, 40
"""The terminal's fixed size: every TUI row of a run draws the same screen."""


def _take_terminal() -> None:
    # Run in the new session (start_new_session): stdin's terminal becomes the controlling
    # one, with this process group in the foreground.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class DrainedTerminal:
    """Pass `popen_options()` to the process that gets the terminal, then call `started()`."""

    def __init__(self, columns: int = COLUMNS, rows: int = ROWS) -> None:
        self.controller, self._terminal = pty.openpty()
        size = struct.pack("HHHH", rows, columns, 0, 0)
        fcntl.ioctl(self._terminal, termios.TIOCSWINSZ, size)
        self.drawn = 0
        """Bytes the process wrote to the terminal so far."""
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def popen_options(self) -> dict[str, Any]:
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
        env.update(PYTHONPATH=str(ROOT), TERM="xterm-256color")
        return {
            "stdin": self._terminal,
            "stdout": self._terminal,
            "stderr": self._terminal,
            "start_new_session": True,
            "preexec_fn": _take_terminal,
            "env": env,
        }

    def started(self) -> None:
        """The process holds the terminal now: drop this side's copy (the drain then ends when
        the process is gone)."""
        if self._terminal >= 0:
            os.close(self._terminal)
            self._terminal = -1

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.controller, 1 << 16)
            except OSError:  # EIO: nothing holds the terminal any more
                return
            if not data:
                return
            self.drawn += len(data)

    def type(self, keys: str) -> None:
        os.write(self.controller, keys.encode())

    def close(self) -> None:
        self.started()
        self._reader.join(5)
        if self.controller >= 0:
            os.close(self.controller)
            self.controller = -1
