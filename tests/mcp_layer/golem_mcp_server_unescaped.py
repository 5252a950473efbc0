"""The test MCP server of golem_mcp_server.py in a build that writes its JSON texts with
non-ASCII characters as they are (``ensure_ascii=False``), as GOLEM-3DMCP's tools do: a layer
named ``Ébauche`` comes back as ``Ébauche``, not ``\\u00c9bauche``."""

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
    """Create a layer."""
    result = base.MAIN.call("scene.create_layer", {"name": name})
    return json.dumps(result, sort_keys=True, ensure_ascii=False)


if __name__ == "__main__":
    base.server.run()
