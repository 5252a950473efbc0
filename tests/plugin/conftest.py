"""Shared fixtures for the headless plugin tests: an in-process plugin on free ports and a
small blocking client built on golem_core. Stdlib + pytest only (these run on Python 3.9)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import pytest
from plugin_client import Client

from rhino_plugin import HeadlessPlugin, PluginOptions


@pytest.fixture
def start_plugin() -> Iterator[Callable[..., HeadlessPlugin]]:
    """A factory: ``start_plugin(**options)`` starts a plugin on free ports; all are stopped
    at teardown."""
    started: list[HeadlessPlugin] = []

    def start(**options: Any) -> HeadlessPlugin:
        plugin = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(**options))
        plugin.start()
        started.append(plugin)
        return plugin

    yield start
    for plugin in started:
        plugin.stop()


@pytest.fixture
def plugin(start_plugin: Callable[..., HeadlessPlugin]) -> HeadlessPlugin:
    return start_plugin(seed=7)


@pytest.fixture
def connect() -> Iterator[Callable[[tuple[str, int]], Client]]:
    """A factory for clients; all are closed at teardown."""
    clients: list[Client] = []

    def open_client(address: tuple[str, int]) -> Client:
        client = Client(address)
        clients.append(client)
        return client

    yield open_client
    for client in clients:
        client.close()


@pytest.fixture
def client(plugin: HeadlessPlugin, connect: Callable[[tuple[str, int]], Client]) -> Client:
    return connect(plugin.main_address)
