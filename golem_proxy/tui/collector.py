"""Keeping the cyclic garbage collector off a recording's flows while it loads."""

from __future__ import annotations

import gc

__all__ = ["LoadingHold"]


class LoadingHold:
    """Exempts every object there is from the cyclic garbage collector while a file loads
    (`hold`, after each batch), and hands them back once it is read (`release`); in between,
    the collector runs only once a batch, here.

    A loaded flow is a handful of objects that live as long as the app, and each full
    collection walked all of them again: a quarter of the loading time at 30,000 flows, more
    the larger the file. The flows hold no cycles; a cycle that became garbage after it was
    exempted is collected after `release` (the interpreter's freeze is process-wide: one app
    at a time holds it)."""

    def __init__(self) -> None:
        self.held = False
        self._was_enabled = True

    def hold(self) -> None:
        # A full collection first, of what is not held already (what came since the last
        # batch: quick): the garbage cycles the screen made meanwhile (drawing, timers,
        # messages) go now, not held until the file is read.
        gc.collect()
        gc.freeze()
        if not self.held:
            self._was_enabled = gc.isenabled()
        # Nor does it run by itself in between: a batch allocates a few hundred thousand
        # objects that all live on, and each automatic pass over the young ones found
        # nothing to free. The collection above, once a batch, still frees the screen's
        # cycles.
        gc.disable()
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            if self._was_enabled:
                gc.enable()
            gc.unfreeze()
