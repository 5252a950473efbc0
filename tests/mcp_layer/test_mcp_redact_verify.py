"""``golem-proxy mcp-verify`` of a session recorded with ``--redact`` where a redacted value
holds a backslash or a quote (a Windows path): played to the same build, it matches. The
proxy wrote the placeholder into the recorded tool result ASCII-escaped
(``\\u00abredacted\\u00bb``) where the server, which writes non-ASCII as it is, writes
``«redacted»``: the text differed and the build "differed" (exit 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from golem_proxy.live.redact import REDACTED, REDACTED_ESCAPED
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .mcp_helpers import ROOT, call_tools, environment, wrapped

UNESCAPED = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_unescaped.py")]
SECRETS = ["C:\\Projects\\Client X", 'Client "X"']


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    record = tmp_path_factory.mktemp("redact-verify") / "session.jsonl"
    rule = ("--redact", "tools/call:params.arguments.name")
    calls = [("create_layer", {"name": secret}) for secret in SECRETS]
    with PluginProcess(seed=7) as plugin:
        call_tools(wrapped(plugin, record, *rule, server=UNESCAPED), environment(), calls)
    return record


def result_texts(record: Path) -> list[str]:
    frames = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()[1:]]
    return [
        frame["msg"]["result"]["content"][0]["text"]
        for frame in frames
        if frame.get("route") == "mcp"
        and frame.get("dir") == "s2c"
        and "content" in frame.get("msg", {}).get("result", {})
    ]


def mcp_verify(record: Path) -> subprocess.CompletedProcess[str]:
    env = environment(COLUMNS="200")
    return run_cli("mcp-verify", str(record), "--", *UNESCAPED, env=env, timeout=120)


def test_the_placeholder_is_written_as_the_servers_json_writes_it(recording: Path) -> None:
    texts = result_texts(recording)
    assert len(texts) == 2
    for text in texts:
        assert json.loads(text)["full_path"] == REDACTED
        # The server writes «redacted» as it is, as the recorded text now holds it.
        assert f'"full_path": "{REDACTED}"' in text and REDACTED_ESCAPED not in text


def test_the_same_build_matches(recording: Path) -> None:
    done = mcp_verify(recording)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mcp-verify: all 2 tool calls match" in done.stdout


def test_a_recording_with_the_placeholder_escaped_matches_too(
    recording: Path, tmp_path: Path
) -> None:
    """Recordings made before hold the escaped placeholder in such a text: the text is
    compared as the JSON it is."""
    before = tmp_path / "before.jsonl"
    lines = recording.read_text(encoding="utf-8").splitlines(keepends=True)
    escaped_in_text = json.dumps(REDACTED_ESCAPED)[1:-1]  # as the frame's JSON holds it
    for at, line in enumerate(lines):
        if '"route":"mcp"' in line and '"dir":"s2c"' in line and "full_path" in line:
            lines[at] = line.replace(REDACTED, escaped_in_text)
    before.write_text("".join(lines), encoding="utf-8")
    assert all(REDACTED_ESCAPED in text for text in result_texts(before))
    done = mcp_verify(before)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mcp-verify: all 2 tool calls match" in done.stdout
