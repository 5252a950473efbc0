"""How the live log folds a flood of the same problem: at most `SHOWN` lines a `WINDOW` for
one problem on one connection (a rule broken, a kind of malformed frame or framing error),
then one line saying how many more there were.

A client that sends a MiB of zero-length frames makes 262,144 malformed frames and as many
violations: printed one by one, they bury the terminal, and rendering them took two thirds
of the observing process's time, so the recording (which keeps every one) trailed the wire by a
minute. Nothing is dropped silently: each fold says its count, on the connection it is of."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

__all__ = ["SHOWN", "WINDOW", "Fold", "RepeatFold"]

WINDOW = 1.0
"""Seconds (session time) over which one problem's lines are counted."""
SHOWN = 3
"""Lines of one problem on one connection shown a window; the rest are counted."""


@dataclass
class Fold:
    """One problem's lines over a window: how many were shown and how many were not."""

    route: str
    conn: int
    what: str
    """The problem, as a line names it (a rule, ``malformed empty``, …)."""
    started: float
    shown: int = 0
    folded: int = 0
    last: float = 0.0
    """When the last line not shown came."""


class RepeatFold:
    """Decides which lines of a repeated problem are shown (`admit`) and gives back the folds
    whose window is over (`ended`, `pending`) for the log to say what it did not show."""

    def __init__(self, window: float = WINDOW, shown: int = SHOWN) -> None:
        self.window = window
        self.shown = shown
        self._folds: dict[Hashable, Fold] = {}
        self._next_end = float("inf")
        """The earliest end of a window with lines not shown (`ended` looks no sooner)."""
        self._next_sweep = window
        """When `ended` next forgets the windows over, those with every line shown too: a
        long session's connections, each with a problem or two, are not kept for ever."""

    def admit(self, route: str, conn: int, problem: Hashable, what: str, t: float) -> bool:
        """Whether the line of ``problem`` (named ``what``) on connection ``conn`` at ``t`` is
        shown (else it is counted). A window over with lines not shown must have been taken
        with `ended` first."""
        key = (route, conn, problem)
        fold = self._folds.get(key)
        if fold is None or t - fold.started >= self.window:
            self._folds[key] = Fold(route, conn, what, t, shown=1)
            return True
        if fold.shown < self.shown:
            fold.shown += 1
            return True
        if not fold.folded:
            self._next_end = min(self._next_end, fold.started + self.window)
        fold.folded += 1
        fold.last = t
        return False

    def ended(self, t: float) -> list[Fold]:
        """The folds with lines not shown whose window is over at ``t``, oldest first; they
        are forgotten (a window over with every line shown is forgotten too)."""
        if t < self._next_end and t < self._next_sweep:
            return []
        self._next_sweep = t + self.window
        return self._take(lambda fold: t - fold.started >= self.window)

    def pending(self) -> list[Fold]:
        """Every fold with lines not shown (at the end of the session), oldest first."""
        return self._take(lambda fold: True)

    def _take(self, over: Callable[[Fold], bool]) -> list[Fold]:
        done: list[Fold] = []
        next_end = float("inf")
        for key, fold in list(self._folds.items()):
            if over(fold):
                del self._folds[key]
                if fold.folded:
                    done.append(fold)
            elif fold.folded:
                next_end = min(next_end, fold.started + self.window)
        self._next_end = next_end
        return sorted(done, key=lambda fold: fold.started)
