"""``golem-proxy mcp``'s live log names the call an answer too large to observe answered (the
tap paired the gap with its request, as the recording and ``show`` say), and its help does not
describe ``--tui``, which it refuses."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.cli_helpers import run_cli

from .mcp_helpers import SERVER_COMMAND, call_tools, environment

NOWHERE = ["--upstream", "127.0.0.1:9", "--gh-upstream", "127.0.0.1:9"]


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_the_log_of_an_answer_too_large_to_observe_names_its_call(
    tmp_path: Path, observer: str
) -> None:
    log = tmp_path / "live.log"
    command = [
        sys.executable, "-m", "golem_proxy", "mcp", *NOWHERE, "--observer", observer,
        "--observe-frame-limit", "0.05", "--log", str(log), "--", *SERVER_COMMAND,
    ]  # fmt: skip
    calls = [("big_text", {"size": 200_000}), ("big_text", {"size": 10})]
    outcomes = call_tools(command, environment(), calls)
    assert [failed for failed, _ in outcomes] == [False, False]
    lines = log.read_text().splitlines()
    gaps = [line for line in lines if "frame-too-large" in line]
    assert len(gaps) == 1, lines
    assert gaps[0].endswith("the answer to tools/call big_text"), gaps


def test_mcp_help_does_not_describe_tui_which_it_refuses() -> None:
    shown = " ".join(run_cli("mcp", "--help").stdout.split())
    restarts = shown[shown.index("--observer-restarts N with") :][:500]
    assert "--tui" not in restarts, restarts
    assert "what crossed meanwhile is a gap in the recording (default:" in restarts
    refused = run_cli("mcp", "--tui", "--", "true")
    assert refused.returncode != 0
    proxy = " ".join(run_cli("proxy", "--help").stdout.split())
    assert "~47 with --tui" in proxy  # where there is a --tui, its help still says it
