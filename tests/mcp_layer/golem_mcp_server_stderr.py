"""The test MCP server of golem_mcp_server.py writing to its stderr as servers do: with
``DIE_AT_START`` in its environment it dies as it starts, on a module it cannot import (a
traceback on stderr, exit status 1); ``noisy_failure(why, lines)`` logs ``lines`` lines and
then ``why`` to its stderr and fails (an ``isError`` result); ``chatty(lines)`` logs ``lines``
lines and succeeds; ``die_mid_call()`` is killed by SIGKILL as it runs (from outside, as
the wrapper sees it). With ``LINGER`` it lingers 30 s after its stdin closes (a server that
does not exit when its client leaves; it says so on stderr first), with ``IGNORE_TERM`` it
ignores SIGTERM, and with ``PID_FILE`` it writes its pid there as it starts."""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import sys
import termios
import time
from pathlib import Path

# The base server is a script, not a package module: its directory goes on the path first.
sys.path.insert(0, str(Path(__file__).resolve().parent))

if os.environ.get("IGNORE_TERM"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if os.environ.get("PID_FILE"):  # whole once it is there: written aside, then renamed
    Path(os.environ["PID_FILE"] + ".new").write_text(str(os.getpid()))
    os.replace(os.environ["PID_FILE"] + ".new", os.environ["PID_FILE"])
if os.environ.get("DIE_AT_START"):
    import golem_module_not_installed  # noqa: F401  (fails: the server dies as it starts)

import golem_mcp_server as base


def _log(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


@base.server.tool()
def noisy_failure(why: str, lines: int = 0) -> str:
    """Log ``lines`` lines and ``why`` to stderr, then fail."""
    for n in range(lines):
        _log(f"noisy log line {n}")
    _log(f"ERROR noisy_failure: {why}")
    # The log and the answer travel on two pipes: what the server logged first is read first.
    _until_stderr_read()
    raise RuntimeError(why)


def _until_stderr_read(within: float = 10.0) -> None:
    """Return once the reader of our stderr has taken all of it (or after ``within`` s)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            # The bytes a pipe holds unread, asked of its writing end as of its reading end.
            held = struct.unpack("i", fcntl.ioctl(2, termios.FIONREAD, b"\0" * 4))[0]
        except OSError:  # not a pipe: no reader to wait for
            return
        if not held:
            return
        time.sleep(0.01)


@base.server.tool()
def chatty(lines: int) -> str:
    """Log ``lines`` lines to stderr and succeed."""
    for n in range(lines):
        _log(f"chatty log line {n}")
    return "fine"


@base.server.tool()
def die_mid_call() -> str:
    """Be killed by SIGKILL in the middle of the call."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "never"


if __name__ == "__main__":
    base.server.run()
    if os.environ.get("LINGER"):
        _log("stdin ended; lingering")
        time.sleep(30)
