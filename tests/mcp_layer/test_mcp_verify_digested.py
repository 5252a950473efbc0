"""``mcp-verify`` on a tool answer the recording kept only as its size and SHA-256 (a frame
over ``--observe-frame-limit``): compared by those, so a build that answers less than was
recorded differs (it said ``not compared`` and passed), and the same build matches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.cli_helpers import reap, run_cli

from .mcp_helpers import INITIALIZE, ROOT, environment, rpc_line

BIG_ANSWER = (
    "import json, os, sys\n"
    "size = int(os.environ.get('ANSWER_BYTES', '2097152'))\n"
    "for line in sys.stdin:\n"
    "    asked = json.loads(line)\n"
    "    if 'id' not in asked:\n"
    "        continue\n"
    "    if asked['method'] == 'initialize':\n"
    "        result = {'protocolVersion': '2025-06-18', 'capabilities': {'tools': {}},\n"
    "                  'serverInfo': {'name': 'big', 'version': '1'}}\n"
    "    else:\n"
    "        result = {'content': [{'type': 'text', 'text': 'z' * size}], 'isError': False}\n"
    "    answer = {'jsonrpc': '2.0', 'id': asked['id'], 'result': result}\n"
    "    sys.stdout.write(json.dumps(answer) + '\\n')\n"
    "    sys.stdout.flush()\n"
)
"""Answers ``initialize``, then each tool call with ``ANSWER_BYTES`` of text (2 MiB)."""
SERVER = [sys.executable, "-c", BIG_ANSWER]


def recorded(record: Path) -> None:
    """One call answered with 2 MiB through ``golem-proxy mcp``, observed up to 1 MiB."""
    command = [
        sys.executable, "-m", "golem_proxy", "mcp", "--record", str(record),
        "--observe-frame-limit", "1", "--upstream", "127.0.0.1:9", "--gh-upstream",
        "127.0.0.1:9", "--", *SERVER,
    ]  # fmt: skip
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env=environment(),
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(INITIALIZE)
        process.stdin.flush()
        assert b'"id": 0' in process.stdout.readline()
        params = {"name": "big", "arguments": {}}
        process.stdin.write(rpc_line({"id": 1, "method": "tools/call", "params": params}))
        process.stdin.flush()
        assert len(process.stdout.readline()) > 2 * 1024 * 1024
        process.stdin.close()
        assert process.wait(30) == 0
    finally:
        reap(process)
        process.stdout.close()
    assert '"reason":"frame-too-large"' in record.read_text()


def mcp_verify(record: Path, answer_bytes: int) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "mcp-verify", str(record), "--", *SERVER,
        env=environment(COLUMNS="200", ANSWER_BYTES=str(answer_bytes)), timeout=120,
    )  # fmt: skip


def test_an_answer_kept_by_its_digest_is_compared_by_it(tmp_path: Path) -> None:
    record = tmp_path / "r.jsonl"
    recorded(record)
    same = mcp_verify(record, 2 * 1024 * 1024)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "mcp-verify: all 1 tool calls match" in same.stdout
    assert "not compared" not in same.stdout
    smaller = mcp_verify(record, 2 * 1024 * 1024 - 1000)
    assert smaller.returncode == 1, smaller.stdout + smaller.stderr
    row = next(line for line in smaller.stdout.splitlines() if line.startswith("big"))
    assert "differs" in row and "size/sha256" in row
    assert "2097253 B, sha256:" in smaller.stdout and "2096253 B, sha256:" in smaller.stdout
