"""The headless plugin as a child process (`PluginProcess`): one that cannot start says why."""

from __future__ import annotations

import socket

import pytest

from golem_proxy.testing.plugin_process import PluginProcess, PluginStartError


def test_a_plugin_whose_port_is_taken_says_so() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(PluginStartError) as raised:
            PluginProcess(port=port).start()
    said = str(raised.value)
    assert said.startswith("headless plugin did not start:")
    assert str(port) in said or "in use" in said, said
