"""``golem-proxy proxy --intercept`` as a user drives it: commands typed on stdin, the headless
plugin process upstream, ``golem-proxy call`` as the client, and the recording afterwards."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.analysis.filters import parse_filter
from golem_proxy.events import FaultInjected, FrameSeen
from golem_proxy.live.intercept import InterceptEngine
from golem_proxy.live.intercept_console import InterceptConsole
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess

from .cli_helpers import ROOT, run_cli


@pytest.fixture(scope="module")
def plugin() -> Iterator[PluginProcess]:
    with PluginProcess(seed=13) as running:
        yield running


class InterceptingProxy:
    """A ``golem-proxy proxy`` child with a pipe on stdin; collects what it prints."""

    def __init__(self, *args: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="300")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "golem_proxy", "proxy", *args],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.port = int(self.wait_for(r": 127\.0\.0\.1:(\d+) →").group(1))
        self.wait_for("Ctrl-C to stop")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def wait_for(self, pattern: str, timeout: float = 20) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                found = re.search(pattern, line)
                if found:
                    return found
            time.sleep(0.01)
        raise AssertionError(f"no {pattern!r} in:\n{''.join(self.lines)}")

    def type(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def stop(self) -> str:
        self.process.send_signal(signal.SIGINT)
        _, stderr = self.process.communicate(timeout=30)
        self._reader.join(10)
        return stderr


def call_in_background(
    port: int, *args: str
) -> tuple[threading.Thread, list[subprocess.CompletedProcess[str]]]:
    done: list[subprocess.CompletedProcess[str]] = []
    thread = threading.Thread(
        target=lambda: done.append(run_cli("call", *args, "--target", f"127.0.0.1:{port}")),
        daemon=True,
    )
    thread.start()
    return thread, done


def test_hold_edit_and_send_from_stdin(plugin: PluginProcess, tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    upstream = f"{plugin.main.host}:{plugin.main.port}"
    proxy = InterceptingProxy(
        "--route", f"127.0.0.1:0={upstream}", "--record", str(record),
        "--intercept", r"~q & ~m ^scene\.create_layer$",
    )  # fmt: skip
    try:
        params = json.dumps({"name": "Walls", "color": {"r": 255, "g": 0, "b": 0}})
        thread, done = call_in_background(proxy.port, "scene.create_layer", params, "--id", "w1")
        held = int(proxy.wait_for(r"fault intercept:held scene\.create_layer held #(\d+)").group(1))
        proxy.type("list")
        proxy.wait_for(rf"#{held} main conn \d+ → scene\.create_layer id=w1 held")
        proxy.type("edit 1 {not json")
        proxy.wait_for("the edited frame is not JSON")
        edited = {
            "id": "w1",
            "method": "scene.create_layer",
            "params": {"name": "Walls", "color": {"r": 0, "g": 0, "b": 255}},
        }
        proxy.type(f"edit {held} {json.dumps(edited)}")
        thread.join(30)
        assert done and done[0].returncode == 0, done
        assert json.loads(done[0].stdout)["full_path"] == "Walls"
        proxy.wait_for(r"fault intercept:edit scene\.create_layer edited after")
    finally:
        proxy.stop()
    layers = run_cli("call", "scene.list_layers", "--target", upstream)
    walls = [x for x in json.loads(layers.stdout)["layers"] if x["full_path"] == "Walls"]
    assert walls[0]["color"] == {"r": 0, "g": 0, "b": 255, "a": 255}
    recording = read_recording(str(record))
    frames = [
        e for e in recording.events if isinstance(e, FrameSeen) and e.method == "scene.create_layer"
    ]
    assert [json.loads(f.payload) for f in frames] == [edited]
    edit = next(
        e for e in recording.events if isinstance(e, FaultInjected) and e.fault == "intercept:edit"
    )
    assert json.loads(edit.original)["params"]["color"] == {"r": 255, "g": 0, "b": 0}


def test_answer_and_drop_from_stdin(plugin: PluginProcess) -> None:
    upstream = f"{plugin.main.host}:{plugin.main.port}"
    proxy = InterceptingProxy(
        "--route", f"127.0.0.1:0={upstream}", "--intercept", r"~q & ~m ^viewport\.",
    )  # fmt: skip
    try:
        thread, done = call_in_background(proxy.port, "viewport.capture", "--id", "v1")
        held = proxy.wait_for(r"held #(\d+)").group(1)
        answer = {"result": None, "error": {"code": "TIMEOUT", "message": "UI thread busy"}}
        proxy.type(f"answer {held} {json.dumps(answer)}")
        thread.join(30)
        assert done[0].returncode == 1
        assert done[0].stdout.startswith("error TIMEOUT: UI thread busy")
        thread, done = call_in_background(proxy.port, "viewport.get_view_info", "--timeout", "1")
        held = proxy.wait_for(r"viewport\.get_view_info held #(\d+)").group(1)
        proxy.type(f"d {held}")
        thread.join(30)
        assert done[0].returncode == 2 and "did not answer" in done[0].stderr
        proxy.wait_for(r"fault intercept:drop viewport\.get_view_info withheld request: dropped")
    finally:
        proxy.stop()


def test_usage_errors() -> None:
    bad = run_cli("proxy", "--route", "127.0.0.1:0=127.0.0.1:1", "--intercept", "~m (")
    assert bad.returncode == 2
    assert "golem-proxy: --intercept: bad filter: expected an argument" in bad.stderr
    lone = run_cli("proxy", "--route", "127.0.0.1:0=127.0.0.1:1", "--intercept-timeout", "3")
    assert lone.returncode == 2 and "--intercept-timeout needs --intercept FILTER" in lone.stderr


def test_console_commands_without_a_terminal() -> None:
    engine = InterceptEngine(GOLEM, parse_filter("~q"))
    console = InterceptConsole(engine)
    assert "intercept filter: ~q; 0 held" in console.handle("")[0].plain
    assert "not a command" in console.handle("frobnicate 3")[0].plain
    assert console.handle("accept 4")[0].plain == "no frame #4 is held"
    assert console.handle("e 4")[0].plain == "e needs the JSON after the number"
    assert console.handle("filter ~m (")[0].plain.startswith("bad filter: ")
    assert console.handle("filter off")[0].plain.startswith("intercept filter off")
    assert engine.filter is None
    assert console.handle("filter ~s & ~m ping")[0].plain == "intercept filter: ~s & ~m ping"
    assert console.handle("A")[0].plain == "accepted 0 held frames"
    assert "accept N" in console.handle("?")[0].plain
