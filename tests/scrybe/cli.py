"""Running golem-proxy and the stand-in app as separate processes, as a user would."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

from golem_proxy.testing.scrybe_session import DISK
from tests.support import cli_helpers

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
    """The CLI in the background, in `env_with` unless ``env``."""
    return cli_helpers.start_cli(*args, env=env or env_with())


def wait_for_line(process: subprocess.Popen[str], pattern: str, timeout: float = 20) -> str:
    """The first group of the first stdout line matching ``pattern``."""
    return cli_helpers.wait_for_line(process, pattern, timeout).group(1)
