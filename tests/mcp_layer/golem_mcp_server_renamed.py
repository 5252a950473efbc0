"""The test MCP server of golem_mcp_server.py in a build whose ``create_layer`` sends Rhino
a parameter the recorded build never sent (a layer colour), for `mcp-verify`'s tests: the
recording's GOLEM layer has no answer for it, so the stand-in says so and the tool fails."""

from __future__ import annotations

import json
import sys
from pathlib import Path

# The base server is a script, not a package module: its directory goes on the path first.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import golem_mcp_server as base

base.server.remove_tool("create_layer")


@base.server.tool()
def create_layer(name: str) -> str:
    """Create a layer, black."""
    params = {"name": name, "color": [0, 0, 0]}
    return json.dumps(base.MAIN.call("scene.create_layer", params), sort_keys=True)


if __name__ == "__main__":
    base.server.run()
