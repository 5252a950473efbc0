"""``debug.*``: test and demo methods, registered only with ``--debug-methods``.

``debug.sleep {seconds}`` occupies the UI thread, to show (and test) the UI timeout: the caller
gets TIMEOUT after ``--ui-timeout`` seconds while the sleep goes on and later calls queue.
"""

from __future__ import annotations

import time
from typing import Any

from .kit import param_or_value_error

__all__ = ["DebugHandlers"]

MAX_SLEEP_SECONDS = 600.0


class DebugHandlers:
    """Debug-only methods; they touch no document."""

    def sleep(self, params: dict[str, Any]) -> dict[str, Any]:
        seconds = min(float(param_or_value_error(params, "seconds")), MAX_SLEEP_SECONDS)
        time.sleep(max(seconds, 0.0))
        return {"slept": seconds}
