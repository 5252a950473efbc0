"""The live log fits the terminal's width, folding between fields, never inside a number and
its unit; piped it stays one line per event (issue 22 point 6)."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from rich.console import Console

from golem_core.profiles import GOLEM
from golem_proxy.live.log import EventLog, Verbosity
from golem_proxy.testing.client import GolemClient, RhinoCommandError
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import ROOT
from tests.support.trace_builder import golem_session

NUMBER_CUT_FROM_ITS_UNIT = re.compile(r"\d\n\s*(?:µs|ms|s|B|KiB|MiB)\b")


class TerminalBuffer(io.StringIO):
    """A buffer that says it is a terminal, as the proxy's stdout on one does."""

    def isatty(self) -> bool:
        return True


def shown(width: int, *, terminal: bool) -> str:
    buffer = TerminalBuffer() if terminal else io.StringIO()
    console = Console(file=buffer, width=width, color_system=None)
    log = EventLog(console, GOLEM, Verbosity.VERBOSE, started_wall=1_700_000_000.0)
    for event in golem_session().events:
        log.handle(event)
    return buffer.getvalue()


def plain(shown: bytearray) -> bytes:
    """What a terminal showed, without its colour and cursor codes."""
    return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", bytes(shown))


def words(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize("width", [60, 80, 100])
def test_every_line_fits_the_terminal(width: int) -> None:
    text = shown(width, terminal=True)
    assert all(len(line) <= width for line in text.splitlines()), text
    assert NUMBER_CUT_FROM_ITS_UNIT.search(text) is None, text


@pytest.mark.parametrize("width", [60, 80])
def test_folding_loses_nothing(width: int) -> None:
    # The same words in the same order as on a wide terminal (where nothing folds).
    assert words(shown(width, terminal=True)) == words(shown(400, terminal=True))


def test_a_continuation_is_indented_under_its_event() -> None:
    lines = shown(80, terminal=True).splitlines()
    folded = [number for number, line in enumerate(lines) if line.startswith("    ")]
    assert folded  # the error messages do not fit in 80 columns
    assert all(
        re.match(r"\d\d:\d\d:\d\d\.\d{3} ", lines[number - 1])
        or lines[number - 1].startswith("    ")
        for number in folded
    )


def test_piped_the_log_is_one_line_per_event_whatever_the_width(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")  # colours asked for: still a file, not a terminal
    narrow, wide = shown(60, terminal=False), shown(400, terminal=False)
    assert narrow == wide
    assert all(re.match(r"\d\d:\d\d:\d\d\.\d{3} ", line) for line in narrow.splitlines())


def test_the_proxy_on_an_80_column_terminal(tmp_path: Path) -> None:
    """The real proxy, its stdout a pseudo-terminal 80 columns wide, a client making calls
    that succeed and fail: every line the terminal gets fits, no number loses its unit."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR")}
    env.update(PYTHONPATH=str(ROOT), NO_COLOR="1", TERM="xterm")
    seen = bytearray()

    def read(until: bytes = b"") -> None:
        """Read the terminal until ``until`` shows (or, without it, until the proxy's end)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (until and until in plain(seen)):
            if select.select([controller], [], [], 0.5)[0]:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # EIO: the proxy is gone
                    chunk = b""
                if not chunk:
                    break
                seen.extend(chunk)
        assert until in plain(seen), bytes(seen[-2000:])

    with PluginProcess(seed=5) as plugin:
        command = [sys.executable, "-m", "golem_proxy", "proxy"]
        process = subprocess.Popen(
            [*command, "--route", f"main@127.0.0.1:0={plugin.main}"],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=terminal,
            stderr=terminal,
            env=env,
        )
        os.close(terminal)
        try:
            read(b"Ctrl-C to stop")
            found = re.search(rb"main: 127\.0\.0\.1:(\d+)", plain(seen))
            assert found is not None
            port = int(found.group(1))
            with GolemClient("127.0.0.1", port, timeout=20) as client:
                client.send_command("ping", timeout=20)
                with pytest.raises(RhinoCommandError):
                    client.send_command("scene.get_object_info", {"guid": "no-such"}, timeout=20)
                with pytest.raises(RhinoCommandError):
                    client.send_command("no.such_method_with_a_long_name", timeout=20)
            read(b"closed: ")
            process.send_signal(signal.SIGINT)
            assert process.wait(30) == 0
            read()  # the rest, up to the end of the output
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(30)
            os.close(controller)
    text = plain(seen).decode("utf-8", "replace")
    lines = text.replace("\r\n", "\n").splitlines()
    assert all(len(line) <= 80 for line in lines), text
    assert NUMBER_CUT_FROM_ITS_UNIT.search("\n".join(lines)) is None, text
    assert "no.such_method_with_a_long_name" in text
