"""rhino_plugin: the GOLEM-3DMCP plugin side on golem_core, runnable headless.

`HeadlessPlugin` serves the main and Grasshopper channels over an in-memory document;
``python -m rhino_plugin --headless`` runs it from the command line. Stdlib only, Python 3.9+.
"""

from __future__ import annotations

from .plugin import HeadlessPlugin, PluginOptions

__all__ = ["HeadlessPlugin", "PluginOptions"]
