"""Reading our captures back with tshark (the Debian package; `.ci/run` installs it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")


def tshark(*args: str) -> str:
    """tshark's stdout; fails the test on a non-zero exit."""
    assert TSHARK is not None
    done = subprocess.run(
        [TSHARK, *args], capture_output=True, text=True, encoding="utf-8", timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def stream_count(capture: Path) -> int:
    out = tshark("-r", str(capture), "-T", "fields", "-e", "tcp.stream")
    return len({line for line in out.split() if line})


def follow(capture: Path) -> list[tuple[bytes, bytes]]:
    """Every TCP conversation's bytes as tshark's reassembly gives them, in stream order:
    (what the first sender sent, what the other side sent)."""
    count = stream_count(capture)
    args = ["-r", str(capture), "-q"]
    for index in range(count):
        args += ["-z", f"follow,tcp,raw,{index}"]
    out = tshark(*args)
    found: dict[int, tuple[bytes, bytes]] = {}
    for block in out.split("Follow: tcp,raw")[1:]:
        stream = int(block.split("tcp.stream eq ", 1)[1].split()[0])
        sides = [bytearray(), bytearray()]
        body = block.split("Node 1:", 1)[1].split("\n", 1)[1]
        for line in body.split("\n"):
            if line.startswith("="):
                break
            if line.strip():
                sides[line.startswith("\t")] += bytes.fromhex(line.strip())
        found[stream] = (bytes(sides[0]), bytes(sides[1]))
    return [found[index] for index in sorted(found)]
