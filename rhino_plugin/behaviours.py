"""Which plugin the headless plugin plays on the wire.

- ``golem-3dmcp@9819b31`` (the default): the public GOLEM-3DMCP plugin at that commit, its
  registered names, parameters, results and envelopes (`rhino_plugin.golem_9819b31`);
- ``extended``: the broader stand-in, which also answers the names the GOLEM MCP server sends
  but the real plugin lacks, with the spec's envelopes (`rhino_plugin.registry`).

A later upstream version gets a name of its own beside these.
"""

from __future__ import annotations

from typing import Callable, Optional

from golem_core.dispatcher import Dispatcher, UiRunner

from . import golem_9819b31
from .document import Document
from .registry import PluginOptions, PluginRegistry

__all__ = ["BEHAVIOURS", "DEFAULT_BEHAVIOUR", "EXTENDED", "Channel", "build_channels"]

EXTENDED = "extended"
DEFAULT_BEHAVIOUR = golem_9819b31.NAME
BEHAVIOURS = (golem_9819b31.NAME, EXTENDED)
Channel = tuple[Dispatcher, Optional[Callable[[bytes], Optional[bytes]]]]


def build_channels(
    document: Document,
    options: PluginOptions,
    *,
    ui_runner: Optional[UiRunner],
    on_shutdown: Optional[Callable[[], None]],
) -> tuple[Channel, Channel]:
    """``(dispatcher, respond)`` for the main and the Grasshopper channel (``respond`` None:
    the dispatcher's own). Raises ValueError for an unknown behaviour."""
    if options.behaviour == golem_9819b31.NAME:
        main, grasshopper = golem_9819b31.build_channels(
            document,
            allow_scripts=options.allow_scripts,
            debug_methods=options.debug_methods,
            ui_runner=ui_runner,
            ui_timeout=options.ui_timeout,
            on_shutdown=on_shutdown,
        )
        return (main[0], main[1]), (grasshopper[0], grasshopper[1])
    if options.behaviour == EXTENDED:
        registry = PluginRegistry(document, options)
        return (
            (registry.main_dispatcher(ui_runner=ui_runner, on_shutdown=on_shutdown), None),
            (registry.grasshopper_dispatcher(ui_runner=ui_runner, on_shutdown=on_shutdown), None),
        )
    known = ", ".join(BEHAVIOURS)
    raise ValueError(f"unknown behaviour {options.behaviour!r} (known: {known})")
