"""Builds the dispatchers of the ``extended`` behaviour for one document, and the options.

`PluginRegistry` owns the handler objects (they share one `Document` and one Grasshopper
session) and builds one golem_core `Dispatcher` per channel:

- main channel: every modelled method, plus every other catalogue name as NOT_IMPLEMENTED, so
  `list_methods` answers the full catalogue. As the real plugin registers its ``grasshopper.*``
  handlers in the main registry too, the main channel answers them as well;
- Grasshopper channel: the ``grasshopper.*`` names only (plus the built-ins); anything else is
  "Method not found" (-32601) there.

Nothing is registered by import side effect: tables are built when a registry is constructed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Callable, Optional

from golem_core.dispatcher import DEFAULT_UI_TIMEOUT, Dispatcher, Handler, UiRunner

from .catalogue import ALL_METHODS
from .document import Document
from .handlers.creation import CreationHandlers
from .handlers.debug import DebugHandlers
from .handlers.files import FileHandlers
from .handlers.grasshopper import GrasshopperHandlers
from .handlers.manipulation import ManipulationHandlers
from .handlers.operations import OperationHandlers
from .handlers.scene import SceneHandlers
from .handlers.scripting import ScriptingHandlers
from .handlers.unmodelled import not_implemented
from .handlers.viewport import ViewportHandlers

__all__ = ["PluginOptions", "PluginRegistry"]

GRASSHOPPER_PREFIX = "grasshopper."


@dataclass(frozen=True)
class PluginOptions:
    """How the headless plugin behaves (the command-line flags)."""

    seed: int = 0
    allow_scripts: bool = False
    debug_methods: bool = False
    ui_timeout: float = DEFAULT_UI_TIMEOUT
    behaviour: str = "golem-3dmcp@9819b31"
    """Which plugin to play on the wire: see `rhino_plugin.behaviours`."""


class PluginRegistry:
    """The handler tables over one document, and dispatchers built from them."""

    def __init__(self, document: Document, options: PluginOptions) -> None:
        self.document = document
        self.options = options
        grasshopper = GrasshopperHandlers(document)
        self._grasshopper_table = grasshopper.table()
        self._main_table: dict[str, Handler] = {}
        tables = [
            SceneHandlers(document).table(),
            CreationHandlers(document).table(),
            ManipulationHandlers(document).table(),
            OperationHandlers(document).table(),
            FileHandlers(document).table(),
            ViewportHandlers(document).table(),
            ScriptingHandlers(document, allow_scripts=options.allow_scripts).table(),
            self._grasshopper_table,
        ]
        if options.debug_methods:
            tables.append(DebugHandlers().table())
        for table in tables:
            for name, handler in table.items():
                if name in self._main_table:
                    raise ValueError(f"method {name!r} is handled twice")
                self._main_table[name] = handler

    def modelled_methods(self) -> list[str]:
        """The names answered by a real handler, sorted."""
        return sorted(self._main_table)

    def main_dispatcher(
        self,
        *,
        ui_runner: Optional[UiRunner] = None,
        on_shutdown: Optional[Callable[[], None]] = None,
    ) -> Dispatcher:
        """A dispatcher for the main channel (see the module docstring)."""
        return self._build(self._main_table, ALL_METHODS, ui_runner, on_shutdown)

    def grasshopper_dispatcher(
        self,
        *,
        ui_runner: Optional[UiRunner] = None,
        on_shutdown: Optional[Callable[[], None]] = None,
    ) -> Dispatcher:
        """A dispatcher for the Grasshopper channel: ``grasshopper.*`` only."""
        known = [name for name in ALL_METHODS if name.startswith(GRASSHOPPER_PREFIX)]
        table = dict(self._grasshopper_table)
        if self.options.debug_methods:
            table.update(DebugHandlers().table())
        return self._build(table, known, ui_runner, on_shutdown)

    def _build(
        self,
        table: dict[str, Handler],
        known: Iterable[str],
        ui_runner: Optional[UiRunner],
        on_shutdown: Optional[Callable[[], None]],
    ) -> Dispatcher:
        dispatcher = Dispatcher(
            ui_runner=ui_runner, ui_timeout=self.options.ui_timeout, on_shutdown=on_shutdown
        )
        for name in sorted(table):
            dispatcher.register(name, table[name])
        for name in sorted(set(known) - set(table)):
            # Refusing needs no document access, so it does not queue on the UI thread.
            dispatcher.register(name, not_implemented(name), ui_thread=False)
        return dispatcher
