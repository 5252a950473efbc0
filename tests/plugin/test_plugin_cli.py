"""``python -m rhino_plugin --headless`` as a subprocess: ready line, shutdown, signals."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from plugin_client import Client

REPO_ROOT = Path(__file__).resolve().parents[2]
READY = re.compile(
    r"^rhino_plugin headless ready: main=([\d.]+):(\d+) gh=([\d.]+):(\d+) seed=(\d+)"
    r" behaviour=(\S+)$"
)


def start(*extra: str) -> tuple[subprocess.Popen, re.Match[str]]:  # type: ignore[type-arg]
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rhino_plugin",
            "--headless",
            "--port",
            "0",
            "--gh-port",
            "0",
            "--seed",
            "5",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=str(REPO_ROOT),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    match = READY.match(line)
    if match is None:
        proc.kill()
        proc.communicate(timeout=10)
    assert match, f"unexpected ready line {line!r}"
    return proc, match


def finish(proc: subprocess.Popen) -> None:  # type: ignore[type-arg]
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=10)


@pytest.fixture
def headless() -> Iterator[tuple[subprocess.Popen, tuple[str, int], tuple[str, int]]]:  # type: ignore[type-arg]
    proc, match = start()
    try:
        assert match[6] == "golem-3dmcp@9819b31"
        yield proc, (match[1], int(match[2])), (match[3], int(match[4]))
    finally:
        finish(proc)


def test_an_unknown_behaviour_is_refused_naming_the_known_one() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "rhino_plugin", "--headless", "--behaviour", "extended"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert "invalid choice: 'extended'" in last and "golem-3dmcp@9819b31" in last


def test_shutdown_method_exits_zero(headless) -> None:  # type: ignore[no-untyped-def]
    proc, main, _gh = headless
    client = Client(main)
    try:
        assert client.call("geometry.create_point", location=[1, 2, 3])["type"] == "point"
        assert client.call("shutdown") == {"shutdown": "initiated"}
    finally:
        client.close()
    assert proc.wait(timeout=10) == 0


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_exits_cleanly(headless, signum: int) -> None:  # type: ignore[no-untyped-def]
    proc, _main, gh = headless
    client = Client(gh)
    try:
        assert client.call("gh.ping") == {"alive": True, "server": "gh"}
    finally:
        client.close()
    proc.send_signal(signum)
    assert proc.wait(timeout=10) == 0
    assert "Traceback" not in proc.communicate(timeout=10)[1]


def test_a_public_address_needs_listen_public() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "rhino_plugin", "--headless", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--listen-public" in lines[0] and "0.0.0.0" in lines[0]
