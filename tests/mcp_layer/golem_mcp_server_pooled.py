"""The test MCP server of golem_mcp_server.py, with its main connection kept as a connection
pool keeps one: ``connect_rhino`` opens it ahead of use (best effort) and writes nothing on
it, and every call first checks a kept connection (readable while nothing is owed means the
plugin closed or reset it) and opens a new one in place of a dead one, as urllib3's pool
does.

``GOLEM_TEST_SERVER_VARIANT=stops-proxy`` makes ``connect_rhino`` stop the process that
started it (the proxy, ``golem-proxy mcp``) before it connects, and let it go on `STALL`
seconds later, once its answer is written: a loaded machine that gives the proxy no CPU
between the server's connect (completed by the kernel, in the listener's backlog) and its
answer, so that the proxy finds the connection to accept and the answer to read at once."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any, Optional

# The base server is a script, not a package module: its directory goes on the path first.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import golem_mcp_server as base

STOPS_PROXY = base.VARIANT == "stops-proxy"
STALL = 0.5
"""Seconds the proxy is stopped (``stops-proxy``): the tool's answer is written well before."""


class PooledConnection(base.GolemConnection):
    """Opened ahead of use; checked before each use."""

    def open_ahead(self) -> str:
        """Best effort, as a pool's warm-up is: a connect that fails (a reset racing it)
        leaves the opening to the call that needs the connection."""
        with self.lock:
            if self.sock is None:
                host = os.environ.get("GOLEM_RHINO_HOST", "127.0.0.1")
                port = int(os.environ.get(self.port_variable, str(self.default_port)))
                proxy = os.getppid()
                if STOPS_PROXY:
                    os.kill(proxy, signal.SIGSTOP)
                try:
                    with contextlib.suppress(OSError):
                        self.sock = socket.create_connection((host, port), timeout=10)
                finally:
                    if STOPS_PROXY:
                        threading.Timer(STALL, os.kill, (proxy, signal.SIGCONT)).start()
        return "ready"

    def call(self, method: str, params: dict[str, Any], within: Optional[float] = None) -> Any:
        with self.lock:
            if self.sock is not None and select.select([self.sock], [], [], 0)[0]:
                self.sock.close()  # closed or reset meanwhile: a new one, pinged
                self.sock = None
        return super().call(method, params, within)


base.MAIN = PooledConnection("GOLEM_RHINO_PORT", 9876)


@base.server.tool()
def connect_rhino() -> str:
    """Open the connection to Rhino ahead of the calls that use it."""
    return base.MAIN.open_ahead()  # type: ignore[attr-defined, no-any-return]


if __name__ == "__main__":
    base.server.run()
