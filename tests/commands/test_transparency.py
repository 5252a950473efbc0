"""A plugin restart costs a client that follows the real GOLEM client's rules no more failed
calls through the proxy than over the direct link."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import start_cli, wait_for_line
from tests.support.real_rules_client import RealRulesClient


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
