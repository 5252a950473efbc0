"""The Textual TUI: watch a live session frame by frame, or open a recording.

`run_tui()` runs it over any `EventSource`: a `RecordingSource` (a file, optionally tailed)
or a `TrioThreadSource` (the proxy, run by trio in a worker thread, feeding events through
`hub_sink()`).
"""

from __future__ import annotations

from .app import GolemProxyApp, run_tui
from .bridge import EventBuffer, EventSource, SourceInfo, TrioThreadSource, hub_sink
from .sources import RecordingSource

__all__ = [
    "EventBuffer",
    "EventSource",
    "GolemProxyApp",
    "RecordingSource",
    "SourceInfo",
    "TrioThreadSource",
    "hub_sink",
    "run_tui",
]
