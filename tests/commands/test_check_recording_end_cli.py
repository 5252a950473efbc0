"""`check` on a recording that is not the whole session: cut short by a proxy killed with
``kill -9``, still being written, with lines lost from its middle, or ending with a request
still waiting for its answer. None is a complete pass: each is said among what was not
inspected, and `check` exits 3 unless ``--allow-incomplete``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from golem_proxy.testing.client import GolemClient
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.support.plugin_fixture import plugin_fixture

from .test_log_cli import ProxyProcess
from .test_unclosed_recording import wait_for_lines, wait_until_written

plugin = plugin_fixture(seed=3)


def _check(trace: Path, *args: str) -> tuple[int, dict[str, Any]]:
    done = run_cli("check", str(trace), "--json", *args)
    return done.returncode, json.loads(done.stdout)


def _record(plugin: PluginProcess, tmp_path: Path, trace: Path, *, kill: bool) -> None:
    """Four pings through a recording proxy, then its end: killed with the connection open,
    or stopped in order (Ctrl-C) after the client closed."""
    proxy = ProxyProcess(tmp_path, plugin.main, "--record", str(trace))
    try:
        with GolemClient("127.0.0.1", proxy.port, timeout=20) as client:
            for _ in range(3):
                client.send_command("ping")
            wait_for_lines(trace, "exchange", 4)  # the connect's ping and three more
            if kill:
                # Read while the proxy records: the rest of the session is not in it yet.
                code, report = _check(trace)
                assert code == 3, report
                assert report["not_inspected"]["unfinished"]["being_written"] is True
                proxy.process.kill()
                proxy.process.wait(30)
        if not kill:
            assert proxy.stop() == 0
    finally:
        proxy.kill()
    wait_until_written(trace)


def test_a_recording_its_proxy_was_killed_writing_is_not_a_complete_pass(
    plugin: PluginProcess, tmp_path: Path
) -> None:
    trace = tmp_path / "killed.jsonl"
    _record(plugin, tmp_path, trace, kill=True)
    code, report = _check(trace)
    assert code == 3, report
    assert report["complete"] is False
    unfinished = report["not_inspected"]["unfinished"]
    assert unfinished == {
        "why": ["no session-end line", "1 connection never closed"],
        "being_written": False,
    }
    done = run_cli("check", str(trace))
    assert done.returncode == 3
    assert (
        "not inspected: the end of the session: the proxy stopped without closing this "
        "recording (no session-end line; 1 connection never closed)" in done.stdout
    )
    assert "the session was not inspected whole (exit 3" in done.stdout
    assert run_cli("check", str(trace), "--allow-incomplete").returncode == 0

    # Cut after the last request: its answer is not in the file, nothing of it checked.
    lines = trace.read_bytes().splitlines(keepends=True)
    last_request = max(i for i, line in enumerate(lines) if b'"dir":"c2s"' in line)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[: last_request + 1]))
    code, report = _check(cut)
    assert code == 3, report
    assert report["not_inspected"]["pending"] == 1
    done = run_cli("check", str(cut))
    assert (
        "not inspected: 1 request still waiting for an answer where the recording ends "
        "(pending)" in done.stdout
    )


def test_lines_lost_from_a_whole_recording_are_not_a_complete_pass(
    plugin: PluginProcess, tmp_path: Path
) -> None:
    trace = tmp_path / "whole.jsonl"
    _record(plugin, tmp_path, trace, kill=False)
    code, report = _check(trace)
    assert code == 0, report
    assert report["complete"] is True
    assert report["not_inspected"]["lines_lost"] == {"places": 0, "first": None}
    assert report["not_inspected"]["unfinished"] is None
    assert report["not_inspected"]["pending"] == 0

    lines = trace.read_bytes().splitlines(keepends=True)
    lost = tmp_path / "lost.jsonl"
    lost.write_bytes(b"".join(lines[:6] + lines[10:]))  # four lines from the middle
    code, report = _check(lost)
    assert code == 3, report
    places = report["not_inspected"]["lines_lost"]
    assert places["places"] == 1
    assert "(4 lines lost or out of order)" in places["first"]
    done = run_cli("check", str(lost))
    assert done.returncode == 3
    assert "not inspected: lines the recording lacks or holds out of order (line 7: " in (
        done.stdout
    )
