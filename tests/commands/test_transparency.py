"""A plugin restart costs a client that follows the real GOLEM client's rules no more failed
calls through the proxy than over the direct link."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import start_cli, wait_for_line
from tests.support.waiting import receive_exactly

_HEADER = struct.Struct("!I")


class RealRulesClient:
    """The GOLEM MCP server's connection rules (mcp_server/connection.py at 9819b31): one
    ``sendall`` per request, exact reads, a connection closed during a read fails the call
    (``ConnectionError``, not retried), ``BrokenPipeError``/``ConnectionResetError``
    reconnect and retry, three attempts in all."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = self._connect()
        self.calls = 0

    def _connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)

    def call(self) -> str:
        """``ok``, or ``failed:<exception name>``."""
        self.calls += 1
        request = GOLEM.encode({"id": f"c{self.calls}", "method": "ping", "params": {}})
        for _ in range(3):
            try:
                self.sock.sendall(request)
                (length,) = _HEADER.unpack(receive_exactly(self.sock, 4))
                receive_exactly(self.sock, length)
                return "ok"
            except (BrokenPipeError, ConnectionResetError):
                self.sock.close()
                try:
                    self.sock = self._connect()
                except OSError:
                    continue
            except (ConnectionError, TimeoutError) as exc:
                return f"failed:{type(exc).__name__}"
        return "failed:retries"

    def close(self) -> None:
        self.sock.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _outcomes_across_a_restart(port: int, through_proxy: bool) -> list[str]:
    plugin = PluginProcess(port=port).start()
    proxy = None
    try:
        target = port
        if through_proxy:
            proxy = start_cli("proxy", "--quiet", "--route", f"127.0.0.1:0=127.0.0.1:{port}")
            target = int(wait_for_line(proxy, r"127\.0\.0\.1:(\d+) →").group(1))
        client = RealRulesClient(target)
        outcomes = [client.call()]
        plugin.stop()
        plugin = PluginProcess(port=port).start()
        outcomes += [client.call() for _ in range(3)]
        client.close()
        return outcomes
    finally:
        plugin.stop()
        if proxy is not None:
            proxy.kill()
            proxy.wait(10)


@pytest.fixture
def port() -> Iterator[int]:
    yield _free_port()


def test_a_plugin_restart_costs_no_more_calls_through_the_proxy(port: int) -> None:
    direct = _outcomes_across_a_restart(port, through_proxy=False)
    proxied = _outcomes_across_a_restart(port, through_proxy=True)
    # Directly, the call after the restart sees the end of stream and fails; the next send
    # gets the reset and reconnects. Through the proxy, that first call already gets the
    # reset (the proxy held the FIN while idle) and is retried on a new connection.
    assert direct == ["ok", "failed:ConnectionError", "ok", "ok"]
    assert proxied == ["ok", "ok", "ok", "ok"]
