"""What the tests of the ``golem_mcp_session`` fixture share: the calls of the recorded
session, the inner test pytester runs, and writing it beside a copy of the recording."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest

from .mcp_helpers import ROOT

CALLS = [("list_layers", {}), ("create_layer", {"name": "A"}), ("layer_report", {"name": "B"})]

SESSION_TEST = f"""
import sys
import pytest

sys.path.insert(0, {str(ROOT / "tests" / "mcp_layer")!r})
from mcp_helpers import SERVER_COMMAND, call_tools, environment

@pytest.mark.golem_mcp_session("session.jsonl", command=SERVER_COMMAND, IGNORE)
def test_layers(golem_mcp_session):
    outcomes = call_tools(golem_mcp_session.command, environment(), {CALLS!r})
    assert [failed for failed, _ in outcomes] == [False, False, False]
"""


def write_test(pytester: pytest.Pytester, recording: Optional[Path], ignore: str = "") -> None:
    if recording is not None:
        (pytester.path / "session.jsonl").write_bytes(recording.read_bytes())
    pytester.makepyfile(test_mcp=SESSION_TEST.replace("IGNORE", ignore))
