"""A peer's bidirectional controls never reach the terminal: `show`, `stats`, `query` and the
JSON outputs write them as escapes, so no column or value reads other than it is. (`query
--csv` is data for a program, written as it is, control characters included.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_helpers import run_cli
from tests.support.trace_builder import TapSimulator, write_recording

OVERRIDE = "\u202e"
METHOD = f"scene.{OVERRIDE}tcejbo_eteled"


def recording(tmp_path: Path) -> Path:
    tap = TapSimulator()
    tap.open(1)
    tap.request(1, {"id": "a1", "method": METHOD, "params": {"name": f"x{OVERRIDE}y"}})
    tap.tick(0.002)
    error = {"code": -32601, "message": f"Method not found: {METHOD}"}
    tap.respond(1, {"id": "a1", "result": None, "error": error})
    tap.close(1)
    path = tmp_path / "bidi.jsonl"
    path.write_bytes(write_recording(tap.events))
    assert OVERRIDE.encode() in path.read_bytes()  # the recording keeps the bytes as they came
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["show"],
        ["show", "--json"],
        ["stats"],
        ["query", "SELECT method, status, error FROM flows"],
        ["query", "--json", "SELECT method, params FROM flows"],
    ],
)
def test_no_bidirectional_control_reaches_the_terminal(tmp_path: Path, command: list[str]) -> None:
    path = recording(tmp_path)
    done = run_cli(*command, str(path))
    assert done.returncode == 0, done.stderr
    assert OVERRIDE not in done.stdout and OVERRIDE not in done.stderr
    assert "\\u202e" in done.stdout
