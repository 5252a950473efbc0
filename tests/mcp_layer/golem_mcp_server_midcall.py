"""The test MCP server of golem_mcp_server.py with a tool whose GOLEM call takes long, for a
plugin killed in the middle of it: ``wait_in_rhino(seconds)`` sends ``debug.sleep`` (the
headless plugin has it with ``--debug-methods``).

``GOLEM_TEST_SERVER_VARIANT=keeps-ended`` makes its main connection behave as the real
GOLEM-3DMCP server's does when the plugin ends the stream: the end of the stream fails the
call, and the connection is kept (only a reset or a broken pipe drops it), so the next call
writes to it again."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Optional

# The base server is a script, not a package module: its directory goes on the path first.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import golem_mcp_server as base


class KeepsEndedConnection(base.GolemConnection):
    """Keeps its socket when the plugin ended the stream, as the real server does."""

    def call(self, method: str, params: dict[str, Any], within: Optional[float] = None) -> Any:
        with self.lock:
            try:
                return self._call(method, params, within)
            except (ConnectionResetError, BrokenPipeError):
                if self.sock is not None:
                    self.sock.close()
                    self.sock = None
                raise
            # Any other ConnectionError (the end of the stream) leaves the socket as it is.


if os.environ.get("GOLEM_TEST_SERVER_VARIANT") == "keeps-ended":
    base.MAIN = KeepsEndedConnection("GOLEM_RHINO_PORT", 9876)


@base.server.tool()
def wait_in_rhino(seconds: float) -> str:
    """Have Rhino sleep ``seconds`` (a long GOLEM call)."""
    return json.dumps(base.MAIN.call("debug.sleep", {"seconds": seconds}), sort_keys=True)


if __name__ == "__main__":
    base.server.run()
