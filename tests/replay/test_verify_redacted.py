"""``verify`` of a trace recorded with ``--redact``, as a user runs it: the real proxy records
a session with the headless plugin, its rules keep the layer names out of the file; verify
plays it to a fresh plugin. The live answers are redacted by the recording's rules before they
are compared (a redacted path is no difference) and before ``--update`` writes them: the
rules keep out of the file what they kept out of it when it was recorded."""

from __future__ import annotations

import json
from pathlib import Path

from golem_proxy.live.redact import REDACTED
from golem_proxy.testing.client import GolemClient
from golem_proxy.testing.plugin_process import PluginProcess
from tests.commands.test_log_cli import ProxyProcess
from tests.commands.test_unclosed_recording import wait_until_written

from .test_cli import verify_fresh

RULES = ("--redact", "params.name", "--redact", "result.layers.*.name")


def _recorded(tmp_path: Path) -> Path:
    """A layer created and the layers listed, through a proxy recording with `RULES`."""
    trace = tmp_path / "redacted.jsonl"
    with PluginProcess(seed=3) as plugin:
        proxy = ProxyProcess(tmp_path, plugin.main, "--record", str(trace), *RULES)
        try:
            with GolemClient("127.0.0.1", proxy.port, timeout=20) as client:
                client.send_command("scene.create_layer", {"name": "Hunter2-Layer"})
                client.send_command("scene.list_layers")
            assert proxy.stop() == 0
        finally:
            proxy.kill()
    wait_until_written(trace)
    return trace


def _verify(trace: Path, *args: str) -> tuple[int, str, str]:
    done = verify_fresh(trace, *args, seed=3)
    return done.returncode, done.stdout, done.stderr


def test_redacted_paths_are_no_difference_and_update_writes_no_secret(tmp_path: Path) -> None:
    trace = _recorded(tmp_path)
    text = trace.read_text()
    assert "Hunter2-Layer" not in text and '"name": "Default"' not in text
    code, out, err = _verify(trace)
    assert code == 0, out + err
    assert "exchanges match" in out

    # The recorded document had an object on its default layer: the live one has none. (A
    # redacted answer is recorded as the rules left its JSON: compact.)
    lines = text.splitlines(keepends=True)
    was = '"object_count":0,"is_current":true'
    at = next(i for i, line in enumerate(lines) if was in line)
    lines[at] = lines[at].replace(was, '"object_count":1,"is_current":true')
    trace.write_text("".join(lines))
    code, out, err = _verify(trace, "--update")
    assert code == 0, out + err  # the differences are written: the trace is up to date
    assert "result.layers[0].object_count" in out
    assert "Default" not in out  # the layer names are no difference, and not printed
    assert "verify: updated 1 response in" in err

    updated = trace.read_text()
    assert "Default" not in updated and "Hunter2" not in updated
    frame = json.loads(updated.splitlines()[at])
    assert frame["msg"]["result"]["layers"][0]["name"] == REDACTED
    assert frame["msg"]["result"]["layers"][0]["object_count"] == 0
    assert "result.layers.*.name" in frame["redacted"]
    code, out, err = _verify(trace)
    assert code == 0, out + err
