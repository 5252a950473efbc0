"""Run the headless plugin (``python -m rhino_plugin --headless``) as a child process and wait
for its ready line. Used by the demo, the sample-recording script, benchmarks and tests."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Optional

from ..net.addresses import Address

__all__ = ["PluginProcess", "PluginStartError"]

_READY = re.compile(r"main=(?P<main>\S+):(?P<main_port>\d+) gh=(?P<gh>\S+):(?P<gh_port>\d+)")


class PluginStartError(RuntimeError):
    """The plugin process exited or stayed silent instead of reporting ready."""


@dataclass
class PluginProcess:
    """A headless plugin child process. Use as a context manager."""

    port: int = 0
    gh_port: int = 0
    seed: int = 0
    extra_args: tuple[str, ...] = ()
    behaviour: Optional[str] = None
    """``--behaviour`` (None: the plugin's default, golem-3dmcp@9819b31)."""
    host: str = "127.0.0.1"
    startup_timeout: float = 20.0

    def __post_init__(self) -> None:
        self.process: Optional[subprocess.Popen[str]] = None
        self.main = Address()
        self.gh = Address()
        self.ready_line = ""

    def start(self) -> PluginProcess:
        """Start the plugin and wait for its ready line. Raises PluginStartError."""
        command = [
            sys.executable,
            "-m",
            "rhino_plugin",
            "--headless",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--gh-port",
            str(self.gh_port),
            "--seed",
            str(self.seed),
            *(("--behaviour", self.behaviour) if self.behaviour else ()),
            *self.extra_args,
        ]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self._read_ready_line()
        match = _READY.search(line)
        if match is None:
            # Its last words first (a port in use), read once it is gone: its pipes close then.
            self._end_process()
            stderr = self.process.stderr.read() if self.process.stderr else ""
            self.stop()
            raise PluginStartError(f"headless plugin did not start: {line or stderr}".strip())
        self.ready_line = line.strip()
        self.main = Address(match["main"], int(match["main_port"]))
        self.gh = Address(match["gh"], int(match["gh_port"]))
        return self

    def _read_ready_line(self) -> str:
        assert self.process is not None and self.process.stdout is not None
        found: list[str] = []
        reader = threading.Thread(
            target=lambda: found.append(self.process.stdout.readline()),  # type: ignore[union-attr]
            daemon=True,
        )
        reader.start()
        reader.join(self.startup_timeout)
        return found[0] if found else ""

    def stop(self, timeout: float = 10.0) -> Optional[int]:
        """Ask the plugin to exit (SIGTERM, then SIGKILL); return its exit code."""
        process = self.process
        if process is None:
            return None
        self._end_process(timeout)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
        return process.returncode

    def _end_process(self, timeout: float = 10.0) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)

    def __enter__(self) -> PluginProcess:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
