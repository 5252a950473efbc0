"""What the ``query`` tests share: copies of the shipped sample recordings and the CLI's rows."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from golem_proxy.recording.samples import samples
from tests.support.cli_helpers import run_cli

SAMPLES = list(samples().values())  # the shipped samples, not a demo's recordings
ALL_ROWS = "SELECT * FROM flows ORDER BY trace, n"


def fleet(tmp_path: Path, copies: int) -> list[str]:
    """``copies`` copies of every sample recording, each under its own name; returns the paths."""
    paths = []
    for copy in range(copies):
        for sample in SAMPLES:
            path = tmp_path / f"{copy:02d}-{sample.name}"
            shutil.copyfile(sample, path)
            paths.append(str(path))
    return paths


def query_lines(*args: str) -> list[str]:
    """The lines ``query ARGS --json`` prints; asserts that it exits 0."""
    done = run_cli("query", *args, "--json")
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def trace_of(path: str | Path) -> str:
    """The ``trace`` column of a recording, as docs/interop.md defines it: the file's absolute
    path, ``#``, and the first 16 hex digits of the SHA-256 of its header line."""
    with open(path, "rb") as stream:
        header = stream.readline().rstrip(b"\r\n")
    return f"{os.path.realpath(path)}#{hashlib.sha256(header).hexdigest()[:16]}"
