"""A test MCP server whose tool writes its GOLEM request and its result in the same instant,
while the proxy in front of it (its parent) is stopped: ``hasty_layer(name)`` stops its parent
(SIGSTOP), sends ``scene.create_layer`` on its kept connection without waiting for the answer,
returns at once, and a timer lets the parent go on (SIGCONT) a moment later. The proxy then
finds the request on the GOLEM socket and the result on the stdio hop readable together, as a
busy proxy finds them after a server that reads an answer already waiting (the real
GOLEM-3DMCP server reading a late answer): which it reads first is its scheduler's choice.
Answers are read and dropped by a thread of their own."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import threading
import uuid
from typing import Optional

from mcp.server.fastmcp import FastMCP

from tests.support.waiting import receive_exactly

server = FastMCP("golem-test-hasty")
STOPPED_FOR = 0.2
"""Seconds the parent stays stopped: time for the tool's result to be written meanwhile."""
_connection: Optional[socket.socket] = None
_lock = threading.Lock()


def _drop_answers(sock: socket.socket) -> None:
    try:
        while True:
            (length,) = struct.unpack("!I", receive_exactly(sock, 4))
            receive_exactly(sock, length)
    except (OSError, ConnectionError, struct.error):
        return


def _kept() -> socket.socket:
    global _connection
    if _connection is None:
        port = int(os.environ.get("GOLEM_RHINO_PORT", "9876"))
        _connection = socket.create_connection(("127.0.0.1", port), timeout=10)
        threading.Thread(target=_drop_answers, args=(_connection,), daemon=True).start()
    return _connection


@server.tool()
def hasty_layer(name: str) -> str:
    """Ask Rhino for a layer and return without waiting, the proxy stopped meanwhile."""
    with _lock:
        sock = _kept()  # connected before the stop: its open is not this test's subject
        parent = os.getppid()
        os.kill(parent, signal.SIGSTOP)
        threading.Timer(STOPPED_FOR, os.kill, (parent, signal.SIGCONT)).start()
        request = {
            "id": str(uuid.uuid4()),
            "method": "scene.create_layer",
            "params": {"name": name},
        }
        payload = json.dumps(request).encode("utf-8")
        sock.sendall(struct.pack("!I", len(payload)) + payload)
    return json.dumps({"asked": name})


if __name__ == "__main__":
    server.run()
