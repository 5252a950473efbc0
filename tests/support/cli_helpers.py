"""Run the real command line as a user does: to completion, in the background, or on a terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import stat
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path
from typing import IO, Any, Optional

from golem_proxy.cli import main

ROOT = Path(__file__).resolve().parents[2]


def editor_script(tmp_path: Path, body: str) -> str:
    """An executable shell script ``body`` to stand in as $EDITOR (the file to edit is $1);
    returns its path."""
    path = tmp_path / "editor.sh"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def cli_env() -> dict[str, str]:
    """The environment the CLI runs in: this checkout's packages first, 200 columns."""
    return dict(os.environ, COLUMNS="200", PYTHONPATH=str(ROOT))


def run_cli(
    *args: str, cwd: Path = ROOT, env: Optional[dict[str, str]] = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``python -m golem_proxy ARGS`` in a subprocess, run to completion (from the repository
    root unless ``cwd``, in `cli_env` unless ``env``)."""
    return subprocess.run(
        [sys.executable, "-m", "golem_proxy", *args],
        cwd=cwd,
        env=cli_env() if env is None else env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
    )


def start_cli(
    *args: str, cwd: Path = ROOT, env: Optional[dict[str, str]] = None
) -> subprocess.Popen[str]:
    """``python -m golem_proxy ARGS`` started in the background, stdout and stderr piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "golem_proxy", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env() if env is None else env,
    )


def wait_for_line(
    process: subprocess.Popen[str], pattern: str, timeout: float = 20
) -> re.Match[str]:
    """The match of the first stdout line matching ``pattern``; kills the process and raises
    AssertionError (with the lines read) when none comes within ``timeout`` seconds."""
    found: list[re.Match[str]] = []
    lines: list[str] = []

    def scan() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            match = re.search(pattern, line)
            if match:
                found.append(match)
                return

    reader = threading.Thread(target=scan, daemon=True)
    reader.start()
    reader.join(timeout)
    if not found:
        process.kill()
        raise AssertionError(f"no line matching {pattern!r} in {lines!r}")
    return found[0]


def interrupt(process: subprocess.Popen[str]) -> int:
    """Ctrl-C, and the exit code within 20 seconds (killed, whatever happens)."""
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(20)
    finally:
        reap(process)


def reap(process: subprocess.Popen[Any]) -> None:
    """Kill ``process`` if it still runs, and wait for it: nothing outlives its test."""
    if process.poll() is None:
        process.kill()
        process.wait()


def run_main(capsys: object, *args: str) -> tuple[int, str, str]:
    """The command line in-process (fast), returning (exit code, stdout, stderr)."""
    code = main(list(args))
    captured = capsys.readouterr()  # type: ignore[attr-defined]
    return code, captured.out, captured.err


_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run_cli_tty(
    *args: str,
    columns: int,
    timeout: float = 60,
    stdout: Optional[IO[bytes]] = None,
    colour: bool = False,
) -> tuple[int, str]:
    """``python -m golem_proxy ARGS`` with stdout and stderr on a pseudo-terminal
    ``columns`` wide, as a user at a terminal of that width runs it (``stdout``: a file for
    stdout instead, as in ``golem-proxy … > out``; ``colour``: a colour terminal). Returns the
    exit code and what the terminal showed, with plain newlines and, unless ``colour``,
    without colour codes."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    hidden = ("COLUMNS", "LINES", "NO_COLOR")
    env = {k: v for k, v in os.environ.items() if k not in hidden}
    env.update(PYTHONPATH=str(ROOT), TERM="xterm-256color" if colour else "xterm")
    if not colour:
        env.update(NO_COLOR="1")
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "golem_proxy", *args],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=terminal if stdout is None else stdout,
            stderr=terminal,
        )
    finally:
        os.close(terminal)
    shown = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.5)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                data = os.read(controller, 65536)
            except OSError:  # EIO: the terminal's last writer is gone
                break
            if not data:
                break
            shown += data
        code = process.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
            process.wait()
    text = shown.decode("utf-8", "replace").replace("\r\n", "\n")
    return code, text if colour else _ESCAPES.sub("", text)
