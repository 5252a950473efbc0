"""A session through `golem-proxy mcp` in which a GOLEM answer comes late and the calls after
it read the answer before their own (`late_answer_session`): the real GOLEM-3DMCP server's
behaviour, played by golem_mcp_server_in_order.py (it waits 0.5 s for Rhino, keeps the
connection and reads answers in order without matching ids) with a slow script."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from .mcp_helpers import ROOT, environment

__all__ = ["AFTER", "LATE_SEEN", "SERVER", "SLOW", "late_answer_session"]

SERVER = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_in_order.py")]
SLOW = "import time; time.sleep(1.5); print('late')"
"""Longer than the server's wait (0.5 s)."""
LATE_SEEN = b'"late\\n"'
"""The slow script's output as the recording holds it (in the plugin's answer)."""
DEADLINE = 20.0
AFTER: Sequence[tuple[str, dict[str, Any]]] = (
    ("create_layer", {"name": "next"}),
    ("get_document_info", {}),
    ("list_layers", {}),
)
"""The calls after the late one, by default: each reads the answer before its own."""


def late_answer_session(
    command: list[str],
    record: Path,
    stderr: Path,
    then: Sequence[tuple[str, Any]] = AFTER,
    slow: tuple[str, dict[str, Any]] = ("run_python", {"code": SLOW}),
) -> list[tuple[bool, str]]:
    """Call a tool, the slow script (``slow``: the call that runs it; the server gives up),
    wait until the late answer is recorded, then the calls ``then``; return each call's
    ``isError`` and text. The wrapper's stderr (its live log) goes to ``stderr``."""

    async def run(errlog: TextIO) -> list[tuple[bool, str]]:
        params = StdioServerParameters(command=command[0], args=command[1:], env=environment())
        outcomes: list[tuple[bool, str]] = []

        async def call(name: str, arguments: dict[str, Any]) -> None:
            result = await client.call_tool(name, arguments)
            text = result.content[0].model_dump().get("text", "") if result.content else ""
            outcomes.append((bool(result.isError), text))

        async with (
            stdio_client(params, errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            await call("list_layers", {})
            await call(*slow)
            deadline = time.monotonic() + DEADLINE
            while LATE_SEEN not in record.read_bytes() and time.monotonic() < deadline:
                await anyio.sleep(0.05)
            for name, arguments in then:
                await call(name, arguments)
        return outcomes

    with stderr.open("w") as errlog:
        return anyio.run(run, errlog)
