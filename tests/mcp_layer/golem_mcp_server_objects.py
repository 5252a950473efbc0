"""The test MCP server of golem_mcp_server.py with two more tools that pass a GUID from one
call to the next, as GOLEM-3DMCP's do: ``create_box`` returns the new object's GUID (in
JSON text) and ``object_info(guid)`` asks about it. A plugin started with another seed
hands out other GUIDs, which is what `mcp-verify --target` must map."""

from __future__ import annotations

import json
import sys
from pathlib import Path

# The base server is a script, not a package module: its directory goes on the path first.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import golem_mcp_server as base


@base.server.tool()
def create_box(width: float) -> str:
    """A box at the origin."""
    params = {"corner": [0, 0, 0], "width": width, "depth": 1, "height": 1}
    return json.dumps(base.MAIN.call("geometry.create_box", params), sort_keys=True)


@base.server.tool()
def object_info(guid: str) -> str:
    """What the plugin knows about an object."""
    return json.dumps(base.MAIN.call("scene.get_object_info", {"guid": guid}), sort_keys=True)


if __name__ == "__main__":
    base.server.run()
