"""Scrybe tried without Scrybe, as a user would from a shell: the demo's stand-in app, hints
that name absolute socket paths, replay's ready line naming the one channel a Scrybe trace
has, and `call` saying when a socket speaks the other profile instead of waiting."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from golem_proxy.testing.scrybe_server import short_socket_dir
from golem_proxy.testing.scrybe_session import SESSION
from tests.support.cli_helpers import interrupt, run_cli, start_cli

from .cli import app_process, env_with, wait_for_line


def run_in(cwd: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=Path(cwd), env=env_with(), timeout=timeout)


def start_in(cwd: str, *args: str) -> subprocess.Popen[str]:
    return start_cli(*args, cwd=Path(cwd), env=env_with())


@pytest.fixture(scope="module")
def demo() -> Iterator[tuple[str, str]]:
    """`golem-proxy demo --profile jsonrpc-ndjson` run once: its directory and its output."""
    directory = short_socket_dir()
    done = run_in(directory, "demo", "--profile", "jsonrpc-ndjson", "--out", "scrybe.jsonl")
    assert done.returncode == 0, done.stdout + done.stderr
    yield directory, done.stdout
    subprocess.run(["rm", "-rf", directory], check=False)


def test_the_demo_runs_a_stand_in_scrybe_app(demo: tuple[str, str]) -> None:
    directory, out = demo
    recording = read_recording(os.path.join(directory, "scrybe.jsonl"))
    assert recording.profile.name == "jsonrpc-ndjson"
    assert [e.method for e in recording.exchanges()] == [method for method, _ in SESSION]
    assert f"» session done: {len(SESSION)} requests" in out
    # Every socket a hint names is absolute: it works from wherever it is pasted.
    hints = out[out.index("Look at it again with:") :]
    paths = re.findall(r"(?:unix:|SCRYBE_SOCK=|scrybe_server )(\S+\.sock)", hints)
    assert paths and all(os.path.isabs(path) for path in paths), hints


def test_replay_names_only_the_channels_the_trace_has(demo: tuple[str, str]) -> None:
    directory, _ = demo
    process = start_in(directory, "replay", "scrybe.jsonl", "--listen", "unix:replay.sock")
    try:
        ready = wait_for_line(process, r"(golem-proxy replay ready: .*)")
    finally:
        assert interrupt(process) == 0
    expected = f"scrybe=unix:{os.path.join(directory, 'replay.sock')} exchanges={len(SESSION)}"
    assert ready == f"golem-proxy replay ready: {expected}"


def test_the_proxy_hint_names_an_absolute_socket(demo: tuple[str, str]) -> None:
    directory, _ = demo
    with app_process(os.path.join(directory, "app.sock")):
        process = start_in(
            directory,
            "proxy",
            "--profile",
            "jsonrpc-ndjson",
            "--route",
            "unix:./proxy.sock=unix:./app.sock",
        )
        try:
            hint = wait_for_line(process, r"client environment: (\S+)")
        finally:
            assert interrupt(process) == 0
    assert hint == f"SCRYBE_SOCK={os.path.join(directory, 'proxy.sock')}"


def test_call_says_when_a_socket_speaks_the_other_profile(demo: tuple[str, str]) -> None:
    """A GOLEM request to a Scrybe app used to wait out its 30 s; a JSON-RPC request to the
    plugin said only "closed the connection"."""
    directory, _ = demo
    with app_process(os.path.join(directory, "other.sock")) as app:
        done = run_in(directory, "call", "scene.get_document_info", "--target", f"unix:{app}")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"golem-proxy: unix:{app} does not answer golem requests; it answers jsonrpc-ndjson "
        "(pass --profile jsonrpc-ndjson)"
    )
    with PluginProcess(port=0, gh_port=0) as plugin:
        done = run_in(
            directory, "call", "state", "--profile", "jsonrpc-ndjson", "--target", str(plugin.main)
        )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"golem-proxy: {plugin.main} does not answer jsonrpc-ndjson requests; it answers golem "
        "(pass --profile golem)"
    )
