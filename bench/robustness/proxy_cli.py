"""Running ``golem-proxy proxy`` as a user does, in its own process, for robustness tests."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class ProxyCli:
    """A ``golem-proxy proxy`` child process; ``port`` is where it listens (route main)."""

    process: subprocess.Popen[str]
    port: int = 0
    lines: list[str] = field(default_factory=list)
    stderr: str = ""

    def stop(self, timeout: float = 20) -> str:
        """Ctrl-C, wait, and return everything it printed."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            rest, self.stderr = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            rest, self.stderr = self.process.communicate()
        return "".join(self.lines) + (rest or "")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()


def start_proxy_cli(*args: str, timeout: float = 20) -> ProxyCli:
    """Start the proxy command and wait until it prints its listening address.
    Raises AssertionError (with what it printed) when it does not start."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="240")
    process = subprocess.Popen(
        [sys.executable, "-m", "golem_proxy", "proxy", *args],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    cli = ProxyCli(process)
    found = threading.Event()

    def scan() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            cli.lines.append(line)
            match = re.search(r": 127\.0\.0\.1:(\d+) →", line)
            if match:
                cli.port = int(match.group(1))
            if "Ctrl-C to stop" in line:
                found.set()
                return

    reader = threading.Thread(target=scan, daemon=True)
    reader.start()
    if not found.wait(timeout):
        cli.kill()
        raise AssertionError(f"proxy did not start: {''.join(cli.lines)}")
    reader.join()
    return cli
