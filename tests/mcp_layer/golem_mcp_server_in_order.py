"""The test MCP server of golem_mcp_server.py, changed to read GOLEM answers as the real
GOLEM-3DMCP server (9819b31, ``_send_and_recv``) does: in order, without matching their ids,
on a connection it keeps when a call gives up waiting. Every tool waits at most
``GOLEM_TEST_GIVE_UP`` seconds (default 0.5) for Rhino, then fails; the late answer stays on
the connection and the next call reads it as its own, each call after it the answer of the
call before. Tools: ``run_python(code)`` (``scripting.execute_python``, so a test can make the
plugin slow), ``create_layer(name)``, ``get_document_info()`` and ``list_layers()``, each
returning the plugin's result as JSON text."""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
import uuid
from typing import Any, Optional

from mcp.server.fastmcp import FastMCP

from tests.support.waiting import receive_exactly

server = FastMCP("golem-test-in-order")
GIVE_UP = float(os.environ.get("GOLEM_TEST_GIVE_UP", "0.5"))


class _Connection:
    """One kept connection; answers read in order, their ids never looked at."""

    def __init__(self) -> None:
        self.sock: Optional[socket.socket] = None
        self.lock = threading.Lock()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        with self.lock:
            if self.sock is None:
                port = int(os.environ.get("GOLEM_RHINO_PORT", "9876"))
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            request = {"id": str(uuid.uuid4()), "method": method, "params": params}
            payload = json.dumps(request).encode("utf-8")
            self.sock.sendall(struct.pack("!I", len(payload)) + payload)
            self.sock.settimeout(GIVE_UP)
            try:
                # The server's bug, kept on purpose: a timeout leaves the answer unread on a
                # connection that stays open, and nothing checks the id of the next one.
                (length,) = struct.unpack("!I", receive_exactly(self.sock, 4))
                answer = json.loads(receive_exactly(self.sock, length).decode("utf-8"))
            except TimeoutError:
                raise RuntimeError(
                    f"Rhino did not respond to {method!r} within {GIVE_UP:g}s"
                ) from None
            finally:
                self.sock.settimeout(10)
            return answer.get("result")


MAIN = _Connection()


@server.tool()
def run_python(code: str) -> str:
    """Run Python in Rhino."""
    return json.dumps(MAIN.call("scripting.execute_python", {"code": code}), indent=2)


@server.tool()
def create_layer(name: str) -> str:
    """Create a layer."""
    return json.dumps(MAIN.call("scene.create_layer", {"name": name}), indent=2)


@server.tool()
def get_document_info() -> str:
    """The document's information."""
    return json.dumps(MAIN.call("scene.get_document_info", {}), indent=2)


@server.tool()
def list_layers() -> str:
    """The document's layers."""
    return json.dumps(MAIN.call("scene.list_layers", {}), indent=2)


if __name__ == "__main__":
    server.run()
