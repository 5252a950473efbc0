"""The ``plugin`` fixture most CLI and relay tests start from: one headless plugin process, or
the headless plugin in the test's own process."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import pytest

from golem_proxy.net.addresses import Address
from golem_proxy.testing.plugin_process import PluginProcess
from rhino_plugin import HeadlessPlugin, PluginOptions


def plugin_fixture(
    seed: int,
    *,
    scope: Literal["function", "module"] = "module",
    extra_args: tuple[str, ...] = (),
) -> Any:
    """Return a pytest fixture named ``plugin`` that yields a running ``PluginProcess``.

    Assign it in a test module (``plugin = plugin_fixture(seed=3)``); the seed decides the GUIDs
    the plugin hands out, so a module that asserts on them keeps its own.
    """

    @pytest.fixture(scope=scope, name="plugin")
    def running_plugin() -> Iterator[PluginProcess]:
        with PluginProcess(seed=seed, extra_args=extra_args) as running:
            yield running

    return running_plugin


def in_process_plugin_fixture(
    seed: int, *, scope: Literal["function", "module"] = "function"
) -> Any:
    """Return a pytest fixture named ``plugin`` that yields the main address of a
    ``HeadlessPlugin`` running in this process on free loopback ports, stopped afterwards.

    For tests that need no process boundary (the TUI, the relay); assign it in a test module
    or conftest (``plugin = in_process_plugin_fixture(seed=5)``).
    """

    @pytest.fixture(scope=scope, name="plugin")
    def running_plugin() -> Iterator[Address]:
        running = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(seed=seed))
        (host, port), _ = running.start()
        yield Address(host, port)
        running.stop()

    return running_plugin
