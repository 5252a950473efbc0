"""bench/zero_copy.py at a small size: both ways move every byte of every answer to the
client and to the observer's pipe, and each is timed on the forwarding thread."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.zero_copy import WAYS, main


@pytest.mark.skipif(not hasattr(os, "splice"), reason="splice is Linux's, Python 3.10 or later")
def test_both_ways_move_every_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    figures = tmp_path / "figures.json"
    assert main(["--answers", "2", "--rounds", "1", "--json", str(figures)]) == 0
    found = json.loads(figures.read_text())
    assert set(found) == set(WAYS)
    for (run,) in found.values():
        assert run["exact"] == 1.0 and run["cpu"] > 0 and run["wall"] > 0
    out = capsys.readouterr().out
    assert "splice+tee" in out and "userspace" in out
