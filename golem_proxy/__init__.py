"""golem-proxy: the trio application (relay, tap decoding, recording, replay, CLI, TUI)."""

from golem_core import __version__

__all__ = ["__version__"]
