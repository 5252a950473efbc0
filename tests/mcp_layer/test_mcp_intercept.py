"""``golem-proxy mcp --intercept FILTER --console unix:PATH``: the `mcp` stdio client calls
the test FastMCP server through the wrapper to the headless plugin; the GOLEM frame of each
``create_layer`` is held until a console client decides it on the socket, while the
client's stdout stays the server's bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.support.plugin_fixture import plugin_fixture

from .console_client import DEADLINE, FILTER, ConsoleClient, private_dir
from .mcp_helpers import ROOT, environment, wrapped

WRAPPER = [sys.executable, "-m", "golem_proxy", "mcp"]


plugin = plugin_fixture(seed=7)


def test_held_frames_are_decided_on_the_console_socket(
    tmp_path: Path, plugin: PluginProcess
) -> None:
    path = private_dir(tmp_path) / "c.sock"
    record = tmp_path / "r.jsonl"
    log = tmp_path / "log.txt"
    console = ("--intercept", FILTER, "--console", f"unix:{path}", "--log", str(log))
    command = wrapped(plugin, record, *console)
    decided: dict[str, Any] = {}

    def decide() -> None:
        client = ConsoleClient(path)
        try:
            assert (os.stat(path).st_mode & 0o777) == 0o600
            client.held(1)
            # The intercept command relays a line typed by a user.
            done = subprocess.run(
                [sys.executable, "-m", "golem_proxy", "intercept", f"unix:{path}"],
                input=b"accept 1\n",
                capture_output=True,
                cwd=ROOT,
                env=environment(),
                timeout=DEADLINE,
            )
            decided["accept"] = done
            frame = client.held(2)
            frame["params"]["name"] = "Edited"
            decided["edit"] = client.ask(f"edit 2 {json.dumps(frame)}")
        finally:
            client.close()

    async def session() -> list[str]:
        params = StdioServerParameters(command=command[0], args=command[1:], env=environment())
        texts = []
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(anyio.to_thread.run_sync, decide)
                for name in ("A", "B"):
                    result = await client.call_tool("create_layer", {"name": name})
                    assert not result.isError, result
                    texts.append(result.content[0].model_dump()["text"])
        return texts

    texts = anyio.run(session)
    accepted = decided["accept"]
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stdout == b"#1: accept\n"
    assert decided["edit"] == "#2: edit"
    assert json.loads(texts[0])["full_path"] == "A"
    assert json.loads(texts[1])["full_path"] == "Edited"
    logged = log.read_text()
    assert "held #1" in logged and "held #2" in logged
    assert f"golem-proxy intercept unix:{path}" in logged
    assert not path.exists()  # removed when the run ends


def test_intercept_without_console_is_refused_naming_it() -> None:
    done = run_cli("mcp", "--intercept", FILTER, "--", "true", env=environment(), timeout=DEADLINE)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("golem-proxy: mcp --intercept")
    assert "--console unix:PATH" in lines[0]


def test_console_in_a_directory_others_may_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "golem_proxy",
            "mcp",
            "--intercept",
            FILTER,
            "--console",
            f"unix:{shared / 'c.sock'}",
            "--",
            "true",
        ],
        capture_output=True,
        cwd=ROOT,
        env=environment(),
        timeout=DEADLINE,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and "others may write to it" in lines[0], lines


ECHO = "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"


def test_with_a_console_stdout_is_still_the_servers_bytes_only(tmp_path: Path) -> None:
    path = private_dir(tmp_path) / "c.sock"
    lines = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n' * 3
    done = subprocess.run(
        [
            *[sys.executable, "-m", "golem_proxy", "mcp", "--upstream", "127.0.0.1:9"],
            *["--intercept", FILTER, "--console", f"unix:{path}"],
            *["--", sys.executable, "-c", ECHO],
        ],
        input=lines,
        capture_output=True,
        cwd=ROOT,
        env=environment(),
        timeout=DEADLINE,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == lines
    assert f"golem-proxy intercept unix:{path}".encode() in done.stderr
    assert not path.exists()


def test_intercept_to_a_socket_nobody_serves_is_one_line(tmp_path: Path) -> None:
    console = f"unix:{tmp_path / 'none.sock'}"
    done = run_cli("intercept", console, env=environment(), timeout=DEADLINE)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("golem-proxy: intercept: cannot connect"), lines


def test_console_without_intercept_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [*WRAPPER, "--console", f"unix:{tmp_path / 'c'}", "--", "true"],
        capture_output=True,
        cwd=ROOT,
        env=environment(),
        timeout=DEADLINE,
    )
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        "golem-proxy: mcp --console: needs --intercept FILTER"
    ]
