"""The test MCP server of golem_mcp_server.py in builds whose tool results are the same but
what the model is told is not, for `mcp-verify`'s tests. ``GOLEM_TEST_TOLD`` says how:

* ``undescribed``: ``list_layers`` lost its docstring (the tool's description);
* ``next-version``: the server calls itself by another version (``serverInfo.version``);
* ``instructed``: the server gives the client instructions it did not give before.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

# The base server is a script, not a package module: its directory goes on the path first.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import golem_mcp_server as base

TOLD = os.environ.get("GOLEM_TEST_TOLD", "")

if TOLD == "undescribed":
    base.server.remove_tool("list_layers")

    @base.server.tool()
    def list_layers() -> str:
        return json.dumps(base.MAIN.call("scene.list_layers", {}), sort_keys=True)

elif TOLD == "next-version":
    base.server._mcp_server.version = "99.0.0"
elif TOLD == "instructed":
    base.server._mcp_server.instructions = "Always call list_layers first."


if __name__ == "__main__":
    base.server.run()
