"""A recording given to ``--overwrite`` is replaced only by a session that started: when the
observing process dies before it is ready, ``proxy`` and ``mcp`` fail to start saying why, and
the old file is left whole (no temporary file beside it); ``--record-dir`` leaves no file at
all. A session that starts does replace it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from golem_proxy.live.observer_launch import TEST_MODULE
from golem_proxy.recording.reader import parse_header
from tests.live.fake_observing import EARLY_EXIT, MODE
from tests.support.cli_helpers import cli_env, interrupt, run_cli, start_cli, wait_for_line

OLD = b'{"format":"golem-proxy-recording", "a good recording": "the only copy"}\n'
FAILED = (
    f"the observing process did not start (the observing process exited with status {EARLY_EXIT})"
)


def _dying_observer_env() -> dict[str, str]:
    """The CLI's environment with an observing process that writes the recording's header,
    then exits instead of saying it is ready (tests/live/fake_observing.py)."""
    return dict(cli_env(), **{TEST_MODULE: "tests.live.fake_observing", MODE: "exit-before-ready"})


@pytest.mark.parametrize("command", ["proxy", "mcp"])
def test_an_observing_process_dying_at_start_leaves_the_overwritten_recording_whole(
    tmp_path: Path, command: str
) -> None:
    target = tmp_path / "good.jsonl"
    target.write_bytes(OLD)
    args = ["--record", str(target), "--overwrite"]
    if command == "proxy":
        args = ["proxy", "--route", "127.0.0.1:0=127.0.0.1:9", *args]
    else:
        args = ["mcp", *args, "--", sys.executable, "-c", "pass"]
    done = run_cli(*args, env=_dying_observer_env())
    assert done.returncode != 0
    assert FAILED in done.stderr
    assert target.read_bytes() == OLD
    assert sorted(os.listdir(tmp_path)) == ["good.jsonl"], "a temporary file was left beside it"


def test_a_failed_start_leaves_no_file_in_the_record_dir(tmp_path: Path) -> None:
    done = run_cli(
        "mcp", "--record-dir", str(tmp_path), "--", sys.executable, "-c", "pass",
        env=_dying_observer_env(),
    )  # fmt: skip
    assert FAILED in done.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("observer", ["child-process", "in-process"])
def test_a_session_that_starts_replaces_the_recording(tmp_path: Path, observer: str) -> None:
    target = tmp_path / "good.jsonl"
    target.write_bytes(OLD)
    proxy = start_cli(
        "proxy", "--route", "127.0.0.1:0=127.0.0.1:9", "--record", str(target), "--overwrite",
        "--observer", observer,
    )  # fmt: skip
    wait_for_line(proxy, "Ctrl-C to stop")
    # Started: the file at the path is the new recording already, while the session runs.
    with open(target, "rb") as stream:
        header, _ = parse_header(stream.readline())
    assert header.profile == "golem"
    assert interrupt(proxy) == 0
    assert target.read_bytes().startswith(b'{"format":"golem-proxy-recording","version":')
    assert b'"kind":"session-end"' in target.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["good.jsonl"]
