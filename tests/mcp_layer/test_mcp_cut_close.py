"""``golem-proxy mcp`` cuts the GOLEM connections its MCP server leaves open when it exits
(`Proxy.cut`). A server that exits normally closes its side first; a plugin that notices the
end of a connection only on its next poll closes its own later than the cut. The close then
says both, in the order they came: the client closed, then the cut, which did not wait for
the plugin's close. Both observers."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem_proxy.events import ConnectionClosed
from golem_proxy.net.addresses import Address
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess

from .mcp_helpers import SERVER_COMMAND, call_tools, environment

CLOSE_DELAY = 1.0
"""How long the plugin takes to close its side after the client closed its own: longer than
the wrapper waits once its server exited."""


def _pump(source: socket.socket, sink: socket.socket, delay: float) -> None:
    """Copy ``source`` to ``sink`` until ``source`` ends, then pass the end on after
    ``delay`` seconds."""
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    time.sleep(delay)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


@contextlib.contextmanager
def _slow_to_close(target: Address) -> Iterator[int]:
    """A stand-in in front of the plugin at ``target`` that passes everything on, and the
    client's close only `CLOSE_DELAY` seconds late. Yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()
    sockets: list[socket.socket] = []
    threads: list[threading.Thread] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                continue
            plugin = socket.create_connection((target.host, target.port))
            sockets.extend((client, plugin))
            for source, sink, delay in ((client, plugin, CLOSE_DELAY), (plugin, client, 0.0)):
                thread = threading.Thread(target=_pump, args=(source, sink, delay), daemon=True)
                thread.start()
                threads.append(thread)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        acceptor.join(5)
        listener.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in threads:
            thread.join(5)


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_connection_cut_after_its_client_closed_says_both_in_order(
    tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "r.jsonl"
    with PluginProcess(seed=7) as plugin, _slow_to_close(plugin.main) as port:
        command = [
            sys.executable, "-m", "golem_proxy", "mcp",
            "--upstream", f"127.0.0.1:{port}", "--gh-upstream", str(plugin.gh),
            "--record", str(record), "--observer", observer, "--", *SERVER_COMMAND,
        ]  # fmt: skip
        outcomes = call_tools(command, environment(), [("list_layers", {})])
    assert [failed for failed, _ in outcomes] == [False]
    closes = [e for e in read_recording(str(record)).events if isinstance(e, ConnectionClosed)]
    main = [close.reason for close in closes if close.route == "main"]
    assert main == ["client closed; the MCP server exited; the plugin's close was not waited for"]
