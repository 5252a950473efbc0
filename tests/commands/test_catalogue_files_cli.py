"""``--catalogue FILE`` of every command that takes it: a FIFO, a device or a file too large
for a catalogue is refused at once in one line, exit 2, never blocking the command or growing
it without bound."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Optional

import pytest

from golem_core.catalogue import MAX_BYTES
from tests.support.cli_helpers import ROOT, cli_env

SAMPLE = str(ROOT / "recordings" / "modelling-session.jsonl")

# Each command line with the catalogue to put in place of CAT. proxy and mcp resolve it while
# parsing their options, before anything listens or starts.
COMMANDS = {
    "check": ("check", SAMPLE, "--catalogue", "CAT"),
    "show": ("show", SAMPLE, "--catalogue", "CAT"),
    "proxy": ("proxy", "--catalogue", "CAT"),
    "mcp": ("mcp", "--catalogue", "CAT", "--", "true"),
}

MEMORY = 512 * 1024 * 1024  # a command refusing its catalogue needs a small part of this


def _bounded_memory() -> Optional[Callable[[], None]]:
    try:
        import resource
    except ImportError:  # not on Windows: the timeout still bounds the run
        return None

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    return limit


def run_with_catalogue(command: str, catalogue: str) -> subprocess.CompletedProcess[str]:
    """The command line with ``catalogue``, run with bounded time and address space (an
    unbounded read of /dev/zero ends in a MemoryError instead of filling the machine)."""
    args = [catalogue if arg == "CAT" else arg for arg in COMMANDS[command]]
    return subprocess.run(
        [sys.executable, "-m", "golem_proxy", *args],
        cwd=ROOT,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=30,  # a blocked read of a FIFO fails the test here
        preexec_fn=_bounded_memory(),
    )


def assert_one_line(done: subprocess.CompletedProcess[str], command: str, why: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"golem-proxy: {command} --catalogue: ")
    assert why in lines[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_fifo_is_refused_at_once(command: str, tmp_path: Path) -> None:
    fifo = tmp_path / "catalogue.json"
    os.mkfifo(fifo)
    done = run_with_catalogue(command, str(fifo))
    assert_one_line(done, command, f"{fifo}: is a FIFO, not a catalogue file")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_device_is_refused_without_reading_it(command: str) -> None:
    done = run_with_catalogue(command, "/dev/zero")
    assert_one_line(done, command, "/dev/zero: is a character device, not a catalogue file")


def test_a_directory_is_refused(tmp_path: Path) -> None:
    done = run_with_catalogue("check", str(tmp_path))
    assert_one_line(done, "check", f"{tmp_path}: is a directory, not a catalogue file")


def test_a_file_over_the_size_of_any_catalogue_is_refused_unread(tmp_path: Path) -> None:
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as file:
        file.truncate(MAX_BYTES + 1)  # sparse: no disk, and nothing of it is read
    done = run_with_catalogue("check", str(huge))
    assert_one_line(done, "check", f"{huge}: too large for a method catalogue (larger than 16 MiB)")


def test_the_shipped_catalogue_is_far_below_the_limit() -> None:
    shipped = ROOT / "golem_proxy" / "catalogues" / "golem-3dmcp@9819b31.json"
    assert shipped.stat().st_size * 50 < MAX_BYTES
    done = run_with_catalogue("check", str(shipped))
    assert done.returncode in (0, 1), done.stderr
