"""How often a live app takes a batch of events and redraws, by whether events stream.

Every batch costs the interpreter the app shares with the session it shows: folding the
events in, the collector's pass (collector.py), and a redraw of the screen, a whole one when
the detail pane changes (its text changes size, so the screen is laid out again). With
``proxy --tui --observer child-process`` that session is the decoder and the recorder the
forwarding process waits for: past 60 ms behind the wire it holds its relay. Measured at ~3,000
exchanges a second, one redraw cost 10-60 ms of the interpreter and a batch every 50 ms took
about a fifth of it. So events after a quiet spell are drawn at once (a call made by hand
shows up without delay), and while they stream, a few batches a second are enough to follow
them. The detail pane names the selected flow at once (its summary, and payloads small
enough to draw at no cost); a large payload, read back or decoded again, or an image, is drawn
at most once a second when the pane follows the newest flow, saying it is loading meanwhile
(panes.py).
"""

from __future__ import annotations

import time
from typing import Optional

__all__ = [
    "DETAIL_DELAY",
    "DETAIL_STREAM_INTERVAL",
    "REFRESH_INTERVAL",
    "STREAM_INTERVAL",
    "STREAM_SPELL",
    "StreamPace",
]

REFRESH_INTERVAL = 0.05
"""After a quiet spell, the next batch is taken within this many seconds."""
STREAM_INTERVAL = 0.5
"""While events stream, at most one batch (and redraw) per this many seconds."""
STREAM_SPELL = 1.0
"""Events this soon after the last batch that had any are a stream."""
DETAIL_DELAY = 0.08
"""While the cursor races (a held key), the detail pane's large parts are drawn at most this
often (its summary follows the cursor at once)."""
DETAIL_STREAM_INTERVAL = 1.0
"""While events stream and the cursor follows the newest flow, the detail pane's large parts
are drawn at most this often (its summary follows the cursor at once; the last flow is shown
whole once the stream rests)."""


class StreamPace:
    """Tells the app when to take the next batch and how soon to redraw the detail pane."""

    def __init__(
        self, refresh_interval: float = REFRESH_INTERVAL, stream_interval: float = STREAM_INTERVAL
    ) -> None:
        self.refresh_interval = refresh_interval
        self.stream_interval = stream_interval
        self.streaming = False
        """The last batch had events and came less than `STREAM_SPELL` after the one before."""
        self._events_at: Optional[float] = None

    def taken(self, events: int) -> float:
        """A batch of ``events`` events was taken; returns the seconds to wait before the
        next one."""
        if events:
            now = time.monotonic()
            last, self._events_at = self._events_at, now
            self.streaming = last is not None and now - last < STREAM_SPELL
        else:
            self.streaming = False
        return self.stream_interval if self.streaming else self.refresh_interval

    def detail_interval(self, following: bool) -> float:
        """The least time between two whole redraws of the detail pane."""
        events_at = self._events_at
        streaming = (
            self.streaming and events_at is not None and time.monotonic() - events_at < STREAM_SPELL
        )
        return DETAIL_STREAM_INTERVAL if streaming and following else DETAIL_DELAY
