"""A recording read whole into its tool calls lives in two_layers.py; code written against its
old home, ``golem_proxy.analysis.tool_calls``, still gets it there, by name and by a star
import alike."""

from __future__ import annotations

from typing import Any

from golem_proxy.analysis import tool_calls, two_layers

MOVED = ("ToolCall", "TwoLayerBuilder", "TwoLayers", "read_tool_calls", "read_two_layers")


def test_a_star_import_of_the_old_path_brings_what_moved() -> None:
    namespace: dict[str, Any] = {}
    exec("from golem_proxy.analysis.tool_calls import *", namespace)
    for name in MOVED:
        assert namespace.get(name) is getattr(two_layers, name), name
    # What stayed comes too, as before.
    assert namespace["tool_call_name"] is tool_calls.tool_call_name


def test_the_old_path_serves_each_by_name() -> None:
    for name in MOVED:
        assert getattr(tool_calls, name) is getattr(two_layers, name), name
