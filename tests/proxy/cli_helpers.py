"""Run the real command line on recordings written to disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from golem_proxy.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m golem_proxy ARGS`` in a subprocess, from the repository root."""
    env = dict(os.environ, COLUMNS="200", PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "golem_proxy", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )


def run_main(capsys: object, *args: str) -> tuple[int, str, str]:
    """The command line in-process (fast), returning (exit code, stdout, stderr)."""
    code = main(list(args))
    captured = capsys.readouterr()  # type: ignore[attr-defined]
    return code, captured.out, captured.err
