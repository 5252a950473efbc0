"""Which flows a body filter may have decided wrongly because it read them without their
numbers: a frame whose payload the TUI does not hold (released over the budget, or left in the
recording, `golem_proxy.tui.payloads`) is searched as the message its row kept, and where that
message had a long array of numbers elided (`golem_proxy.tui.skeleton`), a number in it is not
found. The status line says how many flows the filter could not decide so
(`filter_tree.undecided`), so that "0 of 300 flows" is not taken for "the number is in none of
them". Blobs are not counted: their base64 is nothing anyone searches."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Optional

from golem_core.profiles import Profile

from ..analysis.filter_tree import Filter, reads_bodies, undecided
from ..analysis.flows import Flow
from ..events import FrameSeen
from .payloads import released
from .skeleton import holds_elided_numbers

__all__ = ["SkimmedBodies", "skims"]


class SkimmedBodies:
    """The numbers of the flows kept whose passing the filter turned on numbers elided from a
    message it searched (`filter_tree.undecided`), as the filter last read each. A flow whose
    payload the budget releases after the filter read it whole is not counted until the
    filter reads it again (`note`, `recount`)."""

    def __init__(self) -> None:
        self.numbers: set[int] = set()
        self._reading: Optional[tuple[Filter, Callable[[str], Profile]]] = None
        """The filter, when it reads bodies, and each route's profile."""

    def recount(
        self, node: Optional[Filter], profile_for: Callable[[str], Profile], flows: Iterable[Flow]
    ) -> None:
        """A filter set anew (None: none), which reads every one of ``flows``."""
        self._reading = (node, profile_for) if node is not None and reads_bodies(node) else None
        self.numbers = set()
        for flow in flows:
            self.note(flow)

    def note(self, flow: Flow) -> None:
        """Count or stop counting ``flow`` as the filter is about to read it (it arrived or
        changed)."""
        reading = self._reading
        unread = frozenset() if reading is None else _skimmed_sides(flow)
        if reading is not None and unread:
            node, profile_for = reading
            if undecided(node, flow, profile_for(flow.route), unread):
                self.numbers.add(flow.number)
                return
        self.numbers.discard(flow.number)

    def forget(self, flows: Iterable[Flow]) -> None:
        """The flows let go from memory: no filter reads them any more."""
        self.numbers -= {flow.number for flow in flows}


def _skimmed_sides(flow: Flow) -> frozenset[str]:
    """The sides of ``flow`` whose search skips numbers elided from their message."""
    sides = (("request", flow.request), ("response", flow.response))
    return frozenset(side for side, frame in sides if _skimmed(frame))


def skims(flow: Flow) -> bool:
    """Whether a search of ``flow``'s bodies now skips numbers elided from its message."""
    return bool(_skimmed_sides(flow))


def _skimmed(frame: Optional[FrameSeen]) -> bool:
    return (
        frame is not None
        and bool(frame.elided)
        and released(frame) is not None
        and holds_elided_numbers(getattr(frame.message, "obj", None))
    )
