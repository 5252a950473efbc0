"""The generated dissector on a real capture: dumpcap on ``lo`` while ``golem-proxy demo``
drives the headless plugin through the proxy. tshark finds, on the plugin's side of the proxy,
exactly the requests the demo's recording holds."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.support.cli_helpers import run_cli
from tests.support.tshark_helpers import TSHARK, tshark

DUMPCAP = shutil.which("dumpcap")


def _start_capture(capture: Path, log: Path) -> subprocess.Popen[bytes]:
    """dumpcap on the loopback interface, once it says it is capturing (or the test skips)."""
    assert DUMPCAP is not None
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            [DUMPCAP, "-q", "-i", "lo", "-f", "tcp", "-w", str(capture)],
            stdout=sink,
            stderr=sink,
        )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.skip(f"dumpcap cannot capture on lo: {log.read_text(errors='replace')}")
        if "Capturing on" in log.read_text(errors="replace"):
            return process
        time.sleep(0.05)
    process.kill()
    process.wait()
    pytest.skip("dumpcap did not start capturing")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _methods_so_far(capture: Path, script: Path, ports: list[str]) -> Counter[str]:
    """`_methods` while dumpcap still writes ``capture``: a last packet it has not written
    whole yet (tshark then fails) counts as nothing found so far."""
    try:
        return _methods(capture, script, ports)
    except AssertionError as exc:
        if "cut short in the middle of a packet" not in str(exc):
            raise
        return Counter()


def _methods(capture: Path, script: Path, ports: list[str]) -> Counter[str]:
    """The GOLEM methods the dissector finds in ``capture`` on the plugin's ``ports``."""
    found: Counter[str] = Counter()
    for port in ports:
        out = tshark(
            "-X", f"lua_script:{script}", "-r", str(capture),
            "-Y", f"golem && tcp.port == {port}",
            "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|", "-e", "golem.method",
        )  # fmt: skip
        found.update(method for line in out.split() for method in line.split("|") if method)
    return found


@pytest.mark.skipif(TSHARK is None or DUMPCAP is None, reason="tshark/dumpcap not installed")
@pytest.mark.skipif(os.geteuid() != 0, reason="capturing on lo needs root here")
def test_a_live_capture_decodes_as_the_recording_says(tmp_path: Path) -> None:
    capture, recording = tmp_path / "live.pcapng", tmp_path / "demo.jsonl"
    script = tmp_path / "golem.lua"
    dumpcap = _start_capture(capture, tmp_path / "dumpcap.log")
    try:
        done = run_cli("demo", "--out", str(recording), "--quiet")
        assert done.returncode in (0, 1), done.stderr
        header = json.loads(recording.read_text(encoding="utf-8").split("\n", 1)[0])
        ports = [route["upstream"].rsplit(":", 1)[1] for route in header["routes"]]
        options = [arg for port in ports for arg in ("--port", port)]
        assert run_cli("dissector", "--out", str(script), *options).returncode == 0
        shown = run_cli("show", str(recording), "--json")
        expected = Counter(
            flow["method"]
            for flow in map(json.loads, shown.stdout.splitlines())
            if flow["method"] is not None
        )
        # dumpcap writes what it has read when it is stopped, not what the kernel still holds
        # for it: it is stopped once the file holds the demo's last frames (or at a deadline).
        deadline = time.monotonic() + 20
        while _methods_so_far(capture, script, ports) != expected and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        _stop(dumpcap)
    assert expected and _methods(capture, script, ports) == expected
