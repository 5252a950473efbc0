"""Running golem-proxy and the stand-in app as separate processes, as a user would."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

from golem_proxy.testing.scrybe_session import DISK

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


@contextlib.contextmanager
def app_process(path: str, disk: Optional[dict[str, str]] = None) -> Iterator[str]:
    """The stand-in app in its own process, serving ``disk`` (default: the session's) on
    ``path``."""
    disk_file = path + ".disk.json"
    with open(disk_file, "w") as file:
        json.dump(DISK if disk is None else disk, file)
    process = subprocess.Popen(
        [sys.executable, "-m", "golem_proxy.testing.scrybe_server", path, disk_file], env=env_with()
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
