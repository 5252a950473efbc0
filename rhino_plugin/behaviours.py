"""Which plugin the headless plugin plays on the wire, and the options it runs with.

One behaviour today: ``golem-3dmcp@9819b31``, the public GOLEM-3DMCP plugin at that commit, its
registered names, parameters, results and envelopes (`rhino_plugin.golem_9819b31`). A later
upstream version gets a name of its own beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from golem_core.dispatcher import DEFAULT_UI_TIMEOUT, UiRunner

from . import golem_9819b31
from .document import Document

__all__ = ["BEHAVIOURS", "DEFAULT_BEHAVIOUR", "PluginOptions", "build_channels"]

DEFAULT_BEHAVIOUR = golem_9819b31.NAME
BEHAVIOURS = (golem_9819b31.NAME,)


@dataclass(frozen=True)
class PluginOptions:
    """How the headless plugin behaves (the command-line flags)."""

    seed: int = 0
    allow_scripts: bool = False
    debug_methods: bool = False
    ui_timeout: float = DEFAULT_UI_TIMEOUT
    behaviour: str = DEFAULT_BEHAVIOUR
    """Which plugin to play on the wire: one of `BEHAVIOURS`."""


def build_channels(
    document: Document,
    options: PluginOptions,
    *,
    ui_runner: Optional[UiRunner],
    on_shutdown: Optional[Callable[[], None]],
) -> tuple[golem_9819b31.Channel, golem_9819b31.Channel]:
    """``(dispatcher, respond)`` for the main and the Grasshopper channel. Raises ValueError
    for an unknown behaviour."""
    if options.behaviour != golem_9819b31.NAME:
        known = ", ".join(BEHAVIOURS)
        raise ValueError(f"unknown behaviour {options.behaviour!r} (known: {known})")
    return golem_9819b31.build_channels(
        document,
        allow_scripts=options.allow_scripts,
        debug_methods=options.debug_methods,
        ui_runner=ui_runner,
        ui_timeout=options.ui_timeout,
        on_shutdown=on_shutdown,
    )
