"""``golem-proxy tui`` as a user runs it: a bad file or filter is one line and exit 2,
before any screen is drawn."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def golem_proxy(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "golem_proxy", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda tmp: str(tmp / "missing.jsonl"), "no such file"),
        (lambda tmp: _write(tmp / "README.md", "# not a recording\n"), "README.md"),
    ],
)
def test_a_file_that_cannot_be_read_is_one_line_and_exit_2(
    tmp_path: Path, make: object, expected: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    result = golem_proxy("tui", path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("golem-proxy: ") and expected in lines[0]
    assert "Traceback" not in result.stderr


def test_a_bad_filter_is_refused_before_the_screen_opens(demo_path: str) -> None:
    result = golem_proxy("tui", demo_path, "--filter", "~nonsense")
    assert result.returncode == 2
    assert result.stderr.startswith("golem-proxy: bad filter: ")
    assert "unknown filter" in result.stderr


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)
