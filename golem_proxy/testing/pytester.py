"""Running the golem pytest plugin in pytester's inner runs."""

from __future__ import annotations

from importlib.metadata import entry_points

__all__ = ["PLUGIN_MODULE", "plugin_args"]

PLUGIN_MODULE = "golem_proxy.replay.pytest_plugin"


def plugin_args() -> tuple[str, ...]:
    """``-p golem_proxy.replay.pytest_plugin`` unless the installed package already registers
    it through its pytest11 entry point (registering it twice is an error)."""
    names = {ep.value for ep in entry_points(group="pytest11")}
    return () if PLUGIN_MODULE in names else ("-p", PLUGIN_MODULE)
