"""``verify`` of a trace recorded with faults, as a user runs it: the real proxy records a
session with the headless plugin, ``--fault error`` answering one request in the plugin's
place (the plugin never got it) or ``--fault drop`` withholding one answer (the plugin acted
on the request). Verify plays the trace to a fresh plugin: a request the proxy answered is
not sent (it would change the live document, and its recorded answer is no plugin's), and
``--update`` leaves its answer as it is; a request with no recorded answer is said, not
passed over in silence."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from golem_proxy.testing.client import GolemClient, RhinoCommandError
from golem_proxy.testing.plugin_process import PluginProcess
from tests.commands.test_log_cli import ProxyProcess
from tests.commands.test_unclosed_recording import wait_until_written

from .test_cli import verify_fresh


def _recorded(tmp_path: Path, fault: str) -> Path:
    """A layer created (the faulted call) and the layers listed, through a recording proxy."""
    trace = tmp_path / "faulted.jsonl"
    with PluginProcess(seed=3) as plugin:
        proxy = ProxyProcess(tmp_path, plugin.main, "--record", str(trace), "--fault", fault)
        try:
            # The fault's answer, or none.
            with (
                GolemClient("127.0.0.1", proxy.port, timeout=2) as client,
                contextlib.suppress(RhinoCommandError, OSError, TimeoutError),
            ):
                client.send_command("scene.create_layer", {"name": "A"}, timeout=1)
            with GolemClient("127.0.0.1", proxy.port, timeout=20) as client:
                client.send_command("scene.list_layers")
            assert proxy.stop() == 0
        finally:
            proxy.kill()
    wait_until_written(trace)
    return trace


def _verify(trace: Path, *args: str) -> tuple[int, str, str]:
    done = verify_fresh(trace, *args, seed=3)
    return done.returncode, done.stdout, done.stderr


def test_a_request_the_proxy_answered_is_not_sent(tmp_path: Path) -> None:
    trace = _recorded(tmp_path, "error:code=TIMEOUT,method=scene.create_layer")
    code, out, err = _verify(trace)
    assert code == 0, out + err  # the layers listed match: the plugin never made layer A
    assert "scene.create_layer: not sent, answered by the proxy (fault error)" in out
    # The client pings as it connects (twice), then lists the layers: 3 sent.
    assert "verify: all 3 exchanges sent match; 1 the proxy answered were not sent" in out
    report = json.loads(_verify(trace, "--json")[1])
    assert [check["method"] for check in report["not_sent"]] == ["scene.create_layer"]
    before = trace.read_bytes()
    code, out, err = _verify(trace, "--update")
    assert code == 0, out + err
    assert trace.read_bytes() == before  # the injected TIMEOUT stays the recorded answer


def test_a_request_whose_answer_was_dropped_is_named(tmp_path: Path) -> None:
    trace = _recorded(tmp_path, "drop:method=scene.create_layer")
    code, out, err = _verify(trace)
    # The plugin made layer A when recorded, the fresh one did not: the list differs, and
    # the note says why it may.
    assert code == 1, out + err
    assert "1 request with no answer in the recording not sent (#2 scene.create_layer" in err, err
