"""A small MCP server that drives GOLEM the way the GOLEM-3DMCP server does, for the tests.

Like the real one it reads GOLEM_RHINO_HOST / GOLEM_RHINO_PORT / GOLEM_GH_PORT, opens its
connection on the first tool call and sends ``ping`` on it first, frames every message with
a 4-byte big-endian length, gives every request a UUID4 id, and turns a GOLEM error envelope
into an exception (which FastMCP returns as a result with ``isError``). Its tools:

* ``list_layers``: one GOLEM call;
* ``create_layer(name)``: one GOLEM call;
* ``layer_report(name)``: two GOLEM calls (create, then list);
* ``broken_tool``: a GOLEM method the plugin does not have, so the tool fails;
* ``gh_ping``: a ping on the Grasshopper socket;
* ``big_text(size)``: a result of ``size`` bytes, no GOLEM call;
* ``boolean_union(guids)``: the plugin's result returned as the tool's own (a dict, so
  FastMCP sends it as ``structuredContent``), as the real server does: an error dict in a
  success result reaches the model with ``isError`` false.

Like the real one, it drops a connection that was refused, reset or closed, and the next call
connects again.

``GOLEM_TEST_SERVER_VARIANT=changed`` makes ``list_layers`` answer differently (a changed
build, for regression tests); ``offline-message`` makes a tool whose GOLEM connection failed
say so in words of its own (a build that behaves differently while the plugin is down);
``names-address`` makes a failed connection say so in the real server's words, which name
the address it dialled (``Cannot connect to Rhino plugin at HOST:PORT: …``), for a failed
connect and a failed ping alike: the real server words them apart, and which of the two a
connection the proxy accepted and reset meets (the upstream refused it) depends on how soon
the server's thread reads its connect's outcome, under load too late now and then;
``names-default-port`` names the default port rather than the one dialled (a build that
names the wrong address); ``lists-first`` makes ``create_layer`` list the layers before it
creates one, and ``deletes-first`` makes ``list_layers`` delete an object first, each
ignoring a failure of that first request and answering as before (builds that send a GOLEM
request the recorded call never sent); ``described-otherwise`` describes ``list_layers`` in
other words (a build whose ``tools/list`` changed, its calls not); ``keeps-none`` closes its
connection after every call (a build that keeps no connection for a proxy's idle close).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import threading
import uuid
from typing import Any, Optional

from mcp.server.fastmcp import FastMCP

from tests.support.waiting import receive_exactly

server = FastMCP("golem-test")


class GolemError(RuntimeError):
    """The plugin answered with an error envelope."""


class GolemConnection:
    """One lazily opened, lock-guarded connection, pinged on connect."""

    def __init__(self, port_variable: str, default_port: int) -> None:
        self.port_variable = port_variable
        self.default_port = default_port
        self.sock: Optional[socket.socket] = None
        self.lock = threading.Lock()

    def call(self, method: str, params: dict[str, Any], within: Optional[float] = None) -> Any:
        """The answer's result. ``within``: seconds to wait for it, past which the connection
        is closed (its late answer must not be read as the next call's) and GolemError
        raised; the next call connects again, as it does after the connection failed."""
        with self.lock:
            try:
                return self._call(method, params, within)
            except OSError as exc:
                # A refused, reset or closed connection is dropped, as the real server's
                # is: the next call connects again.
                if self.sock is not None:
                    self.sock.close()
                    self.sock = None
                if OFFLINE_MESSAGE:
                    raise GolemError(f"Rhino is not reachable ({type(exc).__name__})") from None
                raise
            finally:
                if KEEPS_NONE and self.sock is not None:
                    self.sock.close()
                    self.sock = None

    def _call(self, method: str, params: dict[str, Any], within: Optional[float]) -> Any:
        if self.sock is None:
            host = os.environ.get("GOLEM_RHINO_HOST", "127.0.0.1")
            port = int(os.environ.get(self.port_variable, str(self.default_port)))
            named = f"{host}:{self.default_port if NAMES_DEFAULT_PORT else port}"
            try:
                self.sock = socket.create_connection((host, port), timeout=10)
                self._exchange("ping", {})
            except OSError as exc:
                if not NAMES_AN_ADDRESS:
                    raise
                # The real server's RhinoConnectionError is an OSError too, dropped as one.
                raise ConnectionError(f"Cannot connect to Rhino plugin at {named}: {exc}") from exc
        if within is None:
            return self._exchange(method, params)
        self.sock.settimeout(within)
        try:
            return self._exchange(method, params)
        except TimeoutError:
            self.sock.close()
            self.sock = None
            raise GolemError(f"Rhino did not answer {method} within {within:g} s") from None
        finally:
            if self.sock is not None:
                self.sock.settimeout(10)

    def _exchange(self, method: str, params: dict[str, Any]) -> Any:
        assert self.sock is not None
        request = {"id": str(uuid.uuid4()), "method": method, "params": params}
        payload = json.dumps(request).encode("utf-8")
        self.sock.sendall(struct.pack("!I", len(payload)) + payload)
        (length,) = struct.unpack("!I", receive_exactly(self.sock, 4))
        answer = json.loads(receive_exactly(self.sock, length).decode("utf-8"))
        error = answer.get("error")
        if error:
            raise GolemError(f"Rhino error {error.get('code')}: {error.get('message')}")
        return answer.get("result")


MAIN = GolemConnection("GOLEM_RHINO_PORT", 9876)
GH = GolemConnection("GOLEM_GH_PORT", 9877)
VARIANT = os.environ.get("GOLEM_TEST_SERVER_VARIANT")
CHANGED = VARIANT == "changed"
OFFLINE_MESSAGE = os.environ.get("GOLEM_TEST_SERVER_VARIANT") == "offline-message"
NAMES_DEFAULT_PORT = os.environ.get("GOLEM_TEST_SERVER_VARIANT") == "names-default-port"
KEEPS_NONE = VARIANT == "keeps-none"
NAMES_AN_ADDRESS = (
    NAMES_DEFAULT_PORT or os.environ.get("GOLEM_TEST_SERVER_VARIANT") == "names-address"
)

DELETED = "eb1167b3-67a9-4378-bc65-c1e582e2e662"
"""The object the ``deletes-first`` build deletes."""


def _ignoring_failure(method: str, params: dict[str, Any]) -> None:
    with contextlib.suppress(GolemError):
        MAIN.call(method, params)


@server.tool(description="All layers." if VARIANT == "described-otherwise" else None)
def list_layers() -> str:
    """The document's layers."""
    if VARIANT == "deletes-first":
        _ignoring_failure("scene.delete_objects", {"guids": [DELETED]})
    result = MAIN.call("scene.list_layers", {})
    if CHANGED:
        return json.dumps({"layers": "changed"})
    return json.dumps(result, sort_keys=True)


@server.tool()
def create_layer(name: str) -> str:
    """Create a layer."""
    if VARIANT == "lists-first":
        _ignoring_failure("scene.list_layers", {})
    return json.dumps(MAIN.call("scene.create_layer", {"name": name}), sort_keys=True)


@server.tool()
def layer_report(name: str) -> str:
    """Create a layer, then list them all: two GOLEM calls."""
    MAIN.call("scene.create_layer", {"name": name})
    return json.dumps(MAIN.call("scene.list_layers", {}), sort_keys=True)


@server.tool()
def broken_tool() -> str:
    """Call a method the plugin does not register: the tool fails."""
    return json.dumps(MAIN.call("scene.no_such_method", {"x": 1}))


@server.tool()
def gh_ping() -> str:
    """Ping the Grasshopper socket."""
    return json.dumps(GH.call("ping", {}), sort_keys=True)


@server.tool()
def big_text(size: int) -> str:
    """A result of ``size`` bytes (no GOLEM call)."""
    return "x" * size


@server.tool()
def boolean_union(guids: list[str]) -> dict[str, Any]:
    """Union solids; the plugin's answer is the tool's, error dict included."""
    result = MAIN.call("operations.boolean_union", {"guids": guids, "delete_input": True})
    return dict(result) if isinstance(result, dict) else {"result": result}


if __name__ == "__main__":
    server.run()
