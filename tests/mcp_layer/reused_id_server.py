"""A raw NDJSON MCP server whose tool calls run at once, each in a thread of its own, so a
client can have several in flight (and answers come back in the order they finish):

* ``golem_after(delay)``: after ``delay`` seconds, opens a GOLEM connection to
  GOLEM_RHINO_HOST / GOLEM_RHINO_PORT, sends ``ping`` then ``scene.list_layers`` and returns
  the layers;
* ``sleep_only(seconds)``: returns ``"slept"`` after ``seconds``, no GOLEM call.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import uuid
from typing import Any

from golem_core.profiles import GOLEM
from tests.support.waiting import receive_exactly

_write = threading.Lock()


def send(obj: dict[str, Any]) -> None:
    with _write:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **obj}) + "\n")
        sys.stdout.flush()


def exchange(sock: socket.socket, method: str) -> Any:
    sock.sendall(GOLEM.encode({"id": str(uuid.uuid4()), "method": method, "params": {}}))
    size = int.from_bytes(receive_exactly(sock, 4), "big")
    return json.loads(receive_exactly(sock, size))["result"]


def golem_after(delay: float) -> str:
    time.sleep(delay)
    address = (os.environ["GOLEM_RHINO_HOST"], int(os.environ["GOLEM_RHINO_PORT"]))
    with socket.create_connection(address, timeout=10) as sock:
        exchange(sock, "ping")
        return json.dumps(exchange(sock, "scene.list_layers"))


def sleep_only(seconds: float) -> str:
    time.sleep(seconds)
    return "slept"


TOOLS = {"golem_after": golem_after, "sleep_only": sleep_only}


def call(ident: Any, name: str, arguments: dict[str, Any]) -> None:
    text = TOOLS[name](**arguments)
    send({"id": ident, "result": {"content": [{"type": "text", "text": text}], "isError": False}})


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            continue
        if method == "initialize":
            info = {"name": "reused-id", "version": "1"}
            result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": info}
            send({"id": ident, "result": result})
        elif method == "tools/call":
            params = message["params"]
            work = (ident, params["name"], params.get("arguments") or {})
            threading.Thread(target=call, args=work).start()
    for thread in threading.enumerate():
        if thread is not threading.current_thread():
            thread.join()


if __name__ == "__main__":
    main()
