"""The ``plugin`` fixture most CLI and relay tests start from: one headless plugin process."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import pytest

from golem_proxy.testing.plugin_process import PluginProcess


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
