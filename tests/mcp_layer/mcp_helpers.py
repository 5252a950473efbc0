"""Drive MCP servers from the tests with the `mcp` package's stdio client, directly or
through ``golem-proxy mcp``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from golem_proxy.testing.plugin_process import PluginProcess

ROOT = Path(__file__).resolve().parents[2]
SERVER = str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server.py")
SERVER_COMMAND = [sys.executable, SERVER]

Call = tuple[str, dict[str, Any]]
Outcome = tuple[bool, list[dict[str, Any]]]
"""What the model got back from a tool call: ``isError`` and the content, as plain data."""
CALLS: list[Call] = [
    ("list_layers", {}),
    ("create_layer", {"name": "A"}),
    ("layer_report", {"name": "B"}),
    ("broken_tool", {}),
    ("gh_ping", {}),
    ("big_text", {"size": 10}),
]
"""One call of each kind the test server has: plain, creating, several GOLEM calls, failing,
on the Grasshopper socket, and a large answer."""


def rpc_line(obj: dict[str, Any]) -> bytes:
    """One line of a hand-written MCP client on the stdio hop: ``obj`` as JSON-RPC 2.0."""
    return json.dumps({"jsonrpc": "2.0", **obj}).encode() + b"\n"


INITIALIZE = rpc_line(
    {
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
)
"""A hand-written client's first line (id 0)."""


def environment(**extra: str) -> dict[str, str]:
    """Our environment with the worktree importable (the server and the CLI run from it)."""
    return dict(os.environ, PYTHONPATH=str(ROOT), **extra)


def call_tools(command: Sequence[str], env: dict[str, str], calls: Sequence[Call]) -> list[Outcome]:
    """Start ``command`` as an MCP stdio server, initialize, make ``calls`` in order and
    return their outcomes; the client then closes the server's stdin, as clients do."""

    async def session() -> list[Outcome]:
        params = StdioServerParameters(command=command[0], args=list(command[1:]), env=env)
        outcomes: list[Outcome] = []
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                outcomes.append(
                    (bool(result.isError), [item.model_dump() for item in result.content])
                )
        return outcomes

    return anyio.run(session)


def direct_env(plugin: PluginProcess) -> dict[str, str]:
    """The server's environment pointing it at ``plugin`` itself."""
    return environment(
        GOLEM_RHINO_HOST=plugin.main.host,
        GOLEM_RHINO_PORT=str(plugin.main.port),
        GOLEM_GH_PORT=str(plugin.gh.port),
    )


def wrapped(
    plugin: PluginProcess,
    record: Optional[Path],
    *options: str,
    server: Sequence[str] = SERVER_COMMAND,
) -> list[str]:
    """``golem-proxy mcp`` in front of the test server (or ``server``) and ``plugin``."""
    recording = ("--record", str(record)) if record is not None else ()
    return [
        sys.executable,
        "-m",
        "golem_proxy",
        "mcp",
        "--upstream",
        str(plugin.main),
        "--gh-upstream",
        str(plugin.gh),
        *recording,
        *options,
        "--",
        *server,
    ]


def recorded_session(record: Path, calls: Sequence[Call] = CALLS) -> Path:
    """Make ``calls`` through ``golem-proxy mcp --record`` to a fresh headless plugin (seed 7),
    which is gone once the recording is written; returns ``record``."""
    with PluginProcess(seed=7) as plugin:
        call_tools(wrapped(plugin, record), environment(), calls)
    return record


def start_piped(
    command: Sequence[str], stderr: int = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    """``command`` started from the repository root in `environment`, stdin and stdout piped."""
    return subprocess.Popen(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=ROOT,
        env=environment(),
    )


_LISTING_SERVER = """
import json, sys
TOOLS = json.loads(%s)
INFO = json.loads(%s)
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": INFO}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    else:
        result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


def listing_server(
    tools: Sequence[dict[str, Any]], server_info: Optional[dict[str, Any]] = None
) -> str:
    """The Python source of a stdio MCP server that lists ``tools``, calls itself
    ``server_info`` (``{"name": "t"}``) and answers every call with one text block, for
    `recorded_listing`."""
    info = server_info if server_info is not None else {"name": "t"}
    return _LISTING_SERVER % (repr(json.dumps(list(tools))), repr(json.dumps(info)))


def recorded_listing(
    record: Path,
    server: str,
    calls: Sequence[Call],
    *,
    asked: Sequence[str] = ("tools/list",),
    options: Sequence[str] = (),
) -> Path:
    """Make ``calls`` through ``golem-proxy mcp --record`` (with ``options``) to ``server``
    (Python source run with ``-c``: a server that lists the tools a test needs), each
    answered before the next, from a hand-written client that initializes and asks each of
    ``asked`` (the tools listed) first; no plugin behind (the GOLEM routes point at the
    discard port). Returns ``record``."""
    command = [
        sys.executable, "-m", "golem_proxy", "mcp", "--record", str(record), *options,
        "--upstream", "127.0.0.1:9", "--gh-upstream", "127.0.0.1:9",
        "--", sys.executable, "-c", server,
    ]  # fmt: skip
    messages: list[dict[str, Any]] = [
        {"id": 0, "method": "initialize", "params": {"capabilities": {}}},
        {"method": "notifications/initialized"},
    ]
    messages += [{"id": 1 + at, "method": method} for at, method in enumerate(asked)]
    messages += [
        {
            "id": 1 + len(asked) + at,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        for at, (name, arguments) in enumerate(calls)
    ]
    process = start_piped(command)
    watchdog = threading.Timer(60, process.kill)  # a hung server fails the test, not the run
    watchdog.start()
    try:
        assert process.stdin is not None and process.stdout is not None
        for message in messages:
            process.stdin.write(rpc_line(message))
            process.stdin.flush()
            while "id" in message:
                line = process.stdout.readline()
                assert line, "the server stopped answering"
                if json.loads(line).get("id") == message["id"]:
                    break
        process.stdin.close()
        assert process.wait() == 0
    finally:
        watchdog.cancel()
        process.kill()
        process.wait()
    return record
