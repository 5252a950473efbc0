"""Keeping the cyclic garbage collector off the TUI's flows, which live as long as the app."""

from __future__ import annotations

import gc

__all__ = ["LIVE_YOUNG", "FlowsHold"]

LIVE_YOUNG = 100_000
"""While live, the young objects there may be before the collector runs by itself: far more
than a batch makes, so it runs once a batch, in `hold`, unless batches stop coming while
the session still makes garbage."""


class FlowsHold:
    """Exempts every object there is from the cyclic garbage collector (`hold`, after each
    batch folded into the model), and hands them back when the app ends (`release`, also
    once a file is read).

    The model keeps every flow: a handful of objects each that live as long as the app and
    hold no cycles, and each full collection walked all of them again. While a file loads
    that was a quarter of the loading time at 30,000 flows. Live it is worse: the app shares
    its interpreter with the session it shows (with ``--observer child-process`` the decoder
    and the recorder the forwarding process waits for), and at 20,000 flows a full collection
    held it for up to 450 ms, collections took a fifth of the process's CPU, and the
    forwarding process held its relay meanwhile. Held, a collection walks only what came
    since the last batch.

    A cycle that became garbage after it was exempted is collected after `release` (the
    interpreter's freeze is process-wide: one app at a time holds it)."""

    def __init__(self) -> None:
        self.held = False
        self._was_enabled = True
        self._thresholds: tuple[int, ...] = gc.get_threshold()

    def hold(self, *, pause: bool = False) -> None:
        """Exempt everything there is now. ``pause``: also keep the collector from running
        by itself until `release` (a file loading: each batch allocates a few hundred
        thousand objects that all live on, and each automatic pass over the young ones
        found nothing to free). Without it (live) the collector still runs by itself, but
        only past `LIVE_YOUNG` young objects: the session in the worker thread makes
        garbage of its own, and batches stop coming when nothing is shown."""
        # A full collection first, of what is not held already (what came since the last
        # batch: quick): the garbage cycles made meanwhile (drawing, timers, messages, the
        # session's connections) go now, not held until the app ends.
        gc.collect()
        gc.freeze()
        if not self.held:
            self.held = True
            self._was_enabled = gc.isenabled()
            self._thresholds = gc.get_threshold()
        if pause:
            gc.disable()
        else:
            if self._was_enabled:
                gc.enable()
            gc.set_threshold(LIVE_YOUNG, *self._thresholds[1:])

    def release(self) -> None:
        """Hand every object back to the collector, as it ran before the first `hold`."""
        if self.held:
            self.held = False
            if self._was_enabled:
                gc.enable()
            gc.set_threshold(*self._thresholds)
            gc.unfreeze()
