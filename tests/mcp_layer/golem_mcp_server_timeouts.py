"""The test MCP server of golem_mcp_server.py with a tool that gives up waiting for Rhino, as a
server's tool times out: ``create_layer_within(name, seconds)`` sends ``scene.create_layer``
and waits at most ``seconds`` for the answer; past that it closes its connection (the late
answer must not be read as the next call's) and fails. The next tool call connects again.
``run_python_within(code, seconds)`` does the same with ``scripting.execute_python``, so that a
test can make the plugin itself slow."""

from __future__ import annotations

import json
import sys
from pathlib import Path

# The base server is a script, not a package module: its directory goes on the path first.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import golem_mcp_server as base


@base.server.tool()
def create_layer_within(name: str, seconds: float) -> str:
    """Create a layer, or fail when Rhino does not answer within ``seconds``."""
    result = base.MAIN.call("scene.create_layer", {"name": name}, within=seconds)
    return json.dumps(result, sort_keys=True)


@base.server.tool()
def run_python_within(code: str, seconds: float) -> str:
    """Run ``code`` in Rhino, or fail when Rhino does not answer within ``seconds``."""
    result = base.MAIN.call("scripting.execute_python", {"code": code}, within=seconds)
    return json.dumps(result, sort_keys=True)


if __name__ == "__main__":
    base.server.run()
