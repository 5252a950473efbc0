"""Shared fixtures for the headless plugin tests: an in-process plugin on free ports and a
small blocking client built on golem_core. Stdlib + pytest only (these run on Python 3.9)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, closing
from typing import Any, Callable

import pytest
from plugin_client import Client

from rhino_plugin import HeadlessPlugin, PluginOptions


@pytest.fixture
def start_plugin() -> Iterator[Callable[..., HeadlessPlugin]]:
    """A factory: ``start_plugin(**options)`` starts a plugin on free ports; all are stopped
    at teardown."""
    with ExitStack() as started:

        def start(**options: Any) -> HeadlessPlugin:
            plugin = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(**options))
            plugin.start()
            started.callback(plugin.stop)
            return plugin

        yield start


@pytest.fixture
def plugin(start_plugin: Callable[..., HeadlessPlugin]) -> HeadlessPlugin:
    return start_plugin(seed=7)


@pytest.fixture
def connect() -> Iterator[Callable[[tuple[str, int]], Client]]:
    """A factory for clients; all are closed at teardown."""
    with ExitStack() as opened:

        def open_client(address: tuple[str, int]) -> Client:
            return opened.enter_context(closing(Client(address)))

        yield open_client


@pytest.fixture
def client(plugin: HeadlessPlugin, connect: Callable[[tuple[str, int]], Client]) -> Client:
    return connect(plugin.main_address)
